"""Topics as one OpenAPI 3.1 document: a ``webhooks`` entry per topic, as the service sends it.

Each entry is a POST with the three Standard Webhooks headers the service signs with (spec
section 3), the body's learned schema (``components.schemas``, the same JSON Schema as the
``jsonschema`` export, OpenAPI 3.1's own dialect) and the answer the service wants: any 2xx within
15 seconds (spec section 5). Topic names come from the wire: they are keys and text in JSON,
never code; schema names are made of ASCII letters and digits (``Names``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from walletpass_tui.schemas.export.json_schema import component, named
from walletpass_tui.schemas.export.shape import json_text
from walletpass_tui.schemas.model import GroupSchema

VERSION = "3.1.0"

_HEADERS = (
    (
        "webhook-id",
        "The message's id: unique to the event and the same on every retry of it (deduplicate on "
        "it).",
        {"type": "string", "minLength": 1},
    ),
    (
        "webhook-timestamp",
        "When the service signed it: seconds since the Unix epoch.",
        {"type": "string", "pattern": "^[0-9]+$"},
    ),
    (
        "webhook-signature",
        "Space-separated signatures, each a version, a comma and the signature (v1,<base64 of "
        "the HMAC-SHA256 of '<webhook-id>.<webhook-timestamp>.<raw body>'>).",
        {"type": "string", "minLength": 1},
    ),
)


def _operation(group: GroupSchema, name: str) -> dict[str, Any]:
    label = group.key.label
    return {
        "post": {
            "summary": f"{label}, as the service delivers it",
            "description": (
                f"Learned by walletpass-tui from {group.samples} verified deliveries of "
                f"{label}: a body of another shape is drift, not an error of the receiver."
            ),
            "operationId": f"receive{name}",
            "parameters": [
                {
                    "name": header,
                    "in": "header",
                    "required": True,
                    "description": description,
                    "schema": schema,
                }
                for header, description, schema in _HEADERS
            ],
            "requestBody": {
                "required": True,
                "content": {
                    "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                },
            },
            "responses": {
                "2XX": {
                    "description": (
                        "Received. Any answer from 200 to 299 within 15 seconds; anything else, "
                        "or none, is a failed attempt the service tries again."
                    )
                }
            },
        }
    }


def to_openapi(groups: Sequence[GroupSchema]) -> dict[str, Any]:
    names = named(groups)
    return {
        "openapi": VERSION,
        "info": {
            "title": "Wallet Pass Service webhooks",
            "version": "learned",
            "description": (
                "The webhooks the Wallet Pass Service sends, with each topic's body as "
                "walletpass-tui learned it from verified deliveries (the service documents none)."
            ),
        },
        "webhooks": {
            (group.key.topic if group.key.topic is not None else group.key.label): _operation(
                group, name
            )
            for name, group in zip(names, groups, strict=True)
        },
        "components": {
            "schemas": {name: component(group) for name, group in zip(names, groups, strict=True)}
        },
    }


def render_all(groups: Sequence[GroupSchema]) -> str:
    return json_text(to_openapi(groups))


def render(group: GroupSchema) -> str:
    return render_all([group])
