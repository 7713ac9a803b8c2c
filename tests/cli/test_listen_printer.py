"""How ``listen`` prints deliveries and the drift the learner reports after them: the text line
at once and a drift line later; the ``--json`` object held until the learner looked at its
delivery (at most a moment), objects kept in order, a late finding as an object of its own."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

import factories

from walletpass_tui.cli.listen_cmd.printer import ListenPrinter
from walletpass_tui.schemas.model import GroupKey
from walletpass_tui.schemas.records import DriftRecord
from walletpass_tui.webhooks.models import Attempt

DEADLINE_S = 30.0  # "did not hang" only


def attempt(n: int) -> Attempt:
    at = 1_795_000_000_000 + n
    return factories.attempt(f"msg_{n}", at=at, topic="pass.activated", attempt_no=1, id=n)


def record(n: int, path: str = "data.serialNumber") -> DriftRecord:
    return DriftRecord(
        GroupKey.of_topic("pass.activated"),
        path,
        "type_changed",
        "breaking",
        "string",
        "integer",
        n,
        f"msg_{n}",
        1_795_000_000_000 + n,
        1,
    )


def objects(out: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def until(check: Any) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while not check():
        assert loop.time() < deadline
        await asyncio.sleep(0.01)


async def test_json_waits_for_the_learner_and_carries_the_drift() -> None:
    out = io.StringIO()
    printer = ListenPrinter(out, True, learning=True, hold_s=DEADLINE_S)
    printer.deliveries([attempt(1), attempt(2)])
    assert out.getvalue() == ""  # held: the learner has not looked yet
    printer.learned(1)
    assert [(o["id"], o["drift"]) for o in objects(out)] == [(1, [])]
    printer.drift(2, [record(2)])
    printer.learned(2)
    [_, second] = objects(out)
    assert second["id"] == 2 and second["drift"] == [record(2).to_json()]
    printer.close()


async def test_json_does_not_wait_more_than_the_hold_and_a_late_finding_follows() -> None:
    out = io.StringIO()
    printer = ListenPrinter(out, True, learning=True, hold_s=0.05)
    printer.deliveries([attempt(1)])
    await until(out.getvalue)
    [first] = objects(out)
    assert first["id"] == 1 and "drift" not in first  # not looked at in time: not said
    printer.drift(1, [record(1)])
    [_, late] = objects(out)
    assert late == {"drift": [record(1).to_json()], "webhook_id": "msg_1", "id": 1}
    printer.learned(1)
    assert len(objects(out)) == 2


async def test_json_objects_keep_their_order_forwards_included() -> None:
    out = io.StringIO()
    printer = ListenPrinter(out, True, learning=True, hold_s=DEADLINE_S)
    printer.deliveries([attempt(1)])
    printer.forwards('{"forward": {"attempt_id": 1}}')
    printer.deliveries([attempt(2)])
    assert out.getvalue() == ""
    printer.learned(2)
    assert [o.get("id", "forward") for o in objects(out)] == [1, "forward", 2]
    printer.forwards('{"forward": {"attempt_id": 2}}')  # nothing held: at once
    assert len(objects(out)) == 4


async def test_drift_told_before_the_delivery_reached_the_printer_is_kept_for_it() -> None:
    """The learner may read a commit before the store tells its listeners of it."""
    out = io.StringIO()
    printer = ListenPrinter(out, True, learning=True, hold_s=DEADLINE_S)
    printer.drift(3, [record(3)])
    printer.learned(3)
    assert out.getvalue() == ""
    printer.deliveries([attempt(3)])
    [shown] = objects(out)
    assert shown["drift"] == [record(3).to_json()]

    text = io.StringIO()
    lines = ListenPrinter(text, False, learning=True)
    lines.drift(4, [record(4)])
    lines.deliveries([attempt(4)])
    first, second = text.getvalue().splitlines()
    assert "msg_4" in first and "#1  verified" in first
    assert second == "drift pass.activated data.serialNumber: string -> integer  [msg_4]"


async def test_text_prints_at_once_and_the_drift_line_escaped_after_it() -> None:
    out = io.StringIO()
    printer = ListenPrinter(out, False, learning=True)
    printer.deliveries([attempt(5)])
    assert "msg_5" in out.getvalue()
    printer.drift(5, [record(5, 'data["\x1b[2J\u202e"]')])
    drift_line = out.getvalue().splitlines()[-1]
    assert drift_line == (
        'drift pass.activated data["\\x1b[2J\\u202e"]: string -> integer  [msg_5]'
    )


async def test_without_learning_json_is_printed_at_once_without_drift() -> None:
    out = io.StringIO()
    printer = ListenPrinter(out, True, learning=False)
    printer.deliveries([attempt(1)])
    [shown] = objects(out)
    assert "drift" not in shown


async def test_close_prints_what_is_still_held() -> None:
    out = io.StringIO()
    printer = ListenPrinter(out, True, learning=True, hold_s=DEADLINE_S)
    printer.deliveries([attempt(1), attempt(2)])
    printer.drift(2, [record(2)])  # looked at 2 (it drifted), not yet at 1
    printer.close()
    first, second = objects(out)
    assert "drift" not in first and second["drift"] == [record(2).to_json()]
