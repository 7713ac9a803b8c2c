"""Fixtures for the simulator's tests: a started SimulatedService, endpoint registration over HTTP,
and ``eventually`` to wait (in real time, bounded) for something asynchronous to happen."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from walletpass_tui.sim.service import SimulatedService

SIM_KEY = "sk_sim_TestKey0123456789abcdefABCDEF"


@pytest.fixture
async def sim() -> Any:
    """``await sim(clock=..., time_scale=...)`` -> a started SimulatedService; stopped after."""
    started: list[SimulatedService] = []

    async def start(**kwargs: Any) -> SimulatedService:
        kwargs.setdefault("api_key", SIM_KEY)
        service = SimulatedService(**kwargs)
        await service.start("127.0.0.1", 0)
        started.append(service)
        return service

    yield start
    for service in started:
        await service.stop()


@pytest.fixture
async def http() -> Any:
    """An httpx client that sends the simulator's key."""
    async with httpx.AsyncClient(
        headers={"Authorization": f"Bearer {SIM_KEY}", "Accept": "application/json"},
        trust_env=False,
        timeout=5.0,
    ) as client:
        yield client


@pytest.fixture
def create_endpoint(http: httpx.AsyncClient) -> Any:
    """``await create_endpoint(sim_url, target_url, topics=[...], enabled=True)`` -> its JSON."""

    async def create(
        base: str, url: str, topics: tuple[str, ...] = ("pass.activated",), enabled: bool = True
    ) -> dict[str, Any]:
        response = await http.post(
            f"{base}/v0/webhookEndpoints",
            json={"enabledTopics": list(topics), "enabled": enabled, "url": url},
        )
        assert response.status_code == 201, response.text
        return response.json()

    return create


async def _eventually(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not become true in time")
        await asyncio.sleep(0.005)


@pytest.fixture
def eventually() -> Any:
    """``await eventually(lambda: cond)``: poll until true (fails after 5 s of real time)."""
    return _eventually
