"""Relay fixtures: a relay in the test's event loop or as a real process, an HTTP client.

Everything listens on 127.0.0.1 with an ephemeral port; every relay has its own data directory.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from relay_helpers import RelayProcess

from walletpass_tui.relay.server.ingress import IngressOptions
from walletpass_tui.relay.server.serve import RelayOptions, RelayServer


@pytest.fixture
async def relay(tmp_path: Path) -> AsyncIterator[RelayServer]:
    """A relay in this event loop: 127.0.0.1, an ephemeral port, a fast heartbeat."""
    server = RelayServer(
        RelayOptions(
            home=tmp_path / "relay-home",
            host="127.0.0.1",
            port=0,
            heartbeat_s=0.1,
            ingress=IngressOptions(max_body=64 * 1024),
        )
    )
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
def relay_process(tmp_path: Path) -> Iterator[RelayProcess]:
    proc = RelayProcess(tmp_path / "relay-home")
    yield proc
    if proc.proc is not None and proc.proc.poll() is None:
        proc.kill()
