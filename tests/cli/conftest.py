"""The ``cli`` fixture of the service commands' tests (see service_helpers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from service_helpers import Cli, make_cli


@pytest.fixture
async def cli(
    clean_env: Path,
    start_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Cli:
    return await make_cli(clean_env, start_server, monkeypatch, capsys)
