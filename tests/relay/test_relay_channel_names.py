"""A channel's name and secret as the relay makes, stores and shows them, on both backends.

A name is one printable line, checked where a channel is made; a name read from the database
(written there by hand, or by another program) is escaped wherever it is shown. A stored secret
that is not a signing secret is said once, and its posts are answered 503 with a reason.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from fake_relay import SSE_HEAD, Connection, FakeRelay, connected, delivery
from relay_helpers import RelayData, add_channel, query, signed, stop_task, urls

from walletpass_tui.cli import main
from walletpass_tui.relay.link.follow import Handed, RelayFollower
from walletpass_tui.relay.server.channels import ChannelError
from walletpass_tui.relay.server.serve import RelayServer
from walletpass_tui.webhooks.verify import SecretError


def run(capsys: pytest.CaptureFixture[str], data: RelayData, *argv: str) -> tuple[int, str, str]:
    on = ["--database", data.database] if data.database else []
    code = main(["--home", str(data.home), *argv, *on])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("name", ["team\n", "team\r", "te\nam", "\nteam", "team\x1b[2J", "tëam"])
def test_a_name_that_is_not_one_printable_line_is_refused_where_a_channel_is_made(
    relay_data: RelayData, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    code, out, err = run(capsys, relay_data, "relay", "channel", "add", name)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "is not a channel name" in err
    assert "\x1b" not in err and "\r" not in err
    with pytest.raises(ChannelError):  # the storage checks it too, for any caller
        add_channel(relay_data, name)
    code, out, _ = run(capsys, relay_data, "relay", "channel", "list", "--json")
    assert code == 0 and out.strip() == "[]"


def test_names_read_from_the_database_are_escaped_where_they_are_shown(
    relay_data: RelayData, capsys: pytest.CaptureFixture[str]
) -> None:
    add_channel(relay_data, "team")
    # Written to the database by hand (or by another program): a line break and a terminal
    # escape in the name.
    query(relay_data, "UPDATE channels SET name = 'team\n\x1b[31mfake row'")
    code, out, _ = run(capsys, relay_data, "relay", "channel", "list")
    assert code == 0
    assert "\x1b" not in out
    assert out.count("\n") == 2  # the header and one row
    assert "team\\n\\x1b[31mfake row" in out
    code, out, _ = run(capsys, relay_data, "relay", "channel", "token", "team\n\x1b[31mfake row")
    assert code == 0 and "\x1b" not in out and "Channel team\\n\\x1b[31mfake row has" in out


def test_a_signing_secret_that_is_not_one_is_refused_where_a_channel_is_made(
    relay_data: RelayData,
) -> None:
    with pytest.raises(SecretError):
        add_channel(relay_data, "team", secret="whsec_not base64!")


async def test_a_stored_secret_that_is_not_a_signing_secret_is_said_once_and_answered_503(
    relay: RelayServer,
    http: aiohttp.ClientSession,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    issued = add_channel(relay, "team", secret="whsec_" + "A" * 32)
    ingress, _ = urls(relay, issued)
    query(relay, "UPDATE channels SET secret = 'sk_live_not_a_signing_secret'")
    caplog.set_level(logging.WARNING, logger="walletpass_tui")

    async def post() -> tuple[int, str, str | None]:
        body, headers = signed()
        async with http.post(ingress, data=body, headers=headers) as r:
            return r.status, await r.text(), r.headers.get("Retry-After")

    async with asyncio.timeout(30):  # the relay reads its channels again within a second
        while True:
            answer = await post()
            if answer[0] == 503:
                break
            await asyncio.sleep(0.05)
    answers = [answer] + [await post() for _ in range(5)]
    for status, text, retry_after in answers:
        assert status == 503 and retry_after  # the service retries; nothing is lost
        assert "signing secret cannot be used" in text
    said = [r for r in caplog.records if "cannot verify what is posted" in r.getMessage()]
    assert len(said) == 1
    assert "sk_live_not_a_signing_secret" not in caplog.text
    code, out, _ = run(capsys, RelayData(relay.options.home, relay.options.database), *LIST)
    assert code == 0 and "SECRET UNUSABLE" in out


LIST = ("relay", "channel", "list")


async def test_follow_hands_over_a_delivery_whose_channel_name_is_not_a_header_value(
    tmp_path: Path, start_server: Any
) -> None:
    """A relay's channel name goes into the X-Walletpass-Relay header ``relay follow`` sends:
    escaped, it can neither add a header nor stop the follower."""
    target = await start_server()
    target.answer("POST", "/webhooks", status=200)

    async def stream(conn: Connection) -> None:
        await conn.write(
            SSE_HEAD + connected(2) + delivery(1, channel="x\r\nX-Evil: 1") + delivery(2)
        )
        await conn.hold()

    handed: list[Handed] = []
    both = asyncio.Event()

    def on_handed(h: Handed) -> None:
        handed.append(h)
        if len(handed) == 2:
            both.set()

    async with FakeRelay(stream) as relay:
        follower = RelayFollower(
            relay.url,
            "wpr_token",
            f"{target.url}/webhooks",
            tmp_path / "x.cursor",
            on_handed=on_handed,
            backoff_initial_s=0.05,
        )
        task = asyncio.create_task(follower.run())
        try:
            async with asyncio.timeout(30):
                await both.wait()
        finally:
            await stop_task(task)
    assert [h.status for h in handed] == [200, 200]
    first = target.requests_to("POST", "/webhooks")[0]
    assert first.headers["X-Walletpass-Relay"] == "channel=x\\r\\nX-Evil: 1; cursor=1"
    assert "X-Evil" not in first.headers
