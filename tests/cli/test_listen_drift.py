"""Drift from real deliveries through the real receiver: a ``listen`` process (text, and another
with ``--json``) receives signed posts of a steady shape (one of the first 20 with a field the
others lack: reported when drift begins to be looked for), then one delivery of each drift kind,
then one that shows all three again, a forged one in between. What each command shows of it:
``listen``'s drift line and its ``"drift"`` array, ``events show --json``, ``events list
--drift``, ``schema list/show/drift``, a ``schema rebuild`` and ``schema export``."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from process_helpers import DEADLINE_S, SECRET, STRANGER, Proc, free_port, post

from walletpass_tui.cli import main
from walletpass_tui.schemas.reader import SchemaReader
from walletpass_tui.webhooks.models import VERIFIED

pytestmark = pytest.mark.slow

STEADY = 20  # drift is looked for from the 21st sample on


def body(n: int, **changes: Any) -> bytes:
    data: dict[str, Any] = {
        "passId": f"pass_{n:04d}",
        "serialNumber": f"{n:09d}",
        "platform": "apple",
    }
    for key, value in changes.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    return json.dumps({"type": "pass.activated", "data": data}).encode()


# (webhook-id, body, secret): what both listeners receive, in this order.
SENT: list[tuple[str, bytes, str]] = [
    *(
        (f"msg_steady_{n:02d}", body(n, note="once") if n == 5 else body(n), SECRET)
        for n in range(STEADY)
    ),
    ("msg_forged", body(90, serialNumber=1, extra=True, platform=None), STRANGER),
    ("msg_type", body(91, serialNumber=91), SECRET),
    ("msg_added", body(92, channel="web"), SECRET),
    ("msg_missing", body(93, platform=None), SECRET),
    ("msg_again", body(94, serialNumber=94, channel="app", platform=None), SECRET),
    ("msg_last", body(95), SECRET),
]
LEARNED = len(SENT) - 1  # every verified delivery
EXPECTED = {  # the one finding each drifting delivery brought
    "msg_steady_19": ("warm_up_optional", "data.note", None, "string"),  # the 20th
    "msg_type": ("type_changed", "data.serialNumber", "string", "integer"),
    "msg_added": ("field_added", "data.channel", None, "string"),
    "msg_missing": ("field_missing", "data.platform", "string", None),
}


@dataclass
class Received:
    home: Path
    lines: list[str]  # what listen printed on stdout, in order


@contextlib.contextmanager
def environment(home: Path) -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith("WALLETPASS_"):
                mp.delenv(name)
        mp.setenv("WALLETPASS_HOME", str(home))
        mp.setenv("XDG_CONFIG_HOME", str(home.parent / "xdg-config"))
        yield


def learned(home: Path) -> int:
    groups = SchemaReader(home / "deliveries.sqlite3").groups()
    return groups[0].samples if groups else 0


def receive(home: Path, *, as_json: bool) -> Received:
    """Run listen, send SENT, wait until it learned them, stop it; what it printed."""
    port = free_port()
    with environment(home):
        flags = ["--json"] if as_json else []
        proc = Proc("listen", "--port", str(port), "--secret", SECRET, *flags)
    try:
        (proc.err if as_json else proc.out).until(lambda line: line.startswith("History:"))
        url = f"http://127.0.0.1:{port}/webhooks"
        for msg_id, raw, secret in SENT:
            assert post(url, msg_id, raw, secret) == (200 if secret == SECRET else 401)
        if as_json:  # msg_last's object comes last; a drift object may follow it
            proc.out.until(lambda line: '"msg_last"' in line)
        else:
            proc.out.until(lambda line: line.startswith("drift ") and "[msg_missing]" in line)
        deadline = time.monotonic() + DEADLINE_S
        while learned(home) < LEARNED:
            assert time.monotonic() < deadline, "the learner did not catch up"
            time.sleep(0.05)
        assert proc.interrupt() == 0
        lines = proc.out.seen + proc.out.rest()
        assert "Traceback" not in "\n".join(proc.err.seen + proc.err.rest())
    finally:
        proc.kill()
    if not as_json:
        banner = (
            "Listening",
            "Verifying",
            "Send a test delivery:",
            "Attach a dashboard:",
            "History:",
            "Stopped",
        )
        lines = [line for line in lines if not line.startswith(banner)]
    return Received(home, lines)


@pytest.fixture(scope="module")
def text_run(tmp_path_factory: pytest.TempPathFactory) -> Received:
    return receive(tmp_path_factory.mktemp("text") / "home", as_json=False)


@pytest.fixture(scope="module")
def json_run(tmp_path_factory: pytest.TempPathFactory) -> Received:
    return receive(tmp_path_factory.mktemp("json") / "home", as_json=True)


def run(home: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with environment(home), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def run_json(home: Path, *argv: str) -> Any:
    code, out, err = run(home, *argv)
    assert code == 0, err
    return json.loads(out)


def finding(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["kind"], record["path"], record["was"], record["now"])


# -- listen ----------------------------------------------------------------------------------------


def test_listen_prints_one_drift_line_after_each_drifting_delivery(text_run: Received) -> None:
    lines = text_run.lines
    drift = [line for line in lines if line.startswith("drift ")]
    assert drift == [
        "drift pass.activated data.note: present in 1 of the first 20 samples  [msg_steady_19]",
        "drift pass.activated data.serialNumber: string -> integer  [msg_type]",
        "drift pass.activated data.channel: added (string)  [msg_added]",
        "drift pass.activated data.platform: missing (was string)  [msg_missing]",
    ]
    learning = [line for line in lines if line.startswith("schema ")]
    deliveries = [line for line in lines if not line.startswith(("drift ", "schema "))]
    assert len(deliveries) == len(SENT)  # one line per delivery, the forged one included
    # While the first 20 are learned, listen says how far it got; then that drift is looked for,
    # just before what those 20 disagreed on.
    counts = [int(line.split("learning, ")[1].split()[0]) for line in learning[:-1]]
    assert counts == sorted(counts) and all(1 <= count < STEADY for count in counts)
    assert all(line.endswith(f" of {STEADY}") for line in learning[:-1])
    assert learning[-1] == (
        "schema pass.activated: learned from its first 20 deliveries; drift is looked for from "
        "now on"
    )
    # what the warm-up disagreed on is the first drift, after that line (a delivery's own line
    # may be printed between the two: they come from the receiver and the learner)
    assert lines.index(learning[-1]) < lines.index(drift[0])
    between = lines[lines.index(learning[-1]) + 1 : lines.index(drift[0])]
    assert not [line for line in between if line.startswith(("drift ", "schema "))]
    for line in drift:
        webhook_id = line.rsplit("[", 1)[1].rstrip("]")
        [own] = [n for n, text in enumerate(lines) if f"  {webhook_id} " in text]
        assert lines.index(line) > own  # after the delivery's own line
    assert not any("msg_again" in line for line in drift)  # shown again: only counted


def merged(lines: list[str]) -> dict[str, dict[str, Any]]:
    """Each delivery's object by webhook-id, a later ``{"drift": ...}`` object (printed when the
    learner reached a delivery after its object) folded into it."""
    objects = [json.loads(line) for line in lines]
    by_id: dict[int, dict[str, Any]] = {}
    out: dict[str, dict[str, Any]] = {}
    for obj in objects:
        if "verdict" in obj:
            by_id[obj["id"]] = obj
            out[obj["webhook_id"]] = obj
        else:
            assert set(obj) == {"drift", "webhook_id", "id"}, obj
            target = by_id[obj["id"]]
            assert "drift" not in target  # only for an object printed without it
            target["drift"] = obj["drift"]
    return out


def test_listen_json_gives_each_delivery_its_drift_array(json_run: Received) -> None:
    shown = merged(json_run.lines)
    assert list(shown) == [msg_id for msg_id, _, _ in SENT]
    for msg_id, obj in shown.items():
        drift = obj.get("drift", [])
        if msg_id in EXPECTED:
            [record] = drift
            assert finding(record) == EXPECTED[msg_id]
            assert record["webhook_id"] == msg_id and record["attempt_id"] == obj["id"]
            assert record["topic"] == "pass.activated"
            # msg_again shows each finding again: a learner that reads both deliveries in one
            # step (it lags behind on a busy machine) tells the finding with both counted.
            assert record["count"] in (1, 2)
            assert (record["note"] is not None) == (record["kind"] == "warm_up_optional")
        else:
            assert drift == [], msg_id
    assert shown["msg_forged"]["verdict"] == "rejected"


# -- the history and the schema commands ---------------------------------------------------------


def test_events_show_json_gives_each_attempt_its_drift(json_run: Received) -> None:
    for msg_id, expected in EXPECTED.items():
        [attempt] = run_json(json_run.home, "events", "show", msg_id, "--json")["attempts"]
        [record] = attempt["drift"]
        assert finding(record) == expected
        # msg_again showed it again (what the first 20 disagreed on is said once)
        assert record["count"] == (1 if expected[0] == "warm_up_optional" else 2)
    for msg_id in ("msg_steady_00", "msg_again", "msg_forged"):
        [attempt] = run_json(json_run.home, "events", "show", msg_id, "--json")["attempts"]
        assert attempt["drift"] == []
    code, out, _ = run(json_run.home, "events", "show", "msg_type")
    assert code == 0
    assert "  drift:    pass.activated data.serialNumber: string -> integer" in out


def test_events_list_drift_lists_only_the_drifting_messages(json_run: Received) -> None:
    listed = run_json(json_run.home, "events", "list", "--drift", "--json")
    assert [m["webhook_id"] for m in listed] == [
        "msg_missing",
        "msg_added",
        "msg_type",
        "msg_steady_19",
    ]
    for message in listed:
        [record] = message["drift"]
        assert finding(record) == EXPECTED[message["webhook_id"]]
        assert message["verdict"] == VERIFIED and message["attempts"] == 1
    code, out, _ = run(json_run.home, "events", "list", "--drift")
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split()[-1] == "DRIFT" and len(rows) == 4
    assert "msg_type" in rows[2] and rows[2].endswith("type_changed data.serialNumber")
    assert "msg_again" not in out and "msg_steady_18" not in out
    assert (
        run_json(json_run.home, "events", "list", "--drift", "--limit", "1", "--json")[0][
            "webhook_id"
        ]
        == "msg_missing"
    )
    assert (
        run_json(json_run.home, "events", "list", "--drift", "--verdict", "rejected", "--json")
        == []
    )


def test_schema_drift_lists_each_finding_once_with_its_count(json_run: Received) -> None:
    records = run_json(json_run.home, "schema", "drift", "--json")
    assert [(r["webhook_id"], *finding(r), r["count"]) for r in records] == [
        ("msg_missing", *EXPECTED["msg_missing"], 2),
        ("msg_added", *EXPECTED["msg_added"], 2),
        ("msg_type", *EXPECTED["msg_type"], 2),
        ("msg_steady_19", *EXPECTED["msg_steady_19"], 1),
    ]
    for record in records:
        assert {"topic", "path", "kind", "was", "now", "webhook_id", "seen_at", "count"} <= set(
            record
        )
    since = records[1]["seen_at"]
    assert len(run_json(json_run.home, "schema", "drift", "--since", since, "--json")) == 2
    assert records[-1]["note"] == "present in 1 of the first 20 samples"
    only = run_json(json_run.home, "schema", "drift", "--topic", "deactivated", "--json")
    assert only == []
    code, out, _ = run(json_run.home, "schema", "drift")
    assert code == 0 and "warm_up_optional" in out.splitlines()[-1]


def test_a_forged_delivery_teaches_nothing(json_run: Received) -> None:
    shown = run_json(json_run.home, "schema", "show", "activated", "--json")
    assert shown["samples"] == LEARNED
    paths = {f["path"]: f for f in shown["fields"]}
    assert "data.extra" not in paths
    assert paths["data.serialNumber"]["types"] == {"string": LEARNED - 2, "integer": 2}
    assert paths["data.platform"]["presence"] == round((LEARNED - 2) / LEARNED, 4)
    assert paths["data.passId"]["example"] == "pass_0000"
    assert all("msg_forged" not in json.dumps(f) for f in shown["fields"])


def test_schema_list_shows_the_topic(json_run: Received) -> None:
    [row] = run_json(json_run.home, "schema", "list", "--json")
    assert (row["label"], row["samples"], row["paths"], row["drift"]) == (
        "pass.activated",
        LEARNED,
        7,
        4,
    )
    assert (row["learning"], row["drift_after"]) == (False, STEADY)
    code, out, _ = run(json_run.home, "schema", "list")
    assert code == 0 and out.splitlines()[1].split()[:4] == [
        "pass.activated",
        str(LEARNED),
        "7",
        "4",
    ]


def test_a_rebuild_gives_the_schema_learned_live(json_run: Received) -> None:
    live = run_json(json_run.home, "schema", "show", "activated", "--json")
    drift = run_json(json_run.home, "schema", "drift", "--json")
    code, out, err = run(json_run.home, "schema", "rebuild")
    assert code == 0, err
    assert (
        out
        == f"Learned {LEARNED} verified deliveries again from {json_run.home / 'deliveries.sqlite3'}.\n"
    )
    assert err == ""  # no progress line: stderr is not a terminal
    assert run_json(json_run.home, "schema", "show", "pass.activated", "--json") == live
    assert run_json(json_run.home, "schema", "drift", "--json") == drift


def test_schema_export_writes_code_every_delivery_fits(json_run: Received) -> None:
    bodies = [json.loads(raw) for _, raw, secret in SENT if secret == SECRET]
    code, out, err = run(json_run.home, "schema", "export", "activated", "--format", "jsonschema")
    assert code == 0, err
    validator = jsonschema.Draft202012Validator(json.loads(out))
    for doc in bodies:
        validator.validate(doc)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"type": "pass.activated", "data": {"passId": 1}})
    code, out, _ = run(json_run.home, "schema", "export", "activated", "--format", "typescript")
    assert code == 0 and "export interface PassActivated {" in out
    code, out, _ = run(json_run.home, "schema", "export", "activated", "--format", "pydantic")
    assert code == 0
    module_file = json_run.home.parent / "pass_activated_model.py"
    module_file.write_text(out)  # as a person would: > pass_activated_model.py
    spec = importlib.util.spec_from_file_location("pass_activated_model", module_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # pydantic resolves the models' names through it
    try:
        spec.loader.exec_module(module)
        for doc in bodies:
            module.PassActivated.model_validate(doc)
    finally:
        del sys.modules[spec.name]
