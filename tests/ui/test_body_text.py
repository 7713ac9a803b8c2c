"""BodyText: a long body page drawn a line at a time, only the lines in view, exactly as a Static
would draw them."""

from __future__ import annotations

import json
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.highlight import highlight
from textual.visual import Visual
from textual.widgets import Static
from ui_helpers import attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.body_pages import PAGE_CHARS
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.widgets.body_text import BodyText
from walletpass_tui.webhooks.store import Store

VIEW = 12  # lines of the pane's view in these tests


class Pane(App[None]):
    CSS = """
    VerticalScroll { width: 40; height: 12; }
    .text { padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="scroll"):
            yield BodyText(id="body", classes="text")
        yield Static(id="reference", classes="text")


def static_lines(app: Pane, content: Content, width: int) -> list[str]:
    reference = app.query_one("#reference", Static)
    strips = Visual.to_strips(reference, content, width, None, reference.visual_style)
    return [strip.text for strip in strips]


async def test_only_the_lines_in_view_are_rendered_and_scrolling_draws_the_rest() -> None:
    doc = {"marker": "FIRST", "blob": "x" * 12_000, "items": list(range(200)), "end": "LAST"}
    text = json.dumps(doc, indent=2)
    app = Pane()
    async with app.run_test(size=(80, 30)) as pilot:
        body = app.query_one("#body", BodyText)
        await pilot.pause()
        wraps = body.wraps
        body.update(highlight(text, language="json"))
        await pilot.pause()
        lines = body.lines_at(body.size.width)
        assert lines is not None and len(lines) > 500  # the blob alone is 300 lines
        assert body.size.height == len(lines)  # the scroll area is the whole page tall
        assert 0 < len(body.rows_drawn) <= VIEW  # the rows in view, not the 500
        # Wrapped once per width (with and without the scroll bar), not once more to draw it.
        assert body.wraps - wraps <= 2
        wraps = body.wraps
        app.query_one("#scroll", VerticalScroll).scroll_end(animate=False)
        await pilot.pause()
        assert len(body.rows_drawn) <= 2 * VIEW  # the first view and the last
        assert len(lines) - 2 in body.rows_drawn
        assert "LAST" in body.render_line(len(lines) - 2).text
        assert body.wraps == wraps  # scrolling draws lines already wrapped


TEXTS = st.text(
    st.sampled_from([*"ab xyz{}[]:,\"'\n\t", "é", "字", "😀", "\u200b", "\x1b"]),
    max_size=400,
)


async def test_lines_match_what_a_static_draws() -> None:
    """Any text, wrapped here and drawn a line at a time, reads as a Static would draw it."""
    app = Pane()
    async with app.run_test(size=(80, 30)) as pilot:
        body = app.query_one("#body", BodyText)
        await pilot.pause()
        width = body.size.width  # fixed by the stylesheet, whatever the text

        @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
        @given(TEXTS)
        def check(text: str) -> None:
            content = Content(text)
            body.update(content, layout=False)
            expected = static_lines(app, content, width)
            lines = body.lines_at(width)
            assert lines is not None and len(lines) == len(expected)
            assert [body.render_line(y).text for y in range(len(lines))] == expected

        check()


async def test_a_megabyte_body_in_the_detail_renders_a_screenful_of_lines(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    blob = "x" * (1024 * 1024 - 4096)
    body = json.dumps({"type": "pass.activated", "data": {"passId": "p", "blob": blob}}).encode()
    await record_all(store, [attempt(1, body=body)])
    app = make_app()
    async with app.run_test(size=(160, 48)) as pilot:
        main = app.screen
        assert isinstance(main, MainScreen)
        await wait_for(lambda: main.detail.webhook_id == "msg_000001", timeout=10)
        await pilot.pause()
        shown = main.detail.query_one("#detail-body", BodyText)
        lines = shown.lines_at(shown.size.width)
        assert lines is not None
        assert len(lines) > 100  # a 16 KiB page of a long string: many lines
        assert len(str(shown.render())) < PAGE_CHARS + 1024
        view = shown.parent
        assert isinstance(view, VerticalScroll)
        assert 0 < len(shown.rows_drawn) <= view.size.height  # the rows in view, no more
        assert '"passId": "p"' in "\n".join(line.plain for line in lines[:5])
        # The next megabyte body followed: wrapped in the worker thread, not on the event loop.
        wraps = shown.wraps
        other = body.replace(b'"p"', b'"q"')
        await record_all(store, [attempt(2, body=other)])
        await wait_for(lambda: main.detail.webhook_id == "msg_000002", timeout=10)
        await pilot.pause()
        assert '"passId": "q"' in str(shown.render())
        assert shown.wraps == wraps
