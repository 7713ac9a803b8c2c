"""The cloudflared provider against a fake ``cloudflared`` on PATH that prints what the real one
prints and forwards a port: the URL read from its output, requests reaching the local server
through it, hostile output refused or bounded, and nothing left running after close()."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from tunnel_helpers import FakeCloudflared, install_fake

from walletpass_tui.tunnel import cloudflared as cloudflared_module
from walletpass_tui.tunnel import output as output_module
from walletpass_tui.tunnel.cloudflared import Cloudflared, CloudflaredOptions
from walletpass_tui.tunnel.provider import TunnelFailed, TunnelUnavailable

DEADLINE_S = 30.0  # "did not hang" guard


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeCloudflared:
    return install_fake(tmp_path, monkeypatch)


async def gone(fake: FakeCloudflared) -> bool:
    for _ in range(300):
        if not fake.running():
            return True
        await asyncio.sleep(0.02)
    return False


async def test_a_quick_tunnel_gives_its_url_and_forwards(
    fake: FakeCloudflared, start_server: Any
) -> None:
    app = await start_server()
    app.answer("POST", "/webhooks", status=200, body="stored")
    tunnel = await asyncio.wait_for(Cloudflared().open(app.url), DEADLINE_S)
    try:
        [(pid, port, host)] = fake.starts()
        assert tunnel.public_url == f"https://{host}"
        assert tunnel.pid == pid
        # The "public side": what Cloudflare's edge would send reaches the local server.
        async with httpx.AsyncClient(trust_env=False, timeout=DEADLINE_S) as client:
            answer = await client.post(f"http://127.0.0.1:{port}/webhooks", content=b"{}")
        assert (answer.status_code, answer.text) == (200, "stored")
        [request] = app.requests_to("POST", "/webhooks")
        assert request.body == b"{}"
        assert request.headers["X-Forwarded-For"] == "203.0.113.7"
    finally:
        await tunnel.close()
    assert await gone(fake)


async def test_the_program_is_asked_for_a_quick_tunnel_to_the_local_address(
    fake: FakeCloudflared,
) -> None:
    provider = Cloudflared()
    assert provider.argv("cloudflared", "http://127.0.0.1:8787") == [
        "cloudflared",
        "tunnel",
        "--no-autoupdate",
        "--url",
        "http://127.0.0.1:8787",
    ]
    named = Cloudflared(CloudflaredOptions(name="hooks", url="https://hooks.example.com"))
    assert named.argv("cloudflared", "http://127.0.0.1:8787")[-4:] == [
        "run",
        "--url",
        "http://127.0.0.1:8787",
        "hooks",
    ]


async def test_a_named_tunnel_is_up_once_a_connection_is_registered(
    fake: FakeCloudflared, start_server: Any
) -> None:
    app = await start_server()
    options = CloudflaredOptions(name="hooks", url="https://hooks.example.com")
    tunnel = await asyncio.wait_for(Cloudflared(options).open(app.url), DEADLINE_S)
    try:
        assert tunnel.public_url == "https://hooks.example.com"
    finally:
        await tunnel.close()
    assert await gone(fake)


async def test_a_tunnel_that_dies_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_server: Any
) -> None:
    fake = install_fake(tmp_path, monkeypatch, "flaky")
    app = await start_server()
    tunnel = await asyncio.wait_for(Cloudflared().open(app.url), DEADLINE_S)
    why = await asyncio.wait_for(tunnel.closed(), DEADLINE_S)
    assert why.startswith("cloudflared exited (status 1: ")
    assert "Connection terminated" in why
    await tunnel.close()
    assert await gone(fake)


async def test_a_missing_program_is_said_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TunnelUnavailable) as caught:
        await Cloudflared().open("http://127.0.0.1:8787")
    message = str(caught.value)
    assert "cloudflared program is not installed" in message
    assert "--tunnel ngrok" in message


async def test_a_program_that_cannot_be_run_is_unavailable(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    program = tmp_path / "cloudflared"
    program.write_text("#!/nonexistent/interpreter\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TunnelUnavailable, match="cannot be started"):
        await Cloudflared().open("http://127.0.0.1:8787")


@pytest.mark.parametrize(
    ("mode", "shown"),
    [
        ("http-url", "(http://oklahoma"),
        ("path-url", ".trycloudflare.com/webhooks)"),
        ("user-url", "(https://admin@oklahoma"),
    ],
)
async def test_a_url_that_is_not_a_plain_https_host_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, shown: str
) -> None:
    fake = install_fake(tmp_path, monkeypatch, mode)
    with pytest.raises(TunnelUnavailable) as caught:
        await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    assert "not a plain https:// host name" in str(caught.value)
    assert shown in str(caught.value)
    assert await gone(fake)


async def test_a_program_that_exits_at_once_is_a_failed_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_fake(tmp_path, monkeypatch, "exit")
    with pytest.raises(TunnelFailed) as caught:
        await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    message = str(caught.value)
    assert message.startswith("cloudflared exited (status 1) before giving a tunnel URL: ")
    assert "failed to request quick Tunnel" in message


async def test_endless_output_without_a_url_is_cut_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch, "endless")
    with pytest.raises(TunnelUnavailable, match=r"printed more than 256 KiB without a tunnel URL"):
        await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    assert await gone(fake)


@pytest.mark.slow
async def test_a_silent_program_is_given_up_after_the_start_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch, "silent")
    options = CloudflaredOptions(start_timeout_s=1.0)
    with pytest.raises(
        TunnelFailed, match=r"gave no tunnel URL within 1 s \(its last line: no output\)"
    ):
        await asyncio.wait_for(Cloudflared(options).open("http://127.0.0.1:9"), DEADLINE_S)
    assert await gone(fake)


async def test_endless_output_once_up_is_drained_at_a_bounded_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch, "endless-up")
    monkeypatch.setattr(output_module, "DRAIN_RATE", 64 * 1024)
    tunnel = await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    try:
        await asyncio.sleep(1.0)
        first = tunnel.lines.total
        await asyncio.sleep(1.0)
        # Counted, not timed: at 64 KiB a second, two seconds read far less than the program
        # would print unthrottled (megabytes); the bound is generous against a busy machine.
        assert tunnel.lines.total < 1024 * 1024
        assert tunnel.lines.total >= first
        assert len(tunnel.lines.tail) <= 3
    finally:
        await tunnel.close()
    assert await gone(fake)


@pytest.mark.slow
async def test_a_program_deaf_to_sigterm_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = install_fake(tmp_path, monkeypatch, "stubborn")
    tunnel = await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    assert fake.running() == [tunnel.pid]
    await tunnel.close()
    assert tunnel.proc.returncode == -9
    assert await gone(fake)


async def test_the_program_runs_in_a_process_group_of_its_own(
    fake: FakeCloudflared,
) -> None:
    tunnel = await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    try:
        # The terminal's Ctrl-C goes to the foreground group: not to the tunnel, which this
        # process stops itself, in order.
        assert os.getpgid(tunnel.pid) == tunnel.pid != os.getpgid(0)
    finally:
        await tunnel.close()


async def test_one_endless_line_counts_toward_the_output_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10 MiB on one line that never ends: stopped once 256 KiB are read, not tried again, long
    before the start timeout (45 s, more than this test's deadline)."""
    fake = install_fake(tmp_path, monkeypatch, "long-line")
    with pytest.raises(TunnelUnavailable, match=r"printed more than 256 KiB without a tunnel URL"):
        await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    assert await gone(fake)


async def test_a_program_that_hands_off_to_a_child_is_down_and_the_child_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program gives its URL, then exits while a child it started keeps its output open (a
    wrapper that backgrounds the real program): the tunnel counts as down at its exit, and
    closing it stops the child too."""
    fake = install_fake(tmp_path, monkeypatch, "hands-off")
    tunnel = await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    try:
        why = await asyncio.wait_for(tunnel.closed(), DEADLINE_S)
        assert why.startswith("cloudflared exited (status 0: ")
        assert "the tunnel runs in the background now" in why
        assert fake.in_group(tunnel.pid)  # its child: left until the tunnel is closed
    finally:
        await tunnel.close()
    assert await gone(fake)


async def test_stopping_the_watch_while_a_handed_off_tunnel_is_read_for_its_last_words(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the program has exited and its child still holds the output open: the wait
    for its last words gives way to the stop (the receiver stops, the tunnel is not started
    again), however long that wait would be."""
    monkeypatch.setattr(cloudflared_module, "PIPE_CLOSE_S", 3600.0)
    fake = install_fake(tmp_path, monkeypatch, "hands-off")
    tunnel = await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    try:
        watching = asyncio.create_task(tunnel.closed())
        for _ in range(int(DEADLINE_S / 0.05)):
            if tunnel.proc.returncode is not None:
                break
            await asyncio.sleep(0.05)
        assert tunnel.proc.returncode == 0  # the program is gone, its child is not
        await asyncio.sleep(1)  # this loop's turns: closed() goes on to wait for the pipe
        watching.cancel()
        await asyncio.wait({watching}, timeout=DEADLINE_S)
        assert watching.cancelled()
    finally:
        await tunnel.close()
    assert await gone(fake)


async def test_a_program_gone_before_its_url_is_a_failed_try_though_its_output_stays_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its exit is seen at once, not at the start timeout (45 s, more than this test's deadline)
    that the open pipe would otherwise run into; the child holding it is stopped."""
    fake = install_fake(tmp_path, monkeypatch, "gone-quietly")
    with pytest.raises(TunnelFailed) as caught:
        await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    message = str(caught.value)
    assert message.startswith("cloudflared exited (status 1) before giving a tunnel URL: ")
    assert "the real program runs in the background now" in message
    assert await gone(fake)


@pytest.mark.slow
async def test_a_process_of_its_group_deaf_to_sigterm_is_killed_after_the_program_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program stops at the first SIGTERM; a child in its group that ignores SIGTERM is
    still sent the second SIGTERM and then SIGKILL."""
    fake = install_fake(tmp_path, monkeypatch, "group-deaf")
    tunnel = await asyncio.wait_for(Cloudflared().open("http://127.0.0.1:9"), DEADLINE_S)
    [child] = [pid for pid in fake.in_group(tunnel.pid) if pid != tunnel.pid]
    await tunnel.close()
    assert tunnel.proc.returncode == -15  # the program itself stopped at the first SIGTERM
    assert await gone(fake)
    assert child not in fake.running()
