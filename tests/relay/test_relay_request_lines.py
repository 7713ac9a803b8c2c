"""``relay serve`` prints one line per request on its terminal (when, the method, the channel by
name, the status, milliseconds), never a token or a whole ingress slug; ``--quiet`` prints none."""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re

import aiohttp
import pytest
from relay_helpers import RelayProcess, add_channel, follow, post_all, signed, stop_task

from walletpass_tui.relay.server import request_lines
from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.request_lines import RequestLines, what_was_asked

LINE = re.compile(
    r"(?P<when>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)  (?P<method>\S+) +(?P<what>\S.*?) +"
    r"(?P<status>\d{3}) +(?P<ms>\d+\.\d) ms(?:  (?P<note>.+))?"
)


async def traffic(relay: RelayProcess, slug: str, token: str) -> None:
    """A delivery, a post to a slug that is no channel's, a stream opened, a wrong token and a
    health check."""
    async with aiohttp.ClientSession() as session:
        await post_all(session, ingress_url(relay.url, slug), 1)
        body, headers = signed()
        nowhere = f"{relay.url}/in/nochannelhereatall0000"
        async with session.post(nowhere, data=body, headers=headers) as r:
            assert r.status == 404
        wrong = {"Authorization": "Bearer wpr_not_the_token"}
        async with session.get(subscribe_url(relay.url, slug), headers=wrong) as r:
            assert r.status == 401
        async with session.get(f"{relay.url}/healthz") as r:
            assert r.status == 200
    _, got, task = await follow(subscribe_url(relay.url, slug), token)
    try:
        await got.wait_for(1)
    finally:
        await stop_task(task)


@pytest.mark.slow
async def test_serve_prints_a_line_per_request_without_tokens_or_slugs(
    relay_process: RelayProcess,
) -> None:
    issued = add_channel(relay_process, "team")
    slug = issued.channel.slug
    relay_process.start(lines=True)
    await traffic(relay_process, slug, issued.token)
    await asyncio.sleep(0.3)  # the last lines are written
    assert await asyncio.to_thread(relay_process.terminate) == 0
    assert relay_process.proc is not None and relay_process.proc.stdout is not None
    out = relay_process.proc.stdout.read()
    assert slug not in out and issued.token not in out and "wpr_" not in out
    parsed = [m.groupdict() for line in out.splitlines() if (m := LINE.fullmatch(line))]
    seen = [(p["method"], p["what"], p["status"], p["note"]) for p in parsed]
    assert seen == [
        ("POST", "in/team", "200", None),
        ("POST", "in/? (slug noch…)", "404", None),
        ("GET", "channels/team/events", "401", None),
        ("GET", "/healthz", "200", None),
        ("GET", "channels/team/events", "200", "stream opened"),
    ]
    assert all(float(p["ms"]) >= 0 for p in parsed)


@pytest.mark.slow
async def test_a_real_slug_in_a_path_that_is_not_the_route_is_never_printed_whole(
    relay_process: RelayProcess,
) -> None:
    """A doubled slash in a pasted URL, a proxy that keeps its path prefix, another case, a
    ``..``: the request is answered, and its line shows the slug by its first characters."""
    issued = add_channel(relay_process, "team")
    slug = issued.channel.slug
    relay_process.start(lines=True)
    paths = [f"//in/{slug}", f"/relay/in/{slug}", f"/IN/{slug}", f"/x/{slug}", f"/a/../in/{slug}"]
    for path in paths:  # written as bytes: an HTTP client would tidy the path first
        reader, writer = await asyncio.open_connection("127.0.0.1", relay_process.port)
        try:
            writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            async with asyncio.timeout(30):
                assert (await reader.read()).startswith(b"HTTP/1.1 ")
        finally:
            writer.close()
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{relay_process.url}/healthz") as r,  # the last line
    ):
        assert r.status == 200
    assert await asyncio.to_thread(relay_process.terminate) == 0  # what waits is written
    assert relay_process.proc is not None and relay_process.proc.stdout is not None
    out = relay_process.proc.stdout.read()
    shown = [m["what"] for line in out.splitlines() if (m := LINE.fullmatch(line))]
    assert len(shown) == len(paths) + 1 and slug not in out
    assert all(f"{slug[:4]}…" in what for what in shown[:-1]), shown


@pytest.mark.slow
async def test_quiet_prints_no_line_per_request(relay_process: RelayProcess) -> None:
    issued = add_channel(relay_process, "team")
    relay_process.start()  # --quiet
    await traffic(relay_process, issued.channel.slug, issued.token)
    assert await asyncio.to_thread(relay_process.terminate) == 0
    assert relay_process.proc is not None and relay_process.proc.stdout is not None
    out = relay_process.proc.stdout.read()
    assert [line for line in out.splitlines() if LINE.fullmatch(line)] == []
    assert out.rstrip().endswith("Relay stopped.")


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        ("/in/AbCdEfGhIjKlMnOpQrStUv", "in/team"),
        ("/channels/AbCdEfGhIjKlMnOpQrStUv/events", "channels/team/events"),
        ("/in/ZZZZzzzzzzzzzzzzzzzzzz", "in/? (slug ZZZZ…)"),
        ("/in/", "in/?"),
        ("/healthz", "/healthz"),
        ("/wpr_" + "t" * 43, "/wpr_…"),  # a token pasted into a path
        # A real slug in a path that is not exactly a route: never whole.
        ("//in/AbCdEfGhIjKlMnOpQrStUv", "//in/AbCd…"),
        ("/relay/in/AbCdEfGhIjKlMnOpQrStUv", "/relay/in/AbCd…"),  # a proxy kept its prefix
        ("/IN/AbCdEfGhIjKlMnOpQrStUv", "/IN/AbCd…"),
        ("/x/AbCdEfGhIjKlMnOpQrStUv", "/x/AbCd…"),
        ("/a/../in/AbCdEfGhIjKlMnOpQrStUv", "/a/../in/AbCd…"),
        ("/xAbCdEfGhIjKlMnOpQrStUv.json", "/xAbC….json"),
        ("/channels/AbCdEfGhIjKlMnOpQrStUv/AbCdEfGhIjKlMnOpQrStUv", "channels/team/AbCd…"),
        ("/in/team", "in/? (slug team…)"),
        ("/\x1b[2J\r\nfake", "/\\x1b[2J\\r\\nfake"),
    ],
)
def test_what_a_line_shows_of_the_path(path: str, shown: str) -> None:
    names = {"AbCdEfGhIjKlMnOpQrStUv": "team"}
    assert what_was_asked(path, names.get) == shown


def test_a_terminal_that_stops_reading_holds_up_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nobody reads the relay's output (a paused pager): adding lines never waits for it; what
    did not fit is counted and said once the terminal reads again."""
    monkeypatch.setattr(request_lines, "MAX_WAITING", 10)
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, "w") as out, os.fdopen(read_fd, "rb") as terminal:
        lines = RequestLines(out)
        for _ in range(20_000):  # about 1.4 MB: far past what the pipe holds
            lines.add("POST", "in/team", 200, 1.0)
        # Every add returned while the writer was stuck on the full pipe. Now the terminal
        # reads, and what is still waiting is written.
        reader = concurrent.futures.ThreadPoolExecutor(1)
        shown = reader.submit(terminal.read)
        lines.close()
        out.close()
        text = shown.result(timeout=60).decode()  # a "did not hang" guard
        reader.shutdown()
    printed = text.count("in/team")
    dropped = re.findall(r"\(([\d,]+) request lines not printed: the terminal fell behind\)", text)
    assert dropped and printed + sum(int(n.replace(",", "")) for n in dropped) == 20_000
