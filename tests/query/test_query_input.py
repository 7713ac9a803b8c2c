"""A query is user input: bounded in length and nesting, never SQL, never reported as a broken
history, whatever it holds (quotes, ``--``, ``;``, unicode, 100 KB)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from query_helpers import index_all, record

from walletpass_tui.cli import main
from walletpass_tui.query.filters import parse_filter
from walletpass_tui.query.language import MAX_NESTING, MAX_QUERY_CHARS, MAX_TERMS, parse
from walletpass_tui.query.path_reading import parse_path
from walletpass_tui.query.tree import QueryProblem
from walletpass_tui.schemas.paths import ROOT, Segment, child
from walletpass_tui.text import printable
from walletpass_tui.webhooks.store import Store

BODIES = [
    {"type": "pass.activated", "data": {"platform": "google", "note": "it's; -- fine"}},
    {"type": "pass.activated", "data": {"platform": "apple", "note": 'a "quoted" note'}},
]

HOSTILE = [
    "data.platform:'google'",
    'data.platform:"x\' OR 1=1 --"',
    "data.platform:x'; DROP TABLE attempts; --",
    'data["x\') OR 1=1 --"]:1',
    'data.note:"it\'s; -- fine"',
    "--",
    ";",
    "'",
    '"',
    '"unclosed',
    'data.note:"unclosed',
    "))))((((",
    "OR OR AND",
    "-",
    "-has:",
    "has:data[",
    "data.platform:\u202egoogle\u202c",
    "data.\u0434\u0430\u0442\u0430:1",
    "\x00data.platform:google",
    "data.platform:\x00",
    "données:ok 🎫 ∑",
    "data.platform>google data.platform<\U0010ffff",
    "data.n>1e99999 data.n<-1e99999",
    "data.n:99999999999999999999999999999999999999",
    "w " * 50_000,  # 100 KB of words
    "data.platform:" + "g" * 100_000,  # a 100 KB value
    "(" * 5_000 + "x" + ")" * 5_000,
    " OR ".join(f"data.platform:p{i}" for i in range(5_000)),
]


async def test_hostile_queries_are_answered_and_touch_nothing(tmp_path: Path) -> None:
    history = tmp_path / "h.sqlite3"
    async with await Store.open(history) as store:
        await record(store, BODIES)
        index_all(history)
        for text in HOSTILE:
            flt, _ = parse_filter(text)
            rows = await store.log_page(flt, limit=10)  # a StoreError would fail the test
            assert await store.count(flt) == len(rows), text[:80]
            await store.list_messages(text=flt.text, where=flt.where)
        assert await store.count() == len(BODIES)
        found, _ = parse_filter('data.note:"it\'s; -- fine"')
        assert [r.webhook_id for r in await store.log_page(found)] == ["msg_1"]
        quoted, _ = parse_filter('data.note:"a \\"quoted\\" note"')
        assert [r.webhook_id for r in await store.log_page(quoted)] == ["msg_2"]


def test_the_bounds_are_said_not_exceeded() -> None:
    too_long = parse("w" * (MAX_QUERY_CHARS + 1))
    assert too_long.node is None
    assert too_long.problem == (
        f"The query is {MAX_QUERY_CHARS + 1:,} characters long; at most {MAX_QUERY_CHARS:,} are "
        "read. Shorten it."
    )
    deep = parse("(" * (MAX_NESTING + 1) + "data.a:1" + ")" * (MAX_NESTING + 1))
    assert deep.problem == (
        f"The query nests groups and negations more than {MAX_NESTING} deep; write it flatter."
    )
    assert parse("(" * MAX_NESTING + "data.a:1" + ")" * MAX_NESTING).problems == ()
    many = parse(" ".join(f"data.a:{i}" for i in range(MAX_TERMS + 1)))
    assert many.node is None and many.problem is not None and str(MAX_TERMS) in many.problem
    assert parse(" ".join(f"data.a:{i}" for i in range(MAX_TERMS))).problems == ()
    # Words standing alone are a search: any number of them.
    assert parse(" ".join(f"w{i}" for i in range(10_000))).problems == ()


@pytest.mark.parametrize(
    "text",
    ["w " * 50_000, "data.platform:x'; DROP TABLE attempts; --", "(" * 50 + "x", "données 🎫"],
)
async def test_the_command_line_answers_hostile_queries_in_one_sentence(
    text: str, tmp_path: Path, clean_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with await Store.open(clean_env / "deliveries.sqlite3") as store:
        await record(store, BODIES)
    index_all(clean_env / "deliveries.sqlite3")
    capsys.readouterr()
    code = await asyncio.to_thread(main, ["events", "list", "--json", f"--where={text}"])
    out, err = capsys.readouterr()
    assert code in (0, 2), err
    if code == 2:
        assert out == "" and len(err.splitlines()) == 1 and err.startswith("walletpass-tui: error:")
    assert "database" not in err and "Traceback" not in err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=200))
def test_any_text_parses_into_a_query_or_problems(text: str) -> None:
    parsed = parse(text)
    assert parsed.node is not None or parsed.problems or parsed.unfinished or not text.strip()
    flt, _ = parse_filter(text)
    # What the filter box shows again reads as the same filter.
    from walletpass_tui.query.filters import filter_text

    again, problems = parse_filter(filter_text(flt))
    assert again == flt or problems.problems, (text, filter_text(flt))


# Keys whose paths the schema prints with escapes: JSON's (a quoted key is a JSON string) and
# text.visible's (a character it does not show).
ODD_KEYS = [
    "nl\nline",
    "ls\u2028sep",
    "pass\x1b[2Jid",
    "bidi\u202egnp.exe",
    "\udc81",
    "\ud83d",
    "\ud83d\ude00",  # two lone surrogates (a pair in JSON reads as one character: 😀)
    'q"uote',
    "back\\slash",
    "\\u2028",
    "\\",
    "del\x7f",
    "c1\x85",
    "\U000f0000",
    "tab\there",
    "\b\f\r",
    "🎫",
    "a.b",
    "",
]


@pytest.mark.parametrize("key", ODD_KEYS)
def test_a_path_reads_as_the_schema_prints_it(key: str) -> None:
    path = child(child(ROOT, Segment.KEY, "data"), Segment.KEY, key)
    assert parse_path(printable(path)).text == path  # as schema show and the drift line print it
    assert parse_path(path).text == path  # as the filter box's completion writes it


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(st.characters(exclude_categories=()), max_size=12),  # lone surrogates too
        min_size=1,
        max_size=3,
    )
)
def test_any_key_reads_back_from_its_printed_path(keys: list[str]) -> None:
    path = ROOT
    for key in keys:
        path = child(path, Segment.KEY, key)
    assert parse_path(printable(path)).text == path
    assert parse_path(path).text == path


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('data["a\\u20"]', "\\u is followed by 4 hex digits"),
        ('data["a\\x7"]', "\\x is followed by 2 hex digits"),
        ('data["a\\U00110000"]', "\\U is followed by 8 hex digits (a character up to U+10FFFF)"),
        ('data.note:"\\uzzzz"', "\\u is followed by 4 hex digits"),
    ],
)
def test_an_escape_that_is_not_whole_says_how_to_write_it(text: str, said: str) -> None:
    if text.startswith("data["):
        with pytest.raises(QueryProblem, match="a backslash itself is written"):
            parse_path(text)
    parsed = parse(text)
    assert parsed.node is None and len(parsed.problems) == 1
    assert said in parsed.problems[0] and "a backslash itself is written \\\\" in parsed.problems[0]
