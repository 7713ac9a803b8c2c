"""Deliveries to learn from, and running what the exports write, for the schema tests."""

from __future__ import annotations

import json
import subprocess
import sys
import types
from pathlib import Path
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


# -- running the exports ----------------------------------------------------------------------


def compile_ts(
    tsc: list[str], tmp_path: Path, files: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return subprocess.run(
        [*tsc, "--strict", "--noEmit", "--target", "es2020", "--module", "commonjs", *files],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def samples_ts(name: str, bodies: list[Any]) -> str:
    lines = [f'import type {{ {name} }} from "./schema";']
    for n, body in enumerate(bodies):
        lines.append(f"export const sample{n}: {name} = {json.dumps(body)};")
    return "\n".join(lines) + "\n"


def load_module(text: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module  # pydantic resolves the models' names through it
    try:
        exec(compile(text, f"<{name}>", "exec"), module.__dict__)  # noqa: S102 - the code under test
    finally:
        del sys.modules[name]
    return module
