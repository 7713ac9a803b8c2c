"""A picture of the Schema screen with a fixed history (``--snapshot-update`` to accept).

Twenty deliveries of one shape, then one whose serialNumber became an integer and which brought a
new field: the learner (the real one, over the history in a fixed directory) learns them and
records the drift. ``python tests/ui/test_schema_snapshot.py screenshots/schema.svg`` saves the
docs' screenshot from the same app.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from ui_helpers import BASE_MS, attempt

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.screens.schema import SchemaScreen
from walletpass_tui.webhooks.models import Attempt

SIZE = (130, 36)


def body(n: int, **changes: Any) -> bytes:
    data: dict[str, Any] = {
        "passId": f"pass_{n:04d}",
        "serialNumber": f"SN-{n:06d}",
        "platform": "apple" if n % 3 else "google",
        "tags": ["gold"] if n % 4 else [],
        "balance": {"points": n * 10, "currency": "EUR"} if n % 5 else None,
    }
    data.update(changes)
    return json.dumps(
        {"type": "pass.activated", "timestamp": "2026-11-23T14:02:11.204Z", "data": data}
    ).encode()


def schema_scene() -> list[Attempt]:
    rows = [attempt(n, body=body(n), at_ms=BASE_MS - 40 * 60_000 + n * 60_000) for n in range(20)]
    rows += [
        attempt(n, topic="pass.deactivated", at_ms=BASE_MS - 30 * 60_000 + n * 60_000)
        for n in range(20, 26)
    ]
    rows.append(attempt(30, body=body(30, serialNumber=4711, tier="platinum"), at_ms=BASE_MS))
    return rows


def make_schema_app() -> WalletPassApp:
    from snapshot_scene import make

    return make("test_schema_screen", rows=schema_scene)


async def settle(pilot: Pilot[Any]) -> None:
    """Wait for the main screen and the drift read from the schema file, open the Schema screen,
    and wait until it shows the findings."""
    from snapshot_scene import settle as main_settled

    app = pilot.app
    assert isinstance(app, WalletPassApp)
    await main_settled(pilot)
    while not (app.live.drift_marks and app.live.drift_marks.findings):
        await pilot.pause(0.02)
    await pilot.press("S")
    while not isinstance(app.screen, SchemaScreen):
        await pilot.pause(0.02)
    screen = app.screen
    while screen.drift_table.row_count < 2 or screen.fields_table.row_count < 8:
        await pilot.pause(0.02)
    screen.fields_table.focus()
    await pilot.pause(0.2)


def test_schema_screen(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(make_schema_app(), terminal_size=SIZE, run_before=settle)


async def _save(path: Path) -> None:
    app = make_schema_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.save_screenshot(filename=path.name, path=str(path.parent))


if __name__ == "__main__":
    asyncio.run(_save(Path(sys.argv[1])))
