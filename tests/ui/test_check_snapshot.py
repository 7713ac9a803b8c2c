"""A picture of the "Check my app" screen with fixed results (``--snapshot-update`` to accept).

The results are made up but judged by the real judge: a receiver that compares only the first
signature entry, never checks the timestamp's age and answers slowly. ``python
tests/ui/test_check_snapshot.py screenshots/check.svg`` saves the docs' screenshot from the same
app.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from textual.app import App
from textual.pilot import Pilot

from walletpass_tui.check.cases import build_cases
from walletpass_tui.check.judge import Answer, judge
from walletpass_tui.check.runner import CaseResult, CheckOptions, CheckReport
from walletpass_tui.ui.screens.check import CheckScreen
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import ForwardResult

FIXED_NOW = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)
UI = Path(__file__).resolve().parents[2] / "walletpass_tui" / "ui"
SECRET = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"
TARGET = "http://localhost:3000/webhooks"
# case id -> (status, milliseconds, answer body); None: no answer
ANSWERS: dict[str, tuple[int | None, float, bytes]] = {
    "valid-pass.activated": (200, 38, b"ok"),
    "valid-pass.deactivated": (200, 6240, b"ok"),
    "duplicate": (200, 12, b"ok"),
    "wrong-secret": (401, 4, b'{"error":"invalid signature"}'),
    "changed-byte": (401, 3, b'{"error":"invalid signature"}'),
    "missing-header": (400, 2, b'{"error":"missing webhook-signature"}'),
    "empty-signature": (400, 2, b'{"error":"missing webhook-signature"}'),
    "old-timestamp": (200, 9, b"ok"),
    "future-timestamp": (200, 8, b"ok"),
    "other-version-first": (401, 3, b'{"error":"invalid signature"}'),
    "rotated-secret": (401, 3, b'{"error":"invalid signature"}'),
    "non-ascii": (200, 11, b"ok"),
    "unusual-json": (200, 10, b"ok"),
    "large-body": (200, 41, b"ok"),
    "slow-network": (200, 1012, b"ok"),
}


class CheckSample(App[None]):
    """The dashboard's stylesheets and the check screen, filled with fixed results."""

    CSS_PATH = [UI / "app.tcss", UI / "screens.tcss"]
    TITLE = "walletpass-tui"

    def __init__(self, home: Path) -> None:
        super().__init__()
        self.registry = EndpointRegistry(home / "endpoints.json")
        self.registry.import_endpoint(
            "ep_3f2a9c", "https://ab12.tunnel.example/webhooks", ["pass.activated"], SECRET
        )

    async def on_mount(self) -> None:
        screen = CheckScreen(None, self.registry, target=TARGET)
        await self.push_screen(screen)
        options = CheckOptions(TARGET, SECRET, ("pass.activated", "pass.deactivated"))
        cases = build_cases(options.secret, options.topics, rng=random.Random(7))
        results = []
        for case in cases:
            status, ms, body = ANSWERS[case.id]
            answer = ForwardResult(status=status, latency_ms=ms, body=body)
            verdict = judge(case, Answer(status, ms))
            results.append(CaseResult(case, case.make(FIXED_NOW), answer, verdict))
        screen.show_results(cases, results)
        screen.show_summary(CheckReport(options, tuple(results)))
        screen.table.move_cursor(row=9)


def fixed_home() -> Path:
    home = Path(tempfile.gettempdir()) / "walletpass-tui-snapshots" / "check"
    shutil.rmtree(home, ignore_errors=True)
    return home


async def settle(pilot: Pilot[None]) -> None:
    await pilot.pause()
    await pilot.pause()


def test_check_screen(snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(CheckSample(fixed_home()), terminal_size=(130, 34), run_before=settle)


async def _save(path: Path) -> None:
    app = CheckSample(fixed_home())
    async with app.run_test(size=(130, 34)) as pilot:
        await settle(pilot)
        app.save_screenshot(filename=path.name, path=str(path.parent))


if __name__ == "__main__":
    asyncio.run(_save(Path(sys.argv[1])))
