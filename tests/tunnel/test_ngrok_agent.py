"""Tunnel discovery: picking the public URL from ngrok's /api/tunnels, and asking a local agent."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from walletpass_tui.tunnel.ngrok_agent import discover_ngrok, pick_public_url

# Shaped like ngrok v3's agent answer (trimmed).
SAMPLE = {
    "tunnels": [
        {
            "name": "other",
            "public_url": "https://other.ngrok-free.app",
            "proto": "https",
            "config": {"addr": "http://localhost:3000", "inspect": True},
        },
        {
            "name": "command_line (http)",
            "public_url": "http://abcd-1-2-3-4.ngrok-free.app",
            "proto": "http",
            "config": {"addr": "http://localhost:8787", "inspect": True},
        },
        {
            "name": "command_line",
            "public_url": "https://abcd-1-2-3-4.ngrok-free.app/",
            "proto": "https",
            "config": {"addr": "http://localhost:8787", "inspect": True},
        },
    ],
    "uri": "/api/tunnels",
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_pick_prefers_the_https_tunnel_reaching_the_port() -> None:
    assert pick_public_url(SAMPLE, 8787) == "https://abcd-1-2-3-4.ngrok-free.app"
    assert pick_public_url(SAMPLE, 3000) == "https://other.ngrok-free.app"


def test_pick_without_a_port_takes_the_first_https_tunnel() -> None:
    assert pick_public_url(SAMPLE) == "https://other.ngrok-free.app"


def test_pick_refuses_a_tunnel_to_another_port() -> None:
    assert pick_public_url(SAMPLE, 9999) is None


def test_pick_accepts_bare_and_host_port_addrs() -> None:
    for addr in ("8787", "localhost:8787", "127.0.0.1:8787", "http://[::1]:8787/"):
        payload = {"tunnels": [{"public_url": "https://x.ngrok.app", "config": {"addr": addr}}]}
        assert pick_public_url(payload, 8787) == "https://x.ngrok.app", addr
    payload = {"tunnels": [{"public_url": "https://x.ngrok.app", "config": {"addr": "87870"}}]}
    assert pick_public_url(payload, 8787) is None


def test_pick_ignores_http_only_and_malformed_answers() -> None:
    http_only = {"tunnels": [{"public_url": "http://x.ngrok.app", "config": {"addr": "8787"}}]}
    assert pick_public_url(http_only, 8787) is None
    for junk in (None, [], "text", {}, {"tunnels": None}, {"tunnels": [1, "x", {"config": 3}]}):
        assert pick_public_url(junk, 8787) is None
    assert pick_public_url({"tunnels": [{"public_url": 5}, {"public_url": None}]}) is None


async def test_discover_asks_the_local_agent(start_server: Any) -> None:
    agent = await start_server()
    agent.answer("GET", "/api/tunnels", json=SAMPLE)
    assert await discover_ngrok(8787, api=agent.url) == "https://abcd-1-2-3-4.ngrok-free.app"
    assert await discover_ngrok(3000, api=agent.url + "/") == "https://other.ngrok-free.app"
    assert await discover_ngrok(9999, api=agent.url) is None
    assert [r.path for r in agent.requests] == ["/api/tunnels"] * 3


async def test_discover_returns_none_on_errors_and_junk(start_server: Any) -> None:
    agent = await start_server()
    agent.answer("GET", "/api/tunnels", status=502, json={"tunnels": SAMPLE["tunnels"]})
    assert await discover_ngrok(8787, api=agent.url) is None
    agent.answer("GET", "/api/tunnels", status=200, body="<html>not json</html>")
    assert await discover_ngrok(8787, api=agent.url) is None


async def test_discover_returns_none_when_nothing_listens() -> None:
    assert await discover_ngrok(8787, api=f"http://127.0.0.1:{free_port()}") is None


async def test_discover_gives_up_on_a_silent_agent(start_server: Any) -> None:
    agent = await start_server()
    agent.answer("GET", "/api/tunnels", json=SAMPLE, delay=2.0)
    # Had it waited for the answer, it would have found the URL: None means it gave up.
    assert await discover_ngrok(8787, api=agent.url, timeout_s=0.2) is None
    assert len(agent.requests) == 1


@pytest.mark.parametrize(
    "hostile",
    [
        "https://evil.example\x1b]8;;https://x\x07/",
        "https://x.ngrok.app\u202e/",
        "https://user:pw@x.ngrok.app",
        "https://127.0.0.1",
        "https://[::1]",
        "https://x.ngrok.app:8443",
        "https://x.ngrok.app/path?q=1",
        "https://x.ngrok.app/#frag",
        "https://localhost",
        "https://x.ngrok.app" + "a" * 400,
        "javascript://x.ngrok.app",
    ],
)
def test_the_agent_answer_is_untrusted(hostile: str) -> None:
    payload = {"tunnels": [{"public_url": hostile, "config": {"addr": "8787"}}]}
    assert pick_public_url(payload, 8787) is None
    assert pick_public_url(payload) is None


async def test_a_huge_agent_answer_is_not_read_to_the_end(start_server: Any) -> None:
    agent = await start_server()
    filler = [{"public_url": "https://x.ngrok.app", "config": {"addr": "1"}}] * 20000
    agent.answer("GET", "/api/tunnels", json={"tunnels": [*filler, *SAMPLE["tunnels"]]})
    assert await discover_ngrok(8787, api=agent.url) is None
