"""Two stand-ins for the service on two ephemeral ports: one is the ``base_url`` host (templates),
the other the ``registration_url`` host (webhook endpoints), so a request sent to the wrong host or
path shows up as such."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from walletpass_tui.api.client import WalletPassClient
from walletpass_tui.config import Settings
from walletpass_tui.config.secrets import Secret

API_KEY = "wp_live_4f9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c"
ENDPOINT_SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"
TEMPLATES_PATH = "/api/v0/passTemplates"
ENDPOINTS_PATH = "/v0/webhookEndpoints"


@pytest.fixture
async def api_service(start_server: Any) -> Any:
    """The ``base_url`` host."""
    return await start_server()


@pytest.fixture
async def hooks_service(start_server: Any) -> Any:
    """The ``registration_url`` host."""
    return await start_server()


@pytest.fixture
def settings(api_service: Any, hooks_service: Any, tmp_path: Path) -> Settings:
    return Settings(
        base_url=api_service.url,
        registration_url=hooks_service.url,
        api_key=Secret(API_KEY),
        home=tmp_path / "home",
        timeout_s=2.0,
    )


@pytest.fixture
async def client(settings: Settings) -> Any:
    async with WalletPassClient(settings, retry_base_delay=0) as c:
        yield c


@pytest.fixture
def api_key() -> str:
    return API_KEY


@pytest.fixture
def endpoint_secret() -> str:
    return ENDPOINT_SECRET


@pytest.fixture
def endpoint_json() -> Any:
    """``endpoint_json(**overrides)``: a create answer as the contract describes it (section 2)."""
    return _endpoint_json


def _endpoint_json(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "ep_2ZxK81bq0TQ",
        "secret": ENDPOINT_SECRET,
        "url": "https://example.com/webhooks",
        "enabledTopics": ["pass.activated", "pass.deactivated"],
        "enabled": True,
        "createdAt": "2025-03-04T05:06:07.089Z",
    }
    data.update(overrides)
    return data
