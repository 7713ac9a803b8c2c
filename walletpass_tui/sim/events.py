"""Event bodies, pass templates and identifiers, as the simulator makes them up.

The service documents neither the fields of a webhook body (spec section 6, rule 9) nor those of a
pass template (section 2, "Not shown"). Everything shaped here is the simulator's own invention, chosen
to look plausible; nothing outside ``walletpass_tui.sim`` may depend on it. What *is* documented and
followed exactly: the topics, the ``ep_``/``whsec_``/``msg_`` prefixes and the ``createdAt`` format.
"""

from __future__ import annotations

import base64
import random
import secrets
import string
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

TOPICS: tuple[str, ...] = ("pass.activated", "pass.deactivated")

_ALPHABET = string.ascii_letters + string.digits
SECRET_BYTES = 24  # the spec allows whsec_ + base64 of any length; 24 bytes is what Svix issues


def opaque_id(prefix: str, length: int = 24) -> str:
    """``prefix`` + random base62 text, e.g. ``msg_2KWPBgLlAfxdpx2AI54pPJ85``."""
    return prefix + "".join(secrets.choice(_ALPHABET) for _ in range(length))


def message_id() -> str:
    return opaque_id("msg_")


def endpoint_id() -> str:
    return opaque_id("ep_")


def new_secret(nbytes: int = SECRET_BYTES) -> str:
    """``whsec_`` + standard base64 of ``nbytes`` random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(nbytes)).decode("ascii")


def new_api_key() -> str:
    """A key for the simulator only; it looks nothing like a real one on purpose."""
    return "sk_sim_" + opaque_id("", 32)


def iso_millis(when: datetime) -> str:
    """ISO 8601 UTC with milliseconds, e.g. ``2026-11-23T14:02:11.204Z`` (the spec's createdAt)."""
    if when.tzinfo is None:
        raise ValueError("iso_millis needs an aware datetime")
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# The simulator's invention: the real template shape is not documented. The service's answer is an
# object holding the list under "data" (one of the shapes the client accepts).
SAMPLE_TEMPLATES: tuple[Mapping[str, Any], ...] = (
    {
        "id": "tpl_7HqYb2LmN4",
        "name": "Loyalty Card - Gold",
        "passType": "storeCard",
        "description": "Gold tier loyalty card with points balance",
        "organizationName": "Bluebird Coffee",
        "createdAt": "2026-03-02T09:15:27.481Z",
        "updatedAt": "2026-10-18T16:40:03.112Z",
    },
    {
        "id": "tpl_Qx81RcVa0e",
        "name": "Summer Festival 2026",
        "passType": "eventTicket",
        "description": "Three-day festival wristband pass",
        "organizationName": "Harbour Events",
        "createdAt": "2026-04-11T12:01:55.009Z",
        "updatedAt": "2026-07-30T08:22:41.770Z",
    },
    {
        "id": "tpl_c3Ts9WkP1z",
        "name": "Gym Membership",
        "passType": "generic",
        "description": "Monthly membership with member number barcode",
        "organizationName": "Northside Fitness",
        "createdAt": "2026-01-20T18:44:10.300Z",
        "updatedAt": "2026-01-20T18:44:10.300Z",
    },
    {
        "id": "tpl_Ld5nE0uJ6r",
        "name": "10% Off Next Visit",
        "passType": "coupon",
        "description": "Single-use discount coupon",
        "organizationName": "Bluebird Coffee",
        "createdAt": "2026-05-06T10:30:00.000Z",
        "updatedAt": "2026-09-01T11:05:19.845Z",
    },
    {
        "id": "tpl_Vb4kM8oS2d",
        "name": "Ferry Boarding Pass",
        "passType": "boardingPass",
        "description": "Harbour ferry boarding pass with seat and gate",
        "organizationName": "Island Ferries",
        "createdAt": "2026-06-14T07:12:48.556Z",
        "updatedAt": "2026-11-02T13:27:36.021Z",
    },
)

# Why each event happened: spec section 6 names these causes; the field and its values are invented.
_REASONS = {
    "pass.activated": ("added_to_wallet", "notifications_enabled", "automatic_updates_enabled"),
    "pass.deactivated": (
        "removed_from_wallet",
        "notifications_disabled",
        "automatic_updates_disabled",
    ),
}


def templates_response() -> dict[str, Any]:
    """Body of ``GET /api/v0/passTemplates`` (the simulator's invented shape)."""
    return {"data": [dict(t) for t in SAMPLE_TEMPLATES], "hasMore": False}


def event_body(
    topic: str,
    *,
    when: datetime | None = None,
    pass_id: str | None = None,
    template_id: str | None = None,
    rng: random.Random | None = None,
) -> dict[str, Any]:
    """A plausible webhook body for ``topic``; the field names are the simulator's invention."""
    if topic not in TOPICS:
        raise ValueError(f"Unknown topic {topic!r}; the service knows {', '.join(TOPICS)}.")
    rng = rng or random.Random()
    template = rng.choice(SAMPLE_TEMPLATES)
    return {
        "type": topic,
        "timestamp": iso_millis(when or datetime.now(UTC)),
        "data": {
            "passId": pass_id or "pass_" + "".join(rng.choice(_ALPHABET) for _ in range(20)),
            "passTemplateId": template_id or template["id"],
            "serialNumber": f"{rng.randrange(10**9):09d}",
            "platform": rng.choice(("apple", "google")),
            "reason": rng.choice(_REASONS[topic]),
        },
    }
