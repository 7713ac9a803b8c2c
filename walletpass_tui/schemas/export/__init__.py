"""One group's learned schema as text: ``jsonschema``, ``typescript`` or ``pydantic``.

Each exporter reads the learned tree (``shape.py``) and writes text; none imports the library its
output is for. Names from the wire are untrusted: each exporter's docstring says how it keeps them
from breaking or injecting code.
"""

from __future__ import annotations

from collections.abc import Callable

from walletpass_tui.schemas.export import json_schema, pydantic_code, typescript
from walletpass_tui.schemas.model import GroupSchema

EXPORTERS: dict[str, Callable[[GroupSchema], str]] = {
    "jsonschema": json_schema.render,
    "typescript": typescript.render,
    "pydantic": pydantic_code.render,
}


def export(group: GroupSchema, fmt: str) -> str:
    """``group`` as ``fmt`` text (a key of EXPORTERS)."""
    return EXPORTERS[fmt](group)
