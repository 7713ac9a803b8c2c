"""A relayed delivery's timestamp is checked against the time the relay says it received it, so
that time must be credible: not going back along the cursor beyond the slack, not before the
channel was created, not ahead of this machine's clock beyond the tolerance. A genuine delivery
presented with an old received time is stored as rejected, with the reason."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
from fake_relay import FakeRelay, channel_info, delivery, not_found, replaying
from link_helpers import laptop, link_for, signed_at, stored_until
from relay_helpers import add_channel, urls

from walletpass_tui.relay.link.channel_info import fetch_channel
from walletpass_tui.relay.link.received_times import RECEIVED_SLACK_MS, ReceivedTimes
from walletpass_tui.relay.server.serve import RelayServer
from walletpass_tui.webhooks.models import Attempt


def now() -> datetime:
    return datetime.now(UTC)


def genuine(cursor: int, when: datetime, msg_id: str | None = None) -> bytes:
    """A delivery the service signed at ``when``, which the relay says it received then."""
    body, headers = signed_at(when, msg_id)
    return delivery(cursor, body=body, headers=headers, received_at_ms=int(when.timestamp() * 1000))


async def follow_fake(
    home: Path, events: dict[int, bytes], count: int, info: object = not_found
) -> tuple[list[Attempt], FakeRelay]:
    relay = FakeRelay(replaying(events), info=info)  # type: ignore[arg-type]
    async with relay, laptop(home, link_for(relay.url, "wpr_token")) as runtime:
        await runtime.serve()
        return await stored_until(runtime, count), relay


async def test_a_day_old_genuine_delivery_replayed_with_its_old_received_time_is_rejected(
    tmp_path: Path,
) -> None:
    start = now()
    day_old = start - timedelta(days=1)
    events = {
        1: genuine(1, start),
        2: genuine(2, start - timedelta(minutes=4)),  # within the slack: an honest reordering
        3: genuine(3, day_old, "msg_replayed"),
        4: genuine(4, start + timedelta(hours=1)),  # signed ahead too: only the clock refuses it
        5: genuine(5, start),
    }
    stored, _ = await follow_fake(tmp_path / "laptop", events, 5)
    verdicts = [(a.relay_cursor, a.verdict, a.reason) for a in stored]
    assert verdicts == [
        (1, "verified", "verified"),
        (2, "verified", "verified"),
        (3, "rejected", "relay time not credible"),
        (4, "rejected", "relay time not credible"),
        (5, "verified", "verified"),
    ]
    newest = start.isoformat(timespec="seconds").replace("+00:00", "Z")
    assert stored[2].detail == (
        f"the relay says it received it at "
        f"{day_old.isoformat(timespec='seconds').replace('+00:00', 'Z')}, 24 h before a delivery "
        f"it sent earlier ({newest}); received times may go back at most 5 min along the cursor"
    )
    assert stored[2].webhook_id == "msg_replayed" and stored[2].body  # kept to look at
    assert re.search(
        r", \d+ min ahead of this machine's clock \(the tolerance is 5 min\)$", stored[3].detail
    )
    # Kept under this machine's time, not the one refused (the history is ordered and pruned by
    # it); the claim is in the detail.
    claimed = int((start + timedelta(hours=1)).timestamp() * 1000)
    assert stored[3].received_at_ms < claimed - 30 * 60_000


async def test_a_received_time_before_the_channel_was_created_is_rejected(tmp_path: Path) -> None:
    start = now()
    created = start - timedelta(hours=1)
    info = channel_info(int(created.timestamp() * 1000))
    events = {1: genuine(1, start - timedelta(hours=2)), 2: genuine(2, start)}
    stored, relay = await follow_fake(tmp_path / "laptop", events, 2, info)
    assert relay.info_requests == 1
    first, second = stored
    assert first.reason == "relay time not credible"
    assert "60 min before the channel was created" in first.detail
    assert second.verified


async def test_a_relay_that_does_not_say_when_the_channel_was_created_is_followed(
    tmp_path: Path,
) -> None:
    """An older relay: its channel answer has no created_at_ms (or there is none: 404)."""
    for info in (channel_info(None), not_found):
        events = {1: genuine(1, now() - timedelta(days=3))}  # nothing newer seen yet: believed
        stored, relay = await follow_fake(tmp_path / info.__name__, events, 1, info)
        assert stored[0].verified and relay.info_requests == 1


async def test_after_a_restart_the_newest_stored_received_time_still_bounds_the_next(
    tmp_path: Path,
) -> None:
    start = now()
    home = tmp_path / "laptop"
    events = {1: genuine(1, start)}
    async with FakeRelay(replaying(events)) as relay:
        async with laptop(home, link_for(relay.url, "wpr_token")) as runtime:
            await runtime.serve()
            assert (await stored_until(runtime, 1))[0].verified
        events[2] = genuine(2, start - timedelta(hours=6))  # while the laptop was off
        async with laptop(home, link_for(relay.url, "wpr_token")) as runtime:
            await runtime.serve()
            stored = await stored_until(runtime, 2)
    assert [c.last_event_id for c in relay.connections] == ["0", "1"]
    assert stored[1].relay_cursor == 2 and stored[1].reason == "relay time not credible"


async def test_the_relay_answers_when_a_channel_was_created(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "team")
    _, sub_url = urls(relay, issued)
    info = await fetch_channel(sub_url, issued.token)
    assert info.created_at_ms == issued.channel.created_at_ms
    assert abs(info.created_at_ms - now().timestamp() * 1000) < 3600_000


def test_the_bounds_hold_to_the_millisecond() -> None:
    clock = 1_800_000_000_000.0
    times = ReceivedTimes(
        tolerance_ms=300_000,
        newest_ms=1_799_999_000_000,
        created_ms=1_700_000_000_000,
        clock=lambda: clock,
    )
    slack = RECEIVED_SLACK_MS
    assert times.problem(1_799_999_000_000 - slack) is None
    assert "before a delivery it sent earlier" in (
        times.problem(1_799_999_000_000 - slack - 1) or ""
    )
    assert times.problem(int(clock) + 300_000) is None
    assert "ahead of this machine's clock" in (times.problem(int(clock) + 300_001) or "")
    times.newest_ms = None
    assert times.problem(1_700_000_000_000 - slack) is None
    assert "before the channel was created" in (times.problem(1_700_000_000_000 - slack - 1) or "")
    times.accepted(1_750_000_000_000)
    times.accepted(1_740_000_000_000)  # an older one accepted within the slack: the newest stays
    assert times.newest_ms == 1_750_000_000_000
