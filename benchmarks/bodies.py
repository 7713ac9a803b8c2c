"""Varied, realistic webhook bodies for the benchmarks that grow a large history.

Each body is a Wallet Pass Service event as the simulator shapes it (``sim/events.py``), varied the
way a real account's traffic varies: many pass templates, optional fields present or not, maps
keyed by ids, arrays of objects, and sizes from a few hundred bytes to a few kilobytes. Half the
bodies name the ``google`` platform (the others ``apple``), so a search for ``google`` matches
about half the history. Webhook-ids are random (``msg_`` + 24 base62 characters), as the service
makes them, so they arrive in no order. The same seed gives the same bodies.
"""

from __future__ import annotations

import json
import random
import string

TOPICS = ("pass.activated", "pass.deactivated")
_ALPHABET = string.ascii_letters + string.digits
_REASONS = {
    "pass.activated": ("added_to_wallet", "notifications_enabled", "automatic_updates_enabled"),
    "pass.deactivated": (
        "removed_from_wallet",
        "notifications_disabled",
        "automatic_updates_disabled",
    ),
}
_TIERS = ("bronze", "silver", "gold", "platinum")
_CITIES = ("Lisbon", "Porto", "Berlin", "Oslo", "Leeds", "Austin", "Osaka", "Quito", "Perth")
_DEVICES = ("iPhone15,2", "iPhone14,7", "Pixel 8", "SM-S911B", "iPhone13,1", "Pixel 7a")


class Bodies:
    """``Bodies(seed).next()`` -> (webhook-id, topic, body bytes)."""

    def __init__(self, seed: int = 1, templates: int = 60) -> None:
        self.rng = random.Random(seed)
        self.templates = [f"tpl_{self._text(10)}" for _ in range(templates)]
        self.fields = [f"fld_{self._text(8)}" for _ in range(40)]

    def _text(self, n: int) -> str:
        return "".join(self.rng.choice(_ALPHABET) for _ in range(n))

    def webhook_id(self) -> str:
        return "msg_" + self._text(24)

    def next(self, when: str = "2026-11-23T14:02:11.204Z") -> tuple[str, str, bytes]:
        rng = self.rng
        topic = TOPICS[rng.random() < 0.3]
        data: dict[str, object] = {
            "passId": "pass_" + self._text(20),
            "passTemplateId": rng.choice(self.templates),
            "serialNumber": f"{rng.randrange(10**9):09d}",
            "platform": "google" if rng.random() < 0.5 else "apple",
        }
        if rng.random() < 0.8:
            data["reason"] = rng.choice(_REASONS[topic])
        if rng.random() < 0.5:
            data["device"] = {
                "model": rng.choice(_DEVICES),
                "locale": rng.choice(("en", "pt", "de")),
            }
        if rng.random() < 0.4:  # a map keyed by ids
            data["fields"] = {
                rng.choice(self.fields): {"label": self._text(6), "value": rng.randrange(10_000)}
                for _ in range(rng.randrange(1, 6))
            }
        if rng.random() < 0.35:  # an array of objects
            data["changes"] = [
                {
                    "field": rng.choice(("balance", "tier", "points", "expiry")),
                    "old": rng.randrange(500),
                    "new": rng.randrange(500),
                }
                for _ in range(rng.randrange(1, 5))
            ]
        if rng.random() < 0.3:
            data["member"] = {
                "tier": rng.choice(_TIERS),
                "city": rng.choice(_CITIES),
                "since": f"20{rng.randrange(15, 27)}-0{rng.randrange(1, 10)}-1{rng.randrange(10)}",
            }
        if rng.random() < 0.1:  # now and then a long one
            data["notes"] = " ".join(
                self._text(rng.randrange(3, 12)) for _ in range(rng.randrange(40, 300))
            )
        body = {"type": topic, "timestamp": when, "data": data}
        return self.webhook_id(), topic, json.dumps(body, separators=(",", ":")).encode()
