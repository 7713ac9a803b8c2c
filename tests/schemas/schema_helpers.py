"""Deliveries to learn from, for the schema tests."""

from __future__ import annotations

import json
from typing import Any

from walletpass_tui.schemas.catalog import Catalog, Delivery
from walletpass_tui.webhooks.models import VERIFIED

T0 = 1_795_000_000_000


def delivery(
    n: int,
    body: Any,
    *,
    topic: str | None = "pass.activated",
    verdict: str = VERIFIED,
) -> Delivery:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Delivery(n, f"msg_{n:05d}", T0 + n * 1000, topic, verdict, raw)


def activated(n: int, **changes: Any) -> dict[str, Any]:
    """A body of a steady shape; ``changes`` replace (or, with None, remove) fields of data."""
    data: dict[str, Any] = {
        "passId": f"pass_{n:04d}",
        "serialNumber": f"{n:09d}",
        "platform": "apple" if n % 2 else "google",
        "tags": ["gold"] if n % 3 else [],
    }
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return {"type": "pass.activated", "timestamp": "2026-11-23T14:02:11.204Z", "data": data}


def learned(bodies: list[Any], topic: str | None = "pass.activated") -> Catalog:
    catalog = Catalog()
    for n, body in enumerate(bodies):
        catalog.learn(delivery(n, body, topic=topic))
    return catalog
