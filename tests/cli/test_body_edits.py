"""``--set PATH=VALUE`` and ``--fixture FILE`` of ``trigger`` and ``sim emit``: the changed fields
arrive at a real receiver (``listen``), through the real simulator for ``sim emit``; malformed
input is refused before anything is sent (exit 2), naming the item and what is wrong."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from process_helpers import SECRET, Proc, free_port, start_listen

from walletpass_tui.cli import main
from walletpass_tui.sim.body_edit import BodyEditError, apply, parse_assignment, parse_path
from walletpass_tui.sim.fixtures import MAX_EVENTS
from walletpass_tui.sim.service import SimulatedService

SIM_KEY = "sk_sim_BodyEdits0123456789abcdefABCD"


@pytest.fixture
def procs(clean_env: Path) -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for proc in started:
        proc.kill()


def received(listen: Proc, count: int) -> list[dict[str, Any]]:
    """The next ``count`` attempts listen printed, with their bodies as JSON."""
    attempts = [json.loads(listen.out.next()) for _ in range(count)]
    for a in attempts:
        assert a["verdict"] == "verified", a
        a["doc"] = json.loads(a["body"])
    return attempts


# -- through real processes --------------------------------------------------------------------


@pytest.mark.slow
def test_trigger_set_and_fixture_arrive_at_a_real_receiver(
    procs: list[Proc], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listen, url = start_listen()
    procs.append(listen)
    target = ["--to", url, "--secret", SECRET]

    code = main(
        [
            "trigger",
            "activated",
            *target,
            "--set",
            "data.passId=pass_1",
            "--set",
            "data.count=3",
            "--set",
            'data.label="3"',
            "--set",
            "data.extra.nested=true",
        ]
    )
    assert code == 0, capsys.readouterr().err
    (one,) = received(listen, 1)
    data = one["doc"]["data"]
    assert data["passId"] == "pass_1" and one["pass_id"] == "pass_1"
    assert data["count"] == 3 and data["label"] == "3" and data["extra"] == {"nested": True}
    assert one["doc"]["type"] == "pass.activated" and "serialNumber" in data  # the rest made up

    fixture = tmp_path / "events.json"
    fixture.write_text(
        json.dumps(
            [
                {"topic": "activated", "set": {"data.passId": "pass_a", "data.platform": "apple"}},
                {"type": "pass.deactivated", "data": {"passId": "pass_b"}, "custom": [1, 2]},
                {"topic": "pass.deactivated"},
            ]
        )
    )
    code = main(["trigger", "--fixture", str(fixture), *target])
    out = capsys.readouterr().out
    assert code == 0
    assert "Sent 3 event(s) in order: 3 answered 2xx." in out
    first, second, third = received(listen, 3)  # sent one after the other: in order
    assert first["doc"]["data"]["passId"] == "pass_a"
    assert first["doc"]["data"]["platform"] == "apple" and first["topic"] == "pass.activated"
    assert second["doc"] == {
        "type": "pass.deactivated",
        "data": {"passId": "pass_b"},
        "custom": [1, 2],
    }
    assert third["topic"] == "pass.deactivated" and third["doc"]["data"]["passId"]
    assert len({first["webhook_id"], second["webhook_id"], third["webhook_id"]}) == 3


@pytest.mark.slow
def test_trigger_set_changes_a_json_body_file(
    procs: list[Proc], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listen, url = start_listen()
    procs.append(listen)
    body = tmp_path / "body.json"
    body.write_text('{"type": "pass.activated", "data": {"passId": "p", "tags": ["a", "b"]}}')
    code = main(
        [
            "trigger",
            "activated",
            "--to",
            url,
            "--secret",
            SECRET,
            "--body-file",
            str(body),
            "--set",
            "data.tags[1]=c",
        ]
    )
    assert code == 0, capsys.readouterr().err
    (one,) = received(listen, 1)
    assert one["doc"]["data"] == {"passId": "p", "tags": ["a", "c"]}


async def test_sim_emit_set_and_fixture_arrive_through_the_simulator(
    procs: list[Proc], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    service = SimulatedService(api_key=SIM_KEY)
    await service.start("127.0.0.1", 0)
    try:
        port = free_port()
        async with httpx.AsyncClient(trust_env=False, timeout=10) as http:
            answer = await http.post(
                f"{service.url}/v0/webhookEndpoints",
                headers={"Authorization": f"Bearer {SIM_KEY}"},
                json={
                    "url": f"http://127.0.0.1:{port}/webhooks",
                    "enabledTopics": ["pass.activated", "pass.deactivated"],
                    "enabled": True,
                },
            )
        assert answer.status_code == 201, answer.text
        listen, _ = await asyncio.to_thread(start_listen, port=port, secret=answer.json()["secret"])
        procs.append(listen)
        common = ["--sim", service.url, "--api-key", SIM_KEY]

        argv = ["sim", "emit", "deactivated", *common, "--set", "data.passId=pass_sim"]
        assert await asyncio.to_thread(main, argv) == 0
        assert "Emitted msg_" in capsys.readouterr().out
        (one,) = await asyncio.to_thread(received, listen, 1)
        assert one["doc"]["data"]["passId"] == "pass_sim" and one["topic"] == "pass.deactivated"

        fixture = tmp_path / "events.json"
        fixture.write_text(
            json.dumps(
                [
                    {"topic": "activated", "set": {"data.passId": "pass_f1"}},
                    {"type": "pass.deactivated", "data": {"passId": "pass_f2"}},
                ]
            )
        )
        argv = ["sim", "emit", "--fixture", str(fixture), *common, "--json"]
        assert await asyncio.to_thread(main, argv) == 0
        answers = json.loads(capsys.readouterr().out)
        assert [a["topic"] for a in answers] == ["pass.activated", "pass.deactivated"]
        got = await asyncio.to_thread(received, listen, 2)
        # The simulator delivers each on its own schedule: the order of arrival may differ.
        assert sorted(a["doc"]["data"]["passId"] for a in got) == ["pass_f1", "pass_f2"]
    finally:
        await service.stop()


# -- refused before anything is sent ------------------------------------------------------------

CLOSED = "http://127.0.0.1:9/webhooks"  # nothing is sent: a try would fail with exit 1


@pytest.mark.parametrize(
    ("items", "fragment"),
    [
        ("{nope", "is not valid JSON"),
        ('{"topic": "pass.activated"}', "must hold a JSON list of events"),
        ("[]", "the list is empty"),
        ('[{"topic": "activated"}, 3]', "item [1] is not an object"),
        ('[{"topic": "pass.exploded"}]', "item [0]: Unknown topic"),
        ('[{"topic": "activated", "sett": {}}]', "item [0] has 'sett' next to its topic"),
        ('[{"set": {"data.x": 1}}]', 'item [0] has a "set" but no "topic"'),
        ('[{"topic": "activated", "set": [1]}]', 'item [0]: "set" must be an object'),
        ('[{"topic": "activated", "set": {"data..x": 1}}]', "item [0]: 'data..x' is not a path"),
        (
            '[{"topic": "activated"}, {"topic": "activated", "set": {"type.x": 1}}]',
            "item [1]: type.x: type is a string, not an object",
        ),
        ('[{"type": "pass.activated", "n": NaN}]', "is not valid JSON"),
    ],
)
def test_a_malformed_fixture_is_refused_with_the_item_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], items: str, fragment: str, clean_env: Path
) -> None:
    fixture = tmp_path / "bad.json"
    fixture.write_text(items)
    code = main(["trigger", "--fixture", str(fixture), "--to", CLOSED, "--secret", SECRET])
    err = capsys.readouterr().err
    assert code == 2, err
    assert fragment in err and err.count("\n") == 1


def test_sim_emit_refuses_a_fixture_body_without_a_known_topic(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    fixture = tmp_path / "events.json"
    fixture.write_text('[{"topic": "activated"}, {"kind": "pass.activated"}]')
    argv = ["sim", "emit", "--fixture", str(fixture), "--sim", "http://127.0.0.1:9"]
    assert main([*argv, "--api-key", "sk_sim_x"]) == 2
    assert "item [1] is a body naming no topic the service knows" in capsys.readouterr().err


def test_fixture_size_and_count_are_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    big = tmp_path / "big.json"
    big.write_text('[{"type": "pass.activated", "pad": "' + "x" * (5 * 1024 * 1024) + '"}]')
    assert main(["trigger", "--fixture", str(big), "--to", CLOSED, "--secret", SECRET]) == 2
    assert "larger than 4194304 bytes" in capsys.readouterr().err
    many = tmp_path / "many.json"
    many.write_text(json.dumps([{"topic": "activated"}] * (MAX_EVENTS + 1)))
    assert main(["trigger", "--fixture", str(many), "--to", CLOSED, "--secret", SECRET]) == 2
    assert f"at most {MAX_EVENTS:,}" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["trigger", "activated", "--fixture", "f.json"],
        ["trigger", "--fixture", "f.json", "--set", "data.x=1"],
        ["trigger", "--fixture", "f.json", "--id", "msg_1"],
        ["trigger"],
    ],
)
def test_fixture_flags_that_contradict_it_are_usage_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], clean_env: Path
) -> None:
    assert main([*argv, "--to", CLOSED, "--secret", SECRET]) == 2
    err = capsys.readouterr().err
    assert ("--fixture" in err) and err.count("\n") == 1


def test_set_paths_into_non_objects_are_usage_errors(
    capsys: pytest.CaptureFixture[str], clean_env: Path
) -> None:
    argv = ["trigger", "activated", "--to", CLOSED, "--secret", SECRET]
    assert main([*argv, "--set", "data.passId.x=1"]) == 2
    assert "data.passId is a string, not an object" in capsys.readouterr().err
    assert main([*argv, "--set", "no-equals-sign"]) == 2
    assert "give PATH=VALUE" in capsys.readouterr().err


# -- the rules, directly ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("data.passId=pass_1", "pass_1"),
        ("data.count=3", 3),
        ("data.ratio=0.5", 0.5),
        ("data.on=true", True),
        ("data.gone=null", None),
        ('data.label="3"', "3"),
        ('data.obj={"a": [1]}', {"a": [1]}),
        ("data.empty=", ""),
        ("data.eq=a=b", "a=b"),
        ("data.nan=NaN", "NaN"),  # not JSON: kept as text
        ("data.huge=1e999", "1e999"),
    ],
)
def test_values_are_json_where_they_parse(text: str, value: Any) -> None:
    assert parse_assignment(text).value == value


def test_paths_with_keys_and_list_items() -> None:
    assert parse_path("data.items[0].name") == ("data", "items", 0, "name")
    assert parse_path("a[1][2]") == ("a", 1, 2)
    for bad in ("", "a..b", "a[x]", "[0]", "a.", "a[0]b"):
        with pytest.raises(BodyEditError):
            parse_path(bad)


def test_apply_creates_objects_and_refuses_what_is_in_the_way() -> None:
    doc: dict[str, Any] = {"data": {"passId": "p", "tags": ["a"], "n": None}}
    apply(doc, ("data", "new", "deep"), 1)
    apply(doc, ("data", "tags", 0), "z")
    assert doc["data"]["new"] == {"deep": 1} and doc["data"]["tags"] == ["z"]
    refusals = {
        ("data", "passId", "x"): "data.passId is a string, not an object",
        ("data", "n", "x"): "data.n is null, not an object",
        ("data", "tags", "x"): "data.tags is a list of 1 item, not an object",
        ("data", 0): "data is an object, not a list",
        ("data", "tags", 5): "there is no item [5]",
        ("data", "missing", 0): "only objects are created on the way",
    }
    for path, message in refusals.items():
        with pytest.raises(BodyEditError, match=message.replace("[", r"\[").replace("]", r"\]")):
            apply(doc, path, 1)
