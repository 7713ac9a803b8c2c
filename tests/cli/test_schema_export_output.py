"""What ``schema export`` writes, read back as the bytes a real ``walletpass-tui`` process prints:
valid UTF-8 that every sample validates against, whatever text the wire sent (a lone surrogate,
legal as a JSON escape, included), read by Python and by Node alike."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store

# Values "a", "b" and a lone surrogate: 60 samples make a value set; the key "\udc81" too.
BODIES = [
    {"type": "pass.activated", "data": {"v": ("a", "b", "\udc80")[n % 3], "\udc81": 1}}
    for n in range(60)
]


async def seed(home: Path, bodies: list[Any]) -> None:
    """A history of verified ``pass.activated`` deliveries of ``bodies``."""
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        for n, body in enumerate(bodies):
            await store.record(
                Attempt(
                    received_at_ms=1_795_000_000_000 + n,
                    method="POST",
                    path="/webhooks",
                    headers=(),
                    body=json.dumps(body).encode(),  # the surrogates as JSON escapes
                    verdict=VERIFIED,
                    reason="verified",
                    status=200,
                    webhook_id=f"msg_{n:05d}",
                    topic="pass.activated",
                )
            )
        await store.settled()


def walletpass(*argv: str) -> bytes:
    """stdout of a real ``walletpass-tui`` process, as bytes."""
    done = subprocess.run(
        [sys.executable, "-m", "walletpass_tui", *argv],
        env=dict(os.environ),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout


NODE_CHECK = """
const fs = require("fs");
const schema = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).properties.data;
const bodies = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
for (const body of bodies) {
  for (const key of schema.required) if (!(key in body.data)) throw new Error("missing " + key);
  if (!schema.properties.v.enum.includes(body.data.v)) throw new Error("enum " + body.data.v);
}
console.log(JSON.stringify(schema.required));
"""


async def test_exports_are_utf8_and_take_a_lone_surrogate_in_a_key_or_a_value_set(
    clean_env: Path, tmp_path: Path
) -> None:
    await seed(clean_env, BODIES)
    await asyncio.to_thread(walletpass, "schema", "rebuild")

    out = await asyncio.to_thread(walletpass, "schema", "export", "activated")
    schema = json.loads(out.decode("utf-8"))  # strict: the bytes are UTF-8
    assert schema["properties"]["data"]["properties"]["v"] == {"enum": ["a", "b", "\udc80"]}
    assert schema["properties"]["data"]["required"] == ["v", "\udc81"]
    for body in BODIES:
        jsonschema.Draft202012Validator(schema).validate(body)

    # Node reads the same key and value (not U+FFFD), so every sample passes there too.
    node = shutil.which("node")
    assert node is not None, "this test needs node"
    (tmp_path / "schema.json").write_bytes(out)
    (tmp_path / "bodies.json").write_text(json.dumps(BODIES))
    done = await asyncio.to_thread(
        subprocess.run,
        [node, "-e", NODE_CHECK, str(tmp_path / "schema.json"), str(tmp_path / "bodies.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["v", "\udc81"]

    from openapi_spec_validator import validate

    out = await asyncio.to_thread(walletpass, "schema", "export", "--format", "openapi")
    doc = json.loads(out.decode("utf-8"))
    validate(doc)
    component: dict[str, Any] = doc["components"]["schemas"]["PassActivated"]
    for body in BODIES:
        jsonschema.Draft202012Validator(component).validate(body)


async def test_the_pydantic_export_imports_with_a_lone_surrogate_in_a_value_set(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed(clean_env, BODIES)
    await asyncio.to_thread(walletpass, "schema", "rebuild")
    out = await asyncio.to_thread(
        walletpass, "schema", "export", "activated", "--format", "pydantic"
    )
    path = tmp_path / "surrogate_models.py"
    path.write_bytes(out)
    spec = importlib.util.spec_from_file_location("surrogate_models", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "surrogate_models", module)
    spec.loader.exec_module(module)  # it imports: pydantic builds every model
    for body in BODIES:
        model = module.PassActivated.model_validate(body)
        assert model.data.v == body["data"]["v"]
