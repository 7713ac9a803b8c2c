"""Bodies that are not plain JSON are matched by the rules the schema learner reads them with:
the paths a query finds in a body are the paths the learner learns from it, and the store (with
its field index, and without it) agrees with the live log's test of one attempt.

Which rules, said once here:

* not UTF-8 JSON: no fields at all (``has:$`` finds JSON bodies only, ``-has:$`` the others);
* a key given twice, in a body up to 64 KiB: its last value only (json.loads); in a larger body
  (read by the scanner): both values;
* nested deeper than 64 levels: the values below are not read (nor learned); a body nested
  100,000 deep is read, down to that depth;
* ``1e999`` is an infinite number, an integer of 30 digits a (64-bit float) number the size it
  says, NaN equals nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import factories
import pytest
from query_helpers import flt, index_all

from walletpass_tui.query.values import body_fields
from walletpass_tui.schemas.catalog import Catalog, Delivery
from walletpass_tui.schemas.model import GroupKey
from walletpass_tui.webhooks.store import Store

PAD = " " * (70 * 1024)  # past the 64 KiB json.loads reads: the scanner reads the body


def nested(depth: int) -> bytes:
    """A value at depth ``depth`` (``{"a": {"a": ... 1}}``)."""
    return ('{"a": ' * depth + "1" + "}" * depth).encode()


BODIES: dict[str, bytes] = {
    "not_json": b"\xff\xfe not json",
    "cut": b'{"data": {"platform": "google"',
    "dup_small": b'{"tier": "gold", "tier": "silver"}',
    "dup_large": ('{"tier": "gold", "pad": "' + PAD + '", "tier": "silver"}').encode(),
    "deep_64": nested(64),
    "deep_65": nested(65),
    "deep_100k": nested(100_000),
    "inf": b'{"n": 1e999}',
    "big_int": b'{"n": 123456789012345678901234567890}',
    "nan": b'{"n": NaN}',
    "neg_inf": b'{"n": -Infinity}',
    "plain": b'{"n": 7, "data": {"platform": "Google"}}',
}
A64 = ".".join(["a"] * 64)
A65 = ".".join(["a"] * 65)

CASES: dict[str, set[str]] = {
    "has:$": {k for k in BODIES if k not in ("not_json", "cut")},
    "-has:$": {"not_json", "cut"},
    "tier:silver": {"dup_small", "dup_large"},
    "tier:gold": {"dup_large"},
    f"has:{A64}": {"deep_64", "deep_65", "deep_100k"},
    f"{A64}:1": {"deep_64"},
    "n>1e308": {"inf", "big_int"} - {"big_int"},
    "n>1e29": {"inf", "big_int"},
    "n:123456789012345678901234567890": {"big_int"},
    "n<-1e308": {"neg_inf"},
    "has:n": {"inf", "big_int", "nan", "neg_inf", "plain"},
    "n!=7": {"inf", "big_int", "nan", "neg_inf"},
    "n:7": {"plain"},
    "data.platform:google": {"plain"},
}


def learned_paths(body: bytes) -> set[str]:
    """The paths the schema learner learns from ``body`` as a verified delivery."""
    catalog = Catalog()
    attempt = factories.attempt("msg_x", body, topic="pass.activated")
    catalog.learn(Delivery.from_attempt(attempt))
    group = catalog.groups.get(GroupKey.of_topic("pass.activated"))
    return set(group.paths) if group is not None and group.samples else set()


@pytest.mark.parametrize("name", list(BODIES))
def test_a_query_finds_the_paths_the_learner_learns(name: str) -> None:
    body = BODIES[name]
    assert set(body_fields(body).values) == learned_paths(body)


def test_which_rules_the_bodies_above_follow() -> None:
    assert not body_fields(BODIES["not_json"]).json
    assert body_fields(BODIES["dup_small"]).values["tier"] == ["silver"]
    assert body_fields(BODIES["dup_large"]).values["tier"] == ["gold", "silver"]
    assert A65 not in body_fields(BODIES["deep_65"]).values
    assert A64 in body_fields(BODIES["deep_100k"]).values
    assert body_fields(BODIES["inf"]).values["n"] == [float("inf")]
    assert body_fields(BODIES["big_int"]).values["n"] == [1.2345678901234568e29]


@pytest.mark.parametrize("indexed", [True, False], ids=["indexed", "not indexed"])
async def test_the_store_and_the_live_test_agree_on_every_body(
    tmp_path: Path, indexed: bool
) -> None:
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        names: dict[int, str] = {}
        for name, body in BODIES.items():
            await store.record(factories.attempt(f"msg_{name}", body))
            names[await store.last_id()] = name
        await store.settled()
        if indexed:
            index_all(history)
        attempts = {i: await store.attempt(i) for i in names}
        for text, expected in CASES.items():
            query = flt(text)
            rows = await store.log_page(query, limit=100)
            assert {names[r.id] for r in rows} == expected, text
            assert await store.count(query) == len(expected), text
            assert query.where is not None
            live = {names[i] for i, a in attempts.items() if a and query.where.matches(a)}
            assert live == expected, text


def test_json_dumps_of_a_parsed_body_reads_the_same() -> None:
    """A body written again by json.dumps (another key order aside) holds the same fields."""
    doc = {"data": {"platform": "google", "tags": ["a", "b"], "n": 1.5}, "ok": True}
    again = json.dumps(doc, indent=2).encode()
    assert body_fields(json.dumps(doc).encode()).values == body_fields(again).values
