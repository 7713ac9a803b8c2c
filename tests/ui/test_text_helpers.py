"""Pure helpers of the dashboard: untrusted text, log columns, filter syntax, template columns."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ui_helpers import attempt, body_for

from walletpass_tui.text import body_text, compact_value, one_line, pretty_json, visible
from walletpass_tui.ui.view.log_columns import COLUMNS, cell_text, layout
from walletpass_tui.ui.view.log_query import filter_text, matches, parse_filter
from walletpass_tui.ui.view.template_columns import template_cell, template_columns
from walletpass_tui.webhooks.models import LogFilter, LogRow
from walletpass_tui.webhooks.store import Store


def test_visible_escapes_controls_format_characters_and_keeps_text() -> None:
    assert visible("plain [b]markup[/b] stays") == "plain [b]markup[/b] stays"
    assert visible("\x1b[2J\x07\r") == "\\x1b[2J\\x07\\r"
    assert visible("a\u202eb\u200bc") == "a\\u202eb\\u200bc"  # bidi override, zero-width space
    assert visible("line\n\tnext", keep_newlines=True) == "line\n\tnext"
    assert visible("line\nnext") == "line\\nnext"
    assert one_line(None) == "-"
    assert one_line("x" * 50, 10) == "x" * 9 + "…"


def test_bodies_raw_and_pretty() -> None:
    shown, cut = body_text(b"\xff\xfe ok \x1b")
    assert shown == "\\xff\\xfe ok \\x1b" and not cut
    pretty, _ = pretty_json({"a": "\u202e\x1b", "b": [1]})
    assert '"a": "\\u202e\\u001b"' in pretty and "\x1b" not in pretty
    assert compact_value({"k": 1}) == '{"k":1}'
    assert compact_value({"k": "v" * 50}) == "{1 key}"
    assert compact_value([1] * 40) == "[40 items]"


def test_columns_fit_the_width_and_keep_the_essentials() -> None:
    for width in (60, 75, 80, 120, 200):
        chosen = layout(width)
        assert sum(w for _, w in chosen) + len(chosen) - 1 <= width
        assert {"time", "verdict", "webhook"} <= {c.key for c, _ in chosen}
    assert [c.key for c, _ in layout(200)] == [c.key for c in COLUMNS]


def test_cells_say_the_verdict_in_words() -> None:
    ok = LogRow.of(replace(attempt(1), attempt_no=1))
    bad = LogRow.of(attempt(2, verdict="rejected", reason="timestamp too old"))
    assert cell_text(ok, "verdict") == "✓ verified"
    assert cell_text(bad, "verdict") == "✗ too old"
    assert cell_text(ok, "topic") == "activated"
    assert cell_text(ok, "time") == "14:00:01.000"
    assert cell_text(ok, "attempt") == "#1"


def test_filter_syntax() -> None:
    parsed = parse_filter("topic:deactivated  verdict:bad pass_0042 ferry")
    assert parsed.filter == LogFilter("pass.deactivated", "rejected", "pass_0042 ferry")
    assert parsed.problem is None
    assert filter_text(parsed.filter) == "topic:pass.deactivated verdict:rejected pass_0042 ferry"
    # The command line's topic rule: a shortened name is not guessed.
    problem = parse_filter("topic:deact").problem
    assert problem is not None and problem.startswith("Unknown topic 'deact'")
    assert parse_filter("is:meh").problem is not None
    assert parse_filter("").filter.empty


async def test_live_matching_finds_what_the_store_search_finds(tmp_path: Path) -> None:
    a = attempt(7, body=body_for("pass.activated", "pass_0042", note="Harbour ferry"))
    a = replace(a, webhook_id="msg_forged00036")
    queries = {
        "harbour": True,
        "HARB": True,  # any case
        "forged": True,  # part of the webhook-id
        "pass_00 ferry": True,  # every word, each a part of the row
        "bour fer": True,
        "ferries": False,
        "pass_00 ferries": False,
        "topic:deactivated": False,
        "verdict:rejected": False,
    }
    for query, expected in queries.items():
        assert matches(parse_filter(query).filter, a) is expected, query
    # Live rows and stored rows answer the same words.
    async with await Store.open(tmp_path / "h.sqlite3") as store:
        await store.record(a)
        await store.settled()
        for query, expected in queries.items():
            found = await store.log_page(parse_filter(query).filter, limit=5)
            assert bool(found) is expected, query


def test_template_columns_put_ids_and_names_first() -> None:
    templates = [
        {"style": {}, "name": "Gym", "passTypeIdentifier": "pass.com.x", "id": "tpl_1"},
        {"organizationName": "Org", "id": "tpl_2"},
    ]
    assert template_columns(templates) == [
        "id",
        "passTypeIdentifier",
        "name",
        "organizationName",
        "style",
    ]
    assert template_cell(templates[0], "style") == "{}"
    assert template_cell(templates[1], "name") == ""
