"""Deliveries that came through a relay: ``Receiver.accept`` runs the same verify -> store ->
forward steps as a POST, checks the timestamp against when the relay received it, and stores the
relay's URL and cursor in the delivery's own commit (never twice)."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import factories
import pytest
from aiohttp import web
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from walletpass_tui.config import Settings
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks.forward import Route
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import VERIFIED, Attempt, StoreError
from walletpass_tui.webhooks.reasons import Reason
from walletpass_tui.webhooks.relayed import RelayedRequest
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import SigningKey, sign

SECRET = "whsec_" + base64.b64encode(b"i" * 32).decode()
FORGER = "whsec_" + base64.b64encode(b"f" * 32).decode()
BODY = b'{"type": "pass.activated", "data": {"passId": "pass_1"}}'
RELAY = "http://127.0.0.1:9/channels/abc/events"


def relayed(
    msg_id: str,
    cursor: int,
    *,
    sent: datetime | None = None,
    secret: str = SECRET,
    body: bytes = BODY,
    relay_url: str = RELAY,
) -> RelayedRequest:
    """A delivery the relay received when ``sent`` (signed then too), from 203.0.113.7."""
    sent = sent or datetime.now(UTC)
    headers = {**sign(secret, msg_id, body, sent), "content-type": "application/json"}
    return RelayedRequest.from_relay(
        relay_url=relay_url,
        cursor=cursor,
        received_at_ms=int(sent.timestamp() * 1000),
        method="POST",
        path="/in/slug",
        headers=list(headers.items()),
        body=body,
        source="203.0.113.7",
    )


def runtime_for(home: Path, **setup: object) -> DeliveryRuntime:
    options = ReceiverOptions(
        host="127.0.0.1", port=0, max_body=4096, secrets=[SigningKey.from_secret(SECRET)]
    )
    return DeliveryRuntime(
        Settings(home=home, receiver_port=0),
        DeliverySetup(options=options, **setup),  # type: ignore[arg-type]
    )


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[DeliveryRuntime]:
    async with runtime_for(tmp_path / "home") as rt:
        yield rt


async def test_a_delivery_caught_up_hours_later_is_verified_and_keeps_its_origin(
    runtime: DeliveryRuntime,
) -> None:
    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    stored = await runtime.accept(relayed("msg_late", 7, sent=two_hours_ago))
    assert stored.verdict == VERIFIED, stored.detail
    assert stored.status == 200
    again = await runtime.store.attempt(stored.id)
    assert again is not None
    assert (again.relay_url, again.relay_cursor) == (RELAY, 7)
    assert again.remote_addr == "203.0.113.7"  # the address that posted to the relay
    assert again.received_at_ms == int(two_hours_ago.timestamp() * 1000)
    assert again.body == BODY and again.topic == "pass.activated"


async def test_the_timestamp_is_still_checked_against_when_the_relay_received_it(
    runtime: DeliveryRuntime,
) -> None:
    signed_at = datetime.now(UTC) - timedelta(hours=2)
    late = relayed("msg_replayed", 1, sent=signed_at)
    # The relay says it received it now: a two-hour-old signature is a replay, refused.
    request = RelayedRequest(**{**late.__dict__, "received_at": datetime.now(UTC)})
    stored = await runtime.accept(request)
    assert stored.reason == Reason.TIMESTAMP_TOO_OLD.value
    assert stored.verdict != VERIFIED


async def test_a_forgery_is_stored_rejected_and_never_forwarded(tmp_path: Path) -> None:
    received: list[bytes] = []

    async def target(request: web.Request) -> web.Response:
        received.append(await request.read())
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/hook", target)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}/hook"
    try:
        async with runtime_for(tmp_path / "home", routes=(Route(url),)) as rt:
            await rt.serve()
            forged = await rt.accept(relayed("msg_forged", 1, secret=FORGER))
            genuine = await rt.accept(relayed("msg_genuine", 2, body=BODY + b" "))
            for _ in range(500):
                if received:
                    break
                await asyncio.sleep(0.01)
    finally:
        await runner.cleanup()
    assert forged.reason == Reason.NO_MATCH.value and forged.status == 401
    assert genuine.verified
    assert received == [BODY + b" "]  # the raw bytes, and only the genuine one


async def test_a_relayed_delivery_keeps_the_forwarded_for_the_relay_recorded(
    runtime: DeliveryRuntime,
) -> None:
    """The relay saw the socket and the proxies before it; an X-Forwarded-For line inside the
    relayed headers is the sender's word, kept with the headers, not as the list."""
    sent = relayed("msg_xff", 4)
    request = RelayedRequest(
        **{
            **sent.__dict__,
            "headers": (*sent.headers, ("X-Forwarded-For", "192.0.2.66")),
            "forwarded_for": "198.51.100.7, 203.0.113.9",
        }
    )
    stored = await runtime.accept(request)
    again = await runtime.store.attempt(stored.id)
    assert again is not None and again.verified
    assert again.forwarded_for == "198.51.100.7, 203.0.113.9"
    assert again.header("x-forwarded-for") == "192.0.2.66"


async def test_a_rejected_relayed_delivery_is_labelled_from_its_body_as_a_local_one(
    runtime: DeliveryRuntime,
) -> None:
    forged = await runtime.accept(relayed("msg_forged_labels", 5, secret=FORGER))
    assert forged.reason == Reason.NO_MATCH.value
    assert (forged.topic, forged.pass_id) == ("pass.activated", "pass_1")
    gets = await runtime.accept(
        RelayedRequest(**{**relayed("msg_get", 6).__dict__, "method": "GET"})
    )
    assert gets.reason == Reason.METHOD_NOT_ALLOWED.value
    assert (gets.body, gets.topic, gets.pass_id) == (BODY, "pass.activated", "pass_1")


async def test_a_body_over_the_limit_is_refused_and_recorded(runtime: DeliveryRuntime) -> None:
    big = b'{"pad": "' + b"x" * 5000 + b'"}'
    stored = await runtime.accept(relayed("msg_big", 3, body=big))
    assert stored.reason == Reason.BODY_TOO_LARGE.value
    assert stored.body_size == len(big)
    assert await runtime.store.last_relay_cursor(RELAY) == 3  # refused, but handled: not re-fetched


async def test_the_last_cursor_is_per_relay_and_a_cursor_is_never_stored_twice(
    runtime: DeliveryRuntime,
) -> None:
    other = "https://relay.example.com/channels/zzz/events"
    assert await runtime.store.last_relay_cursor(RELAY) == 0
    await runtime.accept(relayed("msg_a", 4))
    await runtime.accept(relayed("msg_b", 9))
    await runtime.accept(relayed("msg_c", 2, relay_url=other))
    assert await runtime.store.last_relay_cursor(RELAY) == 9
    assert await runtime.store.last_relay_cursor(other) == 2
    with pytest.raises(StoreError):
        await runtime.accept(relayed("msg_dup", 9))
    rows = await runtime.store.message_attempts("msg_dup")
    assert rows == []
    # The store still works after the refused duplicate.
    ok = await runtime.accept(relayed("msg_d", 10))
    assert ok.verified and await runtime.store.last_relay_cursor(RELAY) == 10
    # Whether one cursor is stored is asked of that cursor, not read off the newest: a link
    # retrying cursor 5 after 9 committed must not take 5 for stored.
    assert await runtime.store.has_relay_cursor(RELAY, 9)
    assert not await runtime.store.has_relay_cursor(RELAY, 5)
    assert not await runtime.store.has_relay_cursor(other, 9)


SPELLINGS = (
    "http://localhost:9/channels/abc/events",
    "http://127.0.0.1:9/channels/abc/events/",
    "http://127.0.0.1:9//channels/abc/events?x=1",
    "https://relay.example.com:443/prefix/channels/abc/events",  # the balancer, behind a prefix
)


@pytest.mark.parametrize("spelling", SPELLINGS)
async def test_a_channel_is_one_whatever_way_its_url_is_spelt(
    runtime: DeliveryRuntime, spelling: str
) -> None:
    await runtime.accept(relayed("msg_a", 4))
    await runtime.store.advance_relay_mark(RELAY, 4)
    assert await runtime.store.last_relay_cursor(spelling) == 4
    assert await runtime.store.has_relay_cursor(spelling, 4)
    assert await runtime.store.start_relay_mark(spelling) == (4, 4)
    with pytest.raises(StoreError):  # the same delivery under another spelling: refused
        await runtime.accept(relayed("msg_a", 4, relay_url=spelling))
    assert len(await runtime.store.message_attempts("msg_a")) == 1
    stored = await runtime.accept(relayed("msg_b", 5, relay_url=spelling))
    assert stored.relay_url == spelling  # shown as it was followed
    assert await runtime.store.last_relay_cursor(RELAY) == 5


async def test_an_older_history_keyed_by_url_is_kept_by_channel(tmp_path: Path) -> None:
    """A history written before cursors were kept by channel, where the same channel was
    followed under two spellings (each delivery stored twice): the upgrade keeps both copies,
    resumes after the higher mark, and refuses a third copy."""
    import sqlite3

    home = tmp_path / "home"
    path = home / "deliveries.sqlite3"
    async with runtime_for(home) as rt:
        for cursor in (1, 2, 3):
            await rt.accept(relayed(f"msg_{cursor}", cursor))
    with sqlite3.connect(path, isolation_level=None) as db:
        factories.as_version_8(db)
        db.execute(
            "INSERT INTO attempts (webhook_id, attempt_no, received_at_ms, method, path, "
            "headers, body, body_size, verdict, reason, status, relay_url, relay_cursor) "
            "SELECT webhook_id, 2, received_at_ms, method, path, headers, body, body_size, "
            "verdict, reason, status, ?, relay_cursor FROM attempts WHERE relay_cursor <= 2",
            (SPELLINGS[0],),
        )
        db.execute("INSERT INTO relay_marks VALUES (?, 3), (?, 2)", (RELAY, SPELLINGS[0]))
    async with runtime_for(home) as rt:
        assert await rt.store.start_relay_mark(SPELLINGS[1]) == (3, 3)
        assert len(await rt.store.message_attempts("msg_1")) == 2  # both copies are kept
        with pytest.raises(StoreError):
            await rt.accept(relayed("msg_2", 2, relay_url=SPELLINGS[2]))
        assert len(await rt.store.message_attempts("msg_2")) == 2


async def test_relayed_deliveries_survive_a_reopen(tmp_path: Path) -> None:
    home = tmp_path / "home"
    async with runtime_for(home) as rt:
        await rt.accept(relayed("msg_1", 1))
    store = await Store.open(home / "deliveries.sqlite3")
    try:
        assert await store.last_relay_cursor(RELAY) == 1
        (row,) = await store.message_attempts("msg_1")
        assert row.relay_cursor == 1
    finally:
        await store.close()


header_text = st.text(min_size=0, max_size=40)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    method=st.sampled_from(["POST", "GET", "PUT", "post"]) | header_text,
    headers=st.lists(st.tuples(header_text, header_text), max_size=8),
    body=st.binary(max_size=6000),
    received_at_ms=st.integers(min_value=-(2**62), max_value=2**62),
    source=st.none() | header_text,
)
def test_any_relayed_input_is_stored_once_with_its_raw_body(
    tmp_path_factory: pytest.TempPathFactory,
    method: str,
    headers: list[tuple[str, str]],
    body: bytes,
    received_at_ms: int,
    source: str | None,
) -> None:
    home = tmp_path_factory.mktemp("prop")

    async def scenario() -> Attempt:
        request = RelayedRequest.from_relay(
            relay_url=RELAY,
            cursor=1,
            received_at_ms=received_at_ms,
            method=method,
            path="/in/x",
            headers=headers,
            body=body,
            source=source,
        )
        async with runtime_for(home) as rt:
            stored = await rt.accept(request)
            assert await rt.store.last_relay_cursor(RELAY) == 1
            again = await rt.store.attempt(stored.id)
            assert again is not None
            return again

    stored = asyncio.run(scenario())
    assert not stored.verified  # nothing here is signed with the secret
    if len(body) <= 4096:
        assert stored.body == body[: len(stored.body)]
        assert stored.body_size == len(body)


async def test_a_history_from_before_the_relay_is_upgraded_in_place(tmp_path: Path) -> None:
    import sqlite3

    from walletpass_tui.webhooks.store.tables import MIGRATIONS, digest, split_sql

    path = tmp_path / "deliveries.sqlite3"
    db = sqlite3.connect(path, isolation_level=None)
    db.create_function("wp_digest", 2, digest)
    for step in (1, 2, 3, 4):
        for statement in split_sql(MIGRATIONS[step]):
            db.execute(statement)
    db.execute("PRAGMA user_version = 4")
    db.execute(
        "INSERT INTO attempts (id, webhook_id, received_at_ms, method, path, headers, body, "
        "body_size, verdict, reason, status) VALUES (1, 'msg_old', 1, 'POST', '/webhooks', '[]', "
        "x'7b7d', 2, 'verified', 'verified', 200)"
    )
    db.close()
    store = await Store.open(path)
    try:
        old = await store.attempt(1)
        assert old is not None and old.body == b"{}"
        assert (old.relay_url, old.relay_cursor) == (None, None)
        assert await store.last_relay_cursor(RELAY) == 0
    finally:
        await store.close()
    db = sqlite3.connect(path)
    try:
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT MAX(relay_cursor) FROM attempts "
            "WHERE relay_channel = ? AND relay_cursor >= 0",
            ("abc",),
        ).fetchall()
    finally:
        db.close()
    assert any("attempts_by_relay" in str(row) for row in plan)  # not a scan of the history
