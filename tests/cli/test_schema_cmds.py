"""The ``schema`` commands around what was learned: homes with no history or nothing learned (said
so, nothing created), topic names, topics learned from the wire, the templates taught by
``templates``, a rebuild's progress on a terminal, and what the read-only commands load."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from process_helpers import CLEAR, run_with_stderr_on_a_pty
from service_helpers import TEMPLATES, Cli

from walletpass_tui.cli import main
from walletpass_tui.schemas.catalog import MAX_GROUPS
from walletpass_tui.schemas.schema_file import schemas_path
from walletpass_tui.webhooks.models import VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store

NOW = 1_795_000_000_000


def attempt(n: int, body: Any, topic: str | None = "pass.activated") -> Attempt:
    return Attempt(
        received_at_ms=NOW + n,
        method="POST",
        path="/webhooks",
        headers=(),
        body=json.dumps(body).encode(),
        verdict=VERIFIED,
        reason="verified",
        status=200,
        webhook_id=f"msg_{n:05d}",
        topic=topic,
    )


async def seed(home: Path, attempts: list[Attempt]) -> Path:
    await asyncio.to_thread(home.mkdir, parents=True, exist_ok=True)
    async with await Store.open(home / "deliveries.sqlite3") as store:
        await asyncio.gather(*(store.record(a) for a in attempts))
        await store.settled()
    return home / "deliveries.sqlite3"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def files_in(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir()) if home.exists() else []


# -- nothing there yet -----------------------------------------------------------------------------


def test_without_a_history_each_command_says_so_and_creates_nothing(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv in (["schema", "list"], ["schema", "show", "activated"], ["schema", "drift"]):
        code, out, _ = run(capsys, *argv)
        assert code == 0 and out.startswith("No history yet in "), (argv, out)
    assert run(capsys, "schema", "list", "--json")[1] == "[]\n"
    assert run(capsys, "schema", "drift", "--json")[1] == "[]\n"
    shown = json.loads(run(capsys, "schema", "show", "activated", "--json")[1])
    assert (shown["topic"], shown["samples"], shown["fields"]) == ("pass.activated", 0, [])
    for argv in (["schema", "export", "activated"], ["schema", "rebuild"]):
        code, out, err = run(capsys, *argv)
        assert code == 1 and out == ""
        assert err.startswith("walletpass-tui: error: No history yet in ") and err.count("\n") == 1
    assert not clean_env.exists()


async def test_with_a_history_but_nothing_learned_yet_nothing_is_created(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = await seed(clean_env, [attempt(1, {"type": "pass.activated"})])
    before = files_in(clean_env)
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "list")
    assert code == 0 and out.startswith("Nothing learned yet")
    assert (await asyncio.to_thread(run, capsys, "schema", "list", "--json"))[1] == "[]\n"
    assert (await asyncio.to_thread(run, capsys, "schema", "drift", "--json"))[1] == "[]\n"
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "show", "deactivated")
    assert code == 0 and out.startswith("Nothing learned for pass.deactivated yet")
    code, _, err = await asyncio.to_thread(run, capsys, "schema", "export", "activated")
    assert code == 1 and "Nothing is learned for pass.activated yet" in err
    assert err.count("\n") == 1
    assert files_in(clean_env) == before
    assert not schemas_path(history).exists()


# -- topics ----------------------------------------------------------------------------------------


async def test_topics_by_short_name_the_unknown_group_and_topics_learned_from_the_wire(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(
        clean_env,
        [
            attempt(1, {"type": "pass.activated", "data": {"passId": "p1"}}),
            attempt(2, {"type": "pass.expired", "data": {"reason": "date"}}, "pass.expired"),
            attempt(3, {"hello": [1, 2]}, None),
        ],
    )
    code, _, err = await asyncio.to_thread(run, capsys, "schema", "rebuild")
    assert code == 0, err

    def show(name: str) -> dict[str, Any]:
        code, out, err = run(capsys, "schema", "show", name, "--json")
        assert code == 0, err
        return json.loads(out)  # type: ignore[no-any-return]

    def paths(name: str) -> set[str]:
        return {f["path"] for f in show(name)["fields"]}

    assert await asyncio.to_thread(show, "activated") == await asyncio.to_thread(
        show, "pass.activated"
    )
    assert "data.passId" in await asyncio.to_thread(paths, "activated")
    assert "data.reason" in await asyncio.to_thread(paths, "pass.expired")
    assert "data.reason" in await asyncio.to_thread(paths, "expired")
    for name in ("unknown", "topic-unknown", "topic unknown"):
        unknown = await asyncio.to_thread(show, name)
        assert unknown["topic"] is None and unknown["label"] == "topic unknown"
        assert {f["path"] for f in unknown["fields"]} == {"$", "hello", "hello[]"}
    listed = json.loads((await asyncio.to_thread(run, capsys, "schema", "list", "--json"))[1])
    assert {row["label"] for row in listed} == {"pass.activated", "pass.expired", "topic unknown"}

    for argv in (
        ["schema", "show", "bogus"],
        ["schema", "export", "pass.bogus", "--format", "typescript"],
        ["schema", "drift", "--topic", "bogus"],
    ):
        code, out, err = await asyncio.to_thread(run, capsys, *argv)
        assert code == 2 and out == "", argv
        [line] = err.splitlines()
        assert line.startswith("walletpass-tui: error: Unknown topic 'bogus'") or (
            "Unknown topic 'pass.bogus'" in line
        )
        assert "templates" in line and "unknown" in line and "pass.expired" in line


async def test_a_topic_still_learning_says_how_far_it_got(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, [attempt(n, {"type": "pass.activated", "n": n}) for n in range(3)])
    assert (await asyncio.to_thread(run, capsys, "schema", "rebuild"))[0] == 0
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "list")
    assert code == 0 and out.splitlines()[1].endswith("learning, 3 of 20")
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "show", "activated")
    assert code == 0 and out.splitlines()[1] == (
        "learning, 3 of 20: drift is looked for once pass.activated has 20 samples; then what "
        "the first ones disagreed on is reported."
    )
    [row] = json.loads((await asyncio.to_thread(run, capsys, "schema", "list", "--json"))[1])
    assert (row["learning"], row["drift_after"]) == (True, 20)
    shown = json.loads(
        (await asyncio.to_thread(run, capsys, "schema", "show", "activated", "--json"))[1]
    )
    assert (shown["learning"], shown["samples"]) == (True, 3)


async def test_value_sets_are_shown_with_shares_and_every_topic_exports_as_one_document(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from openapi_spec_validator import validate

    history = [
        attempt(n, {"type": "pass.activated", "data": {"platform": ("apple", "google")[n % 2]}})
        for n in range(60)
    ]
    history += [
        attempt(100 + n, {"type": "pass.deactivated"}, "pass.deactivated") for n in range(3)
    ]
    await seed(clean_env, history)
    assert (await asyncio.to_thread(run, capsys, "schema", "rebuild"))[0] == 0
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "show", "activated")
    header, *rows = out.splitlines()[1:]
    assert header.split()[-1] == "VALUES"
    [platform] = [row for row in rows if row.lstrip().startswith("data.platform")]
    assert platform.endswith('"apple" 50.0%, "google" 50.0%')
    shown = json.loads(
        (await asyncio.to_thread(run, capsys, "schema", "show", "activated", "--json"))[1]
    )
    [field] = [f for f in shown["fields"] if f["path"] == "data.platform"]
    assert field["values"] == [
        {"value": "apple", "count": 30, "share": 0.5},
        {"value": "google", "count": 30, "share": 0.5},
    ]
    code, out, err = await asyncio.to_thread(run, capsys, "schema", "export", "--format", "openapi")
    assert code == 0, err
    doc = json.loads(out)
    validate(doc)
    assert list(doc["webhooks"]) == ["pass.activated", "pass.deactivated"]
    code, out, _ = await asyncio.to_thread(
        run, capsys, "schema", "export", "--format", "typescript"
    )
    assert code == 0 and "export type WalletPassEvent = PassActivated | PassDeactivated;" in out
    assert 'platform: "apple" | "google";' in out


async def test_exporting_every_topic_before_any_is_learned_says_so(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, [attempt(1, {"hello": 1}, None)])
    assert (await asyncio.to_thread(run, capsys, "schema", "rebuild"))[0] == 0
    code, out, err = await asyncio.to_thread(run, capsys, "schema", "export", "--format", "openapi")
    assert (code, out) == (1, "")
    assert err == (
        "walletpass-tui: error: No topic is learned yet; topics are learned from verified "
        "deliveries.\n"
    )


async def test_topics_from_the_wire_never_collide_with_our_names(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = ["templates", "unknown", "Topic Unknown", "activated", " pass.activated", "topic:x"]
    await seed(
        clean_env,
        [attempt(n, {"type": t, "data": {f"field{n}": n}}, t) for n, t in enumerate(wire)]
        + [attempt(10, {"type": "pass.activated", "data": {"passId": "p"}}), attempt(11, {}, None)],
    )
    assert (await asyncio.to_thread(run, capsys, "schema", "rebuild"))[0] == 0
    listed = json.loads((await asyncio.to_thread(run, capsys, "schema", "list", "--json"))[1])
    labels = {row["label"]: row["topic"] for row in listed}
    assert labels == {
        "topic:templates": "templates",
        "topic:unknown": "unknown",
        "topic:Topic Unknown": "Topic Unknown",
        "topic:activated": "activated",
        "topic: pass.activated": " pass.activated",
        "topic:topic:x": "topic:x",
        "pass.activated": "pass.activated",
        "topic unknown": None,
    }
    # Each name `schema list` prints reaches that group, and only it.
    for label, topic in labels.items():
        code, out, err = await asyncio.to_thread(run, capsys, "schema", "show", label, "--json")
        assert code == 0, err
        shown = json.loads(out)
        assert (shown["topic"], shown["label"]) == (topic, label)
        if topic in wire:
            assert {f["path"] for f in shown["fields"]} >= {f"data.field{wire.index(topic)}"}
        code, out, _ = await asyncio.to_thread(run, capsys, "schema", "export", label)
        assert code == 0 and json.loads(out)["title"] == label
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "list")
    assert "topic:templates" in out and "topic:unknown" in out
    # Our own names keep their meaning.
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "show", "templates")
    assert code == 0 and out.startswith("Nothing learned for templates yet")


async def test_a_topic_of_control_characters_is_reached_by_the_name_schema_list_shows(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = ["\x1b[31mevil\x1b[0m", "bidi\u202egnp.exe", "nl\nline"]
    await seed(
        clean_env, [attempt(n, {"type": t, "data": {f"f{n}": n}}, t) for n, t in enumerate(wire)]
    )
    assert (await asyncio.to_thread(run, capsys, "schema", "rebuild"))[0] == 0
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "list")
    shown = [line.split()[0] for line in out.splitlines()[1:]]
    assert "\x1b" not in out and len(shown) == len(wire)
    for name in shown:  # each typed as schema list shows it, alone or after topic:
        for typed in (name, "topic:" + name):
            code, out, err = await asyncio.to_thread(run, capsys, "schema", "show", typed, "--json")
            assert code == 0, err
            doc = json.loads(out)
            n = wire.index(doc["topic"])
            assert [f["path"] for f in doc["fields"]][-1] == f"data.f{n}"
    # A name that reaches none is refused with the names as they can be typed.
    code, out, err = await asyncio.to_thread(run, capsys, "schema", "show", "\\x1b[31mgood")
    assert code == 2 and "Unknown topic '\\x1b[31mgood'" in err
    assert "\\x1b[31mevil\\x1b[0m" in err and "\\\\x1b" not in err


async def test_topics_beyond_the_bound_are_said_where_one_looks(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wire = [f"topic.{n:03d}" for n in range(MAX_GROUPS + 3)]
    await seed(
        clean_env,
        [attempt(n, {"type": t}, t) for n, t in enumerate(wire)]
        + [attempt(500, {"type": "pass.deactivated"}, "pass.deactivated")],
    )
    assert (await asyncio.to_thread(run, capsys, "schema", "rebuild"))[0] == 0
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "show", "deactivated")
    assert code == 0 and out.startswith("pass.deactivated: 1 sample(s)")
    said = (
        "3 verified deliveries of further topics were not learned: schemas are learned for at "
        f"most {MAX_GROUPS} topics from the wire, the service's own topics always."
    )
    code, out, _ = await asyncio.to_thread(run, capsys, "schema", "list")
    assert code == 0 and out.splitlines()[-1] == said
    code, out, err = await asyncio.to_thread(run, capsys, "schema", "show", "topic.101")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "Unknown topic 'topic.101'" in err and err.endswith(f" {said}\n")
    assert f"and {MAX_GROUPS - 10} more ('schema list' names them)." in err


@pytest.mark.parametrize(
    ("damage", "reader"),
    [
        ("UPDATE groups SET grp = 'nonsense'", "list"),
        ("UPDATE groups SET samples = 'many'", "list"),
        ("UPDATE paths SET segment = 'sideways'", "show"),
        ("UPDATE paths SET types = 'not json'", "export"),
        ("UPDATE drift SET kind = 'field_renamed'", "drift"),
        ("UPDATE paths SET first_seen_ms = 9000000000000000000", "show"),  # past year 9999
        ("UPDATE drift SET seen_at_ms = 9000000000000000000", "drift"),
    ],
)
async def test_a_schema_file_whose_rows_are_not_ours_is_one_line_not_a_traceback(
    clean_env: Path, capsys: pytest.CaptureFixture[str], damage: str, reader: str
) -> None:
    history = await seed(
        clean_env,
        [attempt(n, {"type": "pass.activated", "n": n if n < 25 else "x"}) for n in range(30)],
    )
    assert (await asyncio.to_thread(run, capsys, "schema", "rebuild"))[0] == 0
    with sqlite3.connect(schemas_path(history)) as db:
        db.execute(damage)
    damaged = (
        f"walletpass-tui: error: The schema file {schemas_path(history)} is damaged; it is "
        "learned again from the history when the receiver next starts (or rebuild it now).\n"
    )
    for action in ("list", "show", "drift", "export", "show --json"):
        argv = ["schema", *action.split()[:1]]
        argv += ["activated"] if action.startswith(("show", "export")) else []
        argv += action.split()[1:]
        code, out, err = await asyncio.to_thread(run, capsys, *argv)  # never a traceback
        if action.split()[0] == reader:
            assert (code, out, err) == (1, "", damaged)
        else:  # what it reads is whole, or it says in one line what is not
            assert code == 0 or (code, out, err.count("\n")) == (1, "", 1), argv
    code, out, err = await asyncio.to_thread(run, capsys, "schema", "rebuild")
    assert code == 0, err
    assert (await asyncio.to_thread(run, capsys, "schema", "list"))[0] == 0


def test_a_bad_since_or_format_is_a_usage_error(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "schema", "drift", "--since", "yesterday")
    assert code == 2 and "is neither a duration nor an ISO 8601 time" in err
    code, _, err = run(capsys, "schema", "export", "activated", "--format", "rust")
    assert code == 2 and "invalid choice: 'rust'" in err


# -- the templates ---------------------------------------------------------------------------------


def template(n: int, **extra: Any) -> dict[str, Any]:
    return {"id": f"tpl_{n:04d}", "name": f"Card {n}", "style": {"color": "#123456"}, **extra}


async def test_listing_the_templates_teaches_their_schema_without_a_history(cli: Cli) -> None:
    listing = [template(n) for n in range(21)]
    cli.api.answer("GET", TEMPLATES, json={"data": listing})
    result = await cli.run("templates", "--json")
    assert result.code == 0 and result.err == ""
    assert json.loads(result.out) == listing
    history = cli.home / "deliveries.sqlite3"
    assert not history.exists()  # no history is made: only the schema file beside it
    assert schemas_path(history).exists()
    shown = json.loads((await cli.run("schema", "show", "templates", "--json")).out)
    assert (shown["group"], shown["samples"]) == ("templates", 21)
    assert {f["path"] for f in shown["fields"]} == {"$", "id", "name", "style", "style.color"}

    again = await cli.run("templates")  # the same templates again: nothing new learned
    assert again.code == 0 and again.err == ""
    assert json.loads((await cli.run("schema", "list", "--json")).out)[0]["samples"] == 21

    cli.api.answer("GET", TEMPLATES, json={"data": [*listing, template(99, barcode="qr")]})
    drifted = await cli.run("templates")
    assert drifted.code == 0
    assert drifted.err == "drift templates barcode: added (string)\n"
    [record] = json.loads((await cli.run("schema", "drift", "--json")).out)
    assert (record["group"], record["topic"], record["path"], record["kind"]) == (
        "templates",
        None,
        "barcode",
        "field_added",
    )


# -- rebuild ---------------------------------------------------------------------------------------


async def test_rebuild_shows_progress_on_a_terminal_only(
    clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    await seed(clean_env, [attempt(n, {"type": "pass.activated", "n": n}) for n in range(300)])
    code, shown = await asyncio.to_thread(
        run_with_stderr_on_a_pty, "schema", "rebuild", stdout=subprocess.DEVNULL
    )
    assert code == 0
    assert "learned 0 of 300" in shown and shown.endswith(CLEAR)
    code, out, err = await asyncio.to_thread(run, capsys, "schema", "rebuild")
    assert code == 0 and err == ""
    assert out.startswith("Learned 300 verified deliveries again from ")


# -- start-up --------------------------------------------------------------------------------------

HEAVY = ("textual", "rich", "aiohttp", "httpx", "standardwebhooks", "httptools")
PROBE = """
import io, json, sys, contextlib
from walletpass_tui.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(sys.argv[1:])
print(json.dumps({"code": code, "heavy": sorted(m for m in %r if m in sys.modules)}))
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["schema", "list"],
        ["schema", "show", "activated", "--json"],
        ["schema", "drift"],
        ["schema", "export", "activated", "--format", "typescript"],
        ["events", "list", "--drift"],
    ],
)
async def test_reading_the_schemas_loads_no_ui_and_no_http_stack(
    clean_env: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    await seed(clean_env, [attempt(1, {"type": "pass.activated", "data": {"passId": "p"}})])
    assert (await asyncio.to_thread(run, capsys, "schema", "rebuild"))[0] == 0
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", PROBE % (HEAVY,), *argv],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    result = json.loads(done.stdout)
    assert result == {"code": 0, "heavy": []}, done.stderr
