"""A terminal that hangs up under the dashboard: Textual's output thread keeps going on a real
pseudo-terminal whose other side has closed, so the app can still stop (and stop its tunnel).
The real process in a closed tmux window is tests/tunnel/test_terminal_closed.py."""

from __future__ import annotations

import contextlib
import os
import pty
import sys
import threading
from collections.abc import Iterator

import pytest
from textual.drivers._writer_thread import MAX_QUEUED_WRITES, WriterThread
from textual.drivers.linux_driver import LinuxDriver
from textual.drivers.web_driver import WebDriver

from walletpass_tui.ui.terminal_driver import HangupSafeDriver, TerminalOutput, hangup_safe

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX terminals only")

DEADLINE_S = 30.0  # a "did not hang" guard, never a timing assertion


@pytest.fixture
def hung_up_terminal() -> Iterator[TerminalOutput]:
    """The terminal side of a pseudo-terminal whose window (the other side) has closed."""
    window, terminal = pty.openpty()
    out = open(terminal, "w", encoding="utf-8")  # noqa: SIM115  (closed below)
    out.write("drawn while the window was open\n")
    out.flush()
    os.close(window)  # the window closed: writes to the terminal now fail with EIO
    try:
        yield TerminalOutput(out)
    finally:
        with contextlib.suppress(OSError):  # its last flush fails as every write does
            out.close()


def test_a_raw_write_to_a_hung_up_terminal_fails_as_textual_sees_it() -> None:
    window, terminal = pty.openpty()
    os.close(window)
    with pytest.raises(OSError) as failed:
        os.write(terminal, b"x")
    os.close(terminal)
    assert failed.value.errno == 5  # EIO: what kills Textual's own output thread


def test_writes_after_the_hangup_are_dropped_and_said_once(
    hung_up_terminal: TerminalOutput, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="walletpass_tui.ui.terminal_driver")
    for _ in range(3):
        assert hung_up_terminal.write("\x1b[?1049l") == len("\x1b[?1049l")
        hung_up_terminal.flush()
    assert hung_up_terminal.gone
    said = [r.getMessage() for r in caplog.records if "terminal has gone away" in r.getMessage()]
    assert len(said) == 1


def test_textuals_output_thread_outlives_the_hangup_and_stops(
    hung_up_terminal: TerminalOutput,
) -> None:
    writer = WriterThread(hung_up_terminal)  # type: ignore[arg-type]  # duck-typed file
    writer.start()
    stopped = threading.Event()

    def draw_then_stop() -> None:
        for frame in range(MAX_QUEUED_WRITES * 4):  # more than its queue holds
            writer.write(f"\x1b[H frame {frame}")
        writer.stop()  # what the app's shutdown does last
        stopped.set()

    threading.Thread(target=draw_then_stop, daemon=True).start()
    assert stopped.wait(DEADLINE_S), "the app's writes blocked: its output thread died"
    assert not writer.is_alive()


def test_any_other_write_error_is_not_hidden() -> None:
    class Full:
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

        def flush(self) -> None:
            return

    out = TerminalOutput(Full())  # type: ignore[arg-type]
    with pytest.raises(OSError, match="No space"):
        out.write("x")
    assert not out.gone


def test_the_dashboard_draws_a_terminal_through_it_and_leaves_other_drivers_alone() -> None:
    assert hangup_safe(LinuxDriver) is HangupSafeDriver
    assert hangup_safe(WebDriver) is WebDriver  # `web`'s tabs, driven by textual-serve
