"""Every fake ``cloudflared`` a test started is gone after it, even when the test failed halfway
(a test that passes has already checked that none was left)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tunnel_helpers import FakeCloudflared


@pytest.fixture(autouse=True)
def no_fake_left(tmp_path: Path) -> Iterator[None]:
    yield
    program = tmp_path / "bin" / "cloudflared"
    if program.exists():
        FakeCloudflared(program, tmp_path / "cloudflared-state").kill_leftovers()
