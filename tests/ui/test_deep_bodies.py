"""Bodies as written: numbers shown as the body wrote them (``1e999``, not ``Infinity``), and valid
JSON that Python's parser refuses (too deep, a 5,000-digit integer) still has its topic and pass
id and is called JSON; the detail says "topic unknown" once."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from ui_helpers import sender_for, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.body_pages import NOT_JSON, TOO_DEEP, body_page
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.view.log_columns import cell_text
from walletpass_tui.webhooks.body_fields import labels, scan
from walletpass_tui.webhooks.receiver import Receiver

DEEP = (
    b'{"type": "pass.activated", "data": {"passId": "pass_deep1", "tree": '
    + b"[" * 5000
    + b"]" * 5000
    + b'}, "n": 1}'
)
DEEP_OBJECTS = (
    b'{"data": {"nest": '
    + b'{"a": ' * 3000
    + b"1"
    + b"}" * 3000
    + b', "passId": "pass_deep2"}, "event": "pass.deactivated"}'
)
HUGE_INT = b'{"type": "pass.deactivated", "n": ' + b"9" * 5000 + b', "data": {"passId": "p_h"}}'


def test_labels_of_valid_json_too_deep_or_too_long_for_pythons_parser() -> None:
    for body in (DEEP, DEEP_OBJECTS, HUGE_INT):
        try:
            json.loads(body)
        except (RecursionError, ValueError):
            pass
        else:
            raise AssertionError("the sample should be beyond Python's parser")
    assert labels(DEEP) == ("pass.activated", "pass_deep1")
    assert labels(DEEP_OBJECTS) == ("pass.deactivated", "pass_deep2")
    assert labels(HUGE_INT) == ("pass.deactivated", "p_h")
    # One bracket short: not JSON, so no labels (as for any other body that is not JSON).
    assert labels(DEEP.replace(b"]" * 5000, b"]" * 4999)) == (None, None)
    # Hostile depth costs a bounded number of steps, then simply no labels.
    assert labels(b'{"a":' * 200_000 + b"1" + b"}" * 200_000) == (None, None)
    assert labels(b"[1," * 300_000) == (None, None)


def test_the_detail_shows_numbers_as_written_and_deep_json_as_json() -> None:
    page = body_page(b'{"big": 1e999, "small": -1e-999, "one": 1.0, "zero": -0, "n": 12}')
    text = page.content.plain
    assert page.json
    for written in ('"big": 1e999', '"small": -1e-999', '"one": 1.0', '"zero": -0', '"n": 12'):
        assert written in text, text
    assert "Infinity" not in text

    huge = body_page(HUGE_INT)
    assert huge.json and "9" * 200 in huge.content.plain

    deep = body_page(DEEP).content.plain
    assert deep.startswith(TOO_DEEP) and not deep.startswith(NOT_JSON)
    broken = body_page(DEEP.replace(b"]" * 5000, b"]" * 4999)).content.plain
    assert broken.startswith(NOT_JSON)


json_text = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
).map(lambda doc: json.dumps(doc, separators=(",", ":")))


@settings(max_examples=300, deadline=None)
@given(
    text=json_text,
    cut=st.integers(min_value=0, max_value=60),
    junk=st.sampled_from(["", ",", "]", "}", "[", "{", ":", '"', "1", " ", "x", "{}"]),
)
def test_the_scanner_agrees_with_pythons_parser(text: str, cut: int, junk: str) -> None:
    """Whole documents and mangled ones (a piece cut out, a character put in): the scanner
    calls JSON exactly what json.loads accepts."""
    mangled = text[:cut] + junk + text[cut + (1 if junk else 0) :]
    for candidate in (text, mangled):
        try:
            json.loads(candidate)
            valid = True
        except ValueError:
            valid = False
        found = scan(candidate, budget=len(candidate) + 2)
        assert found is not None
        assert found.valid == valid, candidate


async def test_a_deep_delivery_over_http_has_its_topic_and_is_json_in_the_detail(
    make_app: Callable[..., WalletPassApp], receiver: Receiver, http: httpx.AsyncClient
) -> None:
    app = make_app(receiver=receiver, receiver_display=None)
    async with app.run_test(size=(120, 36)) as pilot:
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total is not None)
        sender = sender_for(receiver, http)
        no_topic = b'{"data": {"passId": "pass_x"}}'
        assert (await sender.post(no_topic, msg_id="msg_notopic")).status_code == 200
        assert (await sender.post(DEEP, msg_id="msg_deep")).status_code == 200
        await wait_for(lambda: len(log.window) == 2)
        deep_row = log.window.rows[0]
        assert (deep_row.topic, deep_row.pass_id) == ("pass.activated", "pass_deep1")
        assert cell_text(deep_row, "topic") == "activated"

        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        await wait_for(lambda: screen.detail.data is not None)
        body = str(screen.query_one("#detail-body").render())
        assert TOO_DEEP.strip() in body and "Not JSON" not in body
        summary = str(screen.query_one("#detail-summary").render())
        assert "topic pass.activated" in summary

        await pilot.press("j")  # the older one, whose body names no topic
        await wait_for(
            lambda: screen.detail.data and screen.detail.data.attempt.webhook_id == "msg_notopic"
        )
        summary = str(screen.query_one("#detail-summary").render())
        assert "topic unknown" in summary and "topic topic" not in summary
