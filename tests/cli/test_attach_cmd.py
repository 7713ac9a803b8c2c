"""``attach``, and the dashboard that attaches instead of failing to bind: nothing running, a dead
receiver's state, a second receiver refused, the flags an attached dashboard does not use."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from process_helpers import DEADLINE_S, Proc, post, start_listen

from walletpass_tui.cli import main
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.attached import AttachedRuntime
from walletpass_tui.ui.app import WalletPassApp

BODY = b'{"type": "pass.activated", "data": {"passId": "pass_1"}}'


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> list[WalletPassApp]:
    """Every dashboard that would have been shown (none is run; the test process keeps its
    scheduling priority: tests/cli/test_give_way.py checks a real one's)."""
    apps: list[WalletPassApp] = []

    async def run_async(self: WalletPassApp, **kwargs: Any) -> None:
        apps.append(self)

    monkeypatch.setattr(WalletPassApp, "run_async", run_async)
    return apps


@pytest.fixture
def procs() -> Any:
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.kill()


def test_attach_with_nothing_running_says_so_in_one_line_and_how_to_start_one(
    clean_env: Path, shown: list[WalletPassApp], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["attach"])
    err = capsys.readouterr().err
    assert code == 1 and not shown
    assert err.count("\n") == 1
    assert f"No receiver runs on {clean_env}." in err
    assert f"`walletpass-tui listen --home {clean_env}`" in err
    assert not clean_env.exists()  # looking created nothing


def test_attach_names_a_demo_running_on_the_home(
    clean_env: Path, shown: list[WalletPassApp], capsys: pytest.CaptureFixture[str]
) -> None:
    demo = instance.claim(clean_env / "demo")  # as a running demo holds its data's home
    demo.publish(instance.InstanceRecord(pid=os.getpid(), kind="demo", url=None, started_at_ms=1))
    try:
        code = main(["attach"])
    finally:
        demo.release()
    err = capsys.readouterr().err
    assert (
        code == 1 and f"A demo runs on it: walletpass-tui attach --home {clean_env / 'demo'}" in err
    )


def test_a_sigkilled_listen_leaves_state_that_attach_and_the_next_listen_call_stale(
    clean_env: Path,
    procs: list[Proc],
    shown: list[WalletPassApp],
    capsys: pytest.CaptureFixture[str],
) -> None:
    listen, url = start_listen()
    procs.append(listen)
    assert post(url, "msg_1", BODY) == 200
    listen.proc.send_signal(signal.SIGKILL)
    listen.proc.wait(timeout=DEADLINE_S)

    code = main(["attach"])
    err = capsys.readouterr().err
    assert code == 1 and not shown
    assert f"the last one (listen, pid {listen.proc.pid}, 127.0.0.1:" in err
    assert "stopped without cleaning up" in err

    again, _ = start_listen()
    procs.append(again)
    assert any(
        f"The last receiver on this home (listen, pid {listen.proc.pid}," in line
        and "stopped without cleaning up; its state was replaced." in line
        for line in again.err.seen
    ), again.err.seen


def test_a_second_listen_on_the_home_is_refused_and_told_to_attach(
    clean_env: Path, procs: list[Proc], capsys: pytest.CaptureFixture[str]
) -> None:
    listen, url = start_listen()
    procs.append(listen)
    code = main(["listen", "--port", "0"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and "A receiver already runs on" in err
    assert f"listen, pid {listen.proc.pid}" in err
    assert f"walletpass-tui attach --home {clean_env}" in err
    assert post(url, "msg_still", BODY) == 200  # the first one never noticed


def test_attach_opens_the_dashboard_on_the_running_receiver(
    clean_env: Path, procs: list[Proc], shown: list[WalletPassApp]
) -> None:
    listen, _ = start_listen()
    procs.append(listen)
    assert main(["attach"]) == 0
    (app,) = shown
    runtime = app.parts.runtime
    assert isinstance(runtime, AttachedRuntime)
    assert runtime.record is not None and runtime.record.pid == listen.proc.pid
    assert app.parts.notices == ()


def test_a_receiver_on_a_path_beyond_ascii_is_attached_to_and_reached_at_the_url_it_gives(
    clean_env: Path, procs: list[Proc], shown: list[WalletPassApp]
) -> None:
    """Whatever path the configuration accepts, the receiver's state file is one attach reads,
    and its URL (percent-encoded, as listen prints it) reaches the receiver."""
    listen, _ = start_listen("--path", "/wébhooks/ä b")
    procs.append(listen)
    found = instance.find(clean_env)
    assert isinstance(found, instance.Running) and found.problem is None
    assert found.record is not None and found.record.url is not None
    assert found.record.url.endswith("/w%C3%A9bhooks/%C3%A4%20b")
    assert any(found.record.url in line for line in listen.err.seen)
    assert post(found.record.url, "msg_path", BODY) == 200
    assert main(["attach"]) == 0
    (app,) = shown
    assert isinstance(app.parts.runtime, AttachedRuntime) and app.parts.notices == ()


def test_the_dashboard_attaches_when_a_receiver_runs_and_says_which_flags_it_did_not_use(
    clean_env: Path, procs: list[Proc], shown: list[WalletPassApp]
) -> None:
    listen, _ = start_listen()
    procs.append(listen)
    secret = "whsec_" + "A" * 43 + "="
    assert main(["--port", "9", "--secret", secret, "--theme", "nord"]) == 0
    (app,) = shown
    assert isinstance(app.parts.runtime, AttachedRuntime)  # never tried to bind port 9
    (notice,) = app.parts.notices
    assert f"A receiver already runs on this home (listen, pid {listen.proc.pid}" in notice
    assert "--port, --secret are not used" in notice
    assert secret not in notice and "--theme" not in notice


async def test_the_demo_registers_its_receiver_on_its_own_data(tmp_path: Path) -> None:
    from walletpass_tui.cli.demo_cmd import demo_session
    from walletpass_tui.config import Settings

    settings = Settings(home=tmp_path / "home", receiver_port=0)
    async with demo_session(settings, port=0, interval=5) as app:
        found = instance.find(settings.home / "demo")
        assert isinstance(found, instance.Running) and found.record is not None
        assert found.record.kind == "demo" and found.record.pid == os.getpid()
        assert found.record.url == app.parts.runtime.url  # type: ignore[union-attr]
        assert instance.find(settings.home) == instance.NotRunning()  # real history untouched
    assert instance.find(settings.home / "demo") == instance.NotRunning()
