"""Learned schemas as text: ``jsonschema``, ``typescript``, ``pydantic`` or ``openapi``.

Each exporter reads the learned tree (``shape.py``) and writes text; none imports the library its
output is for. Names from the wire are untrusted: each exporter's docstring says how it keeps them
from breaking or injecting code. ``export`` writes one group; ``export_all`` several topics in
one document (every exporter: one model each and their union; OpenAPI: a webhook each).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from walletpass_tui.schemas.export import json_schema, openapi, pydantic_code, typescript
from walletpass_tui.schemas.model import GroupSchema

EXPORTERS: dict[str, tuple[Callable[[GroupSchema], str], Callable[[Sequence[GroupSchema]], str]]]
EXPORTERS = {
    "jsonschema": (json_schema.render, json_schema.render_all),
    "typescript": (typescript.render, typescript.render_all),
    "pydantic": (pydantic_code.render, pydantic_code.render_all),
    "openapi": (openapi.render, openapi.render_all),
}


def export(group: GroupSchema, fmt: str) -> str:
    """``group`` as ``fmt`` text (a key of EXPORTERS)."""
    return EXPORTERS[fmt][0](group)


def export_all(groups: Sequence[GroupSchema], fmt: str) -> str:
    """Several groups (topics) as one ``fmt`` document."""
    return EXPORTERS[fmt][1](groups)
