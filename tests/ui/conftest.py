"""Fixtures for dashboard tests: a store in ``tmp_path``, fixed attempts, a stand-in service, and
a way to post signed deliveries over HTTP to the dashboard's own receiver.

Every app is built with ``build_app`` over a delivery runtime, exactly as the command line
builds it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from ui_helpers import API_KEY, ENDPOINT_ID, SECRET

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.config import Settings
from walletpass_tui.config.secrets import Secret
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.ui.app import WalletPassApp, build_app
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.store import Store


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def settings(home: Path) -> Settings:
    """No key, no service: what a first run looks like."""
    return Settings(home=home, receiver_port=0, timeout_s=2.0)


@pytest.fixture
def registry(settings: Settings) -> EndpointRegistry:
    return EndpointRegistry(settings.endpoints_path)


@pytest.fixture
async def store(settings: Settings) -> AsyncIterator[Store]:
    opened = await Store.open(settings.database_path)
    yield opened
    await opened.close()


@pytest.fixture
def make_app(
    settings: Settings, store: Store, registry: EndpointRegistry
) -> Callable[..., WalletPassApp]:
    """``make_app(receiver=runtime, client=..., settings=..., secret_for=...)``: without a
    ``receiver`` the app opens a runtime with no receiver over the test's store."""

    def make(**overrides: Any) -> WalletPassApp:
        runtime: DeliveryRuntime | None = overrides.pop("receiver", None)
        app_settings: Settings = overrides.pop("settings", settings)
        secret_for = overrides.pop("secret_for", None)
        overrides.setdefault("receiver_display", "127.0.0.1:8787/webhooks")
        if runtime is not None:
            return build_app(runtime, **overrides)

        async def open_runtime() -> DeliveryRuntime:
            opened = DeliveryRuntime(
                app_settings, store=store, registry=registry, secret_for=secret_for
            )
            await opened.open()
            return opened

        return build_app(open_runtime, **overrides)

    return make


@pytest.fixture
async def receiver(
    settings: Settings, store: Store, registry: EndpointRegistry
) -> AsyncIterator[DeliveryRuntime]:
    """An open runtime with a receiver on port 0 over the test's store; the app it is given starts
    serving after its first frame."""
    registry.import_endpoint(
        ENDPOINT_ID,
        "https://hooks.example/webhooks",
        ["pass.activated", "pass.deactivated"],
        SECRET,
    )
    setup = DeliverySetup(options=ReceiverOptions(host="127.0.0.1", port=0))
    async with DeliveryRuntime(settings, setup, store=store, registry=registry) as runtime:
        yield runtime


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=5.0) as client:
        yield client


@pytest.fixture
async def service(start_server: Any) -> Any:
    """A stand-in Wallet Pass Service (both hosts on one ephemeral port)."""
    return await start_server()


@pytest.fixture
def service_settings(settings: Settings, service: Any) -> Settings:
    return settings.with_values(
        base_url=service.url,
        registration_url=service.url,
        api_key=Secret(API_KEY),
        allow_http=False,
    )


@pytest.fixture
async def service_client(
    service_settings: Settings, registry: EndpointRegistry
) -> AsyncIterator[WalletPassClient]:
    client = WalletPassClient(
        service_settings, on_endpoint_created=registry.record_created, retry_base_delay=0
    )
    yield client
    await client.aclose()
