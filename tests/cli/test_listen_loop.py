"""``listen`` runs on uvloop where it is installed, and on asyncio's own loop where it is not."""

from __future__ import annotations

import asyncio
import sys

import pytest

from walletpass_tui.cli.listen_cmd import run_loop


async def loop_module() -> int:
    return 1 if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else 0


def test_listen_runs_on_uvloop_when_it_is_installed() -> None:
    pytest.importorskip("uvloop")
    assert run_loop(loop_module()) == 1


def test_listen_runs_on_asyncio_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop raises ImportError
    assert run_loop(loop_module()) == 0
