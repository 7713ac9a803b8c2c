"""Relay fixtures: a relay in the test's event loop or as a real process, an HTTP client, and the
database under them, SQLite or PostgreSQL.

Every test that runs a relay runs on both backends: ``relay_data`` is parametrized over
``sqlite`` (a file in the relay's home) and ``postgres`` (a new database on a cluster this session
starts, one per pytest-xdist worker). Everything listens on 127.0.0.1 with an ephemeral port.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from pg_cluster import PgCluster
from relay_helpers import RelayData, RelayProcess

from walletpass_tui.relay.server.ingress import IngressOptions
from walletpass_tui.relay.server.serve import RelayServer

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """One PostgreSQL cluster for the session (per xdist worker), stopped at the end."""
    try:
        cluster = PgCluster.create(os.environ.get("PYTEST_XDIST_WORKER", "main"))
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield cluster
    cluster.destroy()


@pytest.fixture(params=BACKENDS)
def relay_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def relay_data(
    relay_backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[RelayData]:
    """Where this test's relay keeps its data: its home, and a database of its own."""
    home = tmp_path / "relay-home"
    if relay_backend == "sqlite":
        yield RelayData(home)
        return
    cluster: PgCluster = request.getfixturevalue("pg_cluster")
    url = cluster.new_database()
    yield RelayData(home, url)
    cluster.release(url)


@pytest.fixture
async def relay(relay_data: RelayData) -> AsyncIterator[RelayServer]:
    """A relay in this event loop: 127.0.0.1, an ephemeral port, a fast heartbeat."""
    server = relay_data.server(heartbeat_s=0.1, ingress=IngressOptions(max_body=64 * 1024))
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as session:
        yield session


@pytest.fixture
def relay_process(relay_data: RelayData) -> Iterator[RelayProcess]:
    proc = RelayProcess(relay_data.home, relay_data.database)
    yield proc
    if proc.proc is not None and proc.proc.poll() is None:
        proc.kill()
