"""The event log: live deliveries over HTTP, newest on top, following, paging, the bounded window."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx
from ui_helpers import (
    BASE_MS,
    SIZE,
    attempt,
    body_for,
    record_all,
    sender_for,
    wait_for,
)

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.messages import DeliveriesStored
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.view.log_window import PAGE
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.models import LogRow, StoreError
from walletpass_tui.webhooks.receiver import Receiver
from walletpass_tui.webhooks.store import Store


def log_of(app: WalletPassApp) -> EventLogPane:
    return app.screen.query_one(EventLogPane)


def view_of(app: WalletPassApp) -> LogLines:
    return app.screen.query_one(LogLines)


def visible_ids(app: WalletPassApp) -> list[str | None]:
    return [row.webhook_id for row in view_of(app).visible_rows()]


async def test_a_signed_delivery_over_http_appears_at_the_top_and_its_detail_opens(
    make_app: Callable[..., WalletPassApp], receiver: Receiver, http: httpx.AsyncClient
) -> None:
    app = make_app(receiver=receiver, receiver_display=None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: log_of(app).total is not None)
        assert receiver.bound is not None
        sender = sender_for(receiver, http)
        first = await sender.post(body_for("pass.activated", "pass_0042"), msg_id="msg_first")
        assert first.status_code == 200
        second = await sender.post(body_for("pass.deactivated", "pass_0043"), msg_id="msg_second")
        assert second.status_code == 200
        await wait_for(lambda: visible_ids(app)[:2] == ["msg_second", "msg_first"])
        top = view_of(app).visible_rows()[0]
        assert (top.topic, top.pass_id, top.verdict, top.attempt_no) == (
            "pass.deactivated",
            "pass_0043",
            "verified",
            1,
        )
        assert top.endpoint_id == "ep_3f2a9c"
        header = app.screen.query_one(StatusBar)
        assert header.stats is not None
        assert (header.stats.received, header.stats.verified) == (2, 2)
        assert receiver.url.removeprefix("http://") in str(header.render())

        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        await wait_for(lambda: detail.detail.data is not None)
        assert detail.detail.data is not None
        assert detail.detail.data.attempt.webhook_id == "msg_second"
        summary = str(detail.query_one("#detail-summary").render())
        assert "verified with ep_3f2a9c" in summary
        assert "answered 200" in summary
        body = str(detail.query_one("#detail-body").render())
        assert '"passId": "pass_0043"' in body
        await pilot.press("h")  # each tab is drawn when it is opened
        await wait_for(lambda: "msg_second" in str(detail.query_one("#detail-headers").render()))
        headers = str(detail.query_one("#detail-headers").render())
        assert "webhook-id" in headers.lower() and "msg_second" in headers
        await pilot.press("o")
        await wait_for(lambda: "No forwards" in str(detail.query_one("#detail-forwards").render()))
        await pilot.press("b")
        await pilot.press("j")  # the next (older) delivery, without leaving the screen
        await wait_for(
            lambda: (
                detail.detail.data is not None
                and detail.detail.data.attempt.webhook_id == "msg_first"
            )
        )
        await pilot.press("escape")
        current = log_of(app).window.current
        assert current is not None and current.webhook_id == "msg_first"
        assert not isinstance(app.screen, DetailScreen)


async def test_a_rejected_delivery_shows_the_reason_in_words(
    make_app: Callable[..., WalletPassApp], receiver: Receiver, http: httpx.AsyncClient
) -> None:
    app = make_app(receiver=receiver, receiver_display=None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: log_of(app).total is not None)
        sender = sender_for(receiver, http)
        wrong = "whsec_" + "B" * 32
        answer = await sender.post(body_for("pass.activated", "p1"), msg_id="msg_bad", secret=wrong)
        assert answer.status_code == 401
        await wait_for(lambda: visible_ids(app)[:1] == ["msg_bad"])
        row = view_of(app).visible_rows()[0]
        assert row.verdict == "rejected"
        line = "".join(s.text for s in view_of(app).render_line(0))
        assert "✗ bad signature" in line
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        await wait_for(lambda: detail.detail.data is not None)
        summary = str(detail.query_one("#detail-summary").render())
        assert "rejected: no signature matches (tried 1 secret)" in summary


async def test_a_first_page_read_while_the_screen_was_built_is_shown_as_it_mounts(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(n) for n in range(1, 4)])
    page = await store.log_page(limit=PAGE)
    read: asyncio.Future[list[LogRow]] = asyncio.get_running_loop().create_future()
    read.set_result(page[:2])  # not what the store would give now: the log must not read again
    app = make_app(first_page=read)
    async with app.run_test(size=SIZE):
        assert visible_ids(app) == ["msg_000003", "msg_000002"]
        assert log_of(app).total == 2


async def test_a_first_page_that_could_not_be_read_is_read_again(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(n) for n in range(1, 4)])
    read: asyncio.Future[list[LogRow]] = asyncio.get_running_loop().create_future()
    read.set_exception(StoreError("The history database is locked by another program."))
    app = make_app(first_page=read)
    async with app.run_test(size=SIZE):
        await wait_for(lambda: log_of(app).total == 3)
        assert visible_ids(app) == ["msg_000003", "msg_000002", "msg_000001"]
        assert log_of(app).problem is None


async def test_follows_new_rows_until_the_user_moves_away(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(n) for n in range(1, 61)])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: log_of(app).total == 60)
        assert view_of(app).following
        assert "following" in str(log_of(app).border_title)
        await record_all(store, [attempt(61)])
        await wait_for(lambda: visible_ids(app)[0] == "msg_000061")
        assert log_of(app).window.current is not None
        assert log_of(app).window.current.webhook_id == "msg_000061"

        await pilot.press("j", "j")
        assert not view_of(app).following
        assert "paused" in str(log_of(app).border_title)
        selected = log_of(app).window.current
        assert selected is not None and selected.webhook_id == "msg_000059"
        before = visible_ids(app)
        await record_all(store, [attempt(62), attempt(63)])
        await wait_for(lambda: log_of(app).total == 63)
        await pilot.pause()
        # The selection and the lines on screen stayed put; the new rows are above them.
        assert log_of(app).window.current is not None
        assert log_of(app).window.current.webhook_id == "msg_000059"
        assert visible_ids(app) == before
        assert log_of(app).window.rows[0].webhook_id == "msg_000063"

        await pilot.press("f")
        assert view_of(app).following
        assert visible_ids(app)[0] == "msg_000063"
        assert log_of(app).window.current is not None
        assert log_of(app).window.current.webhook_id == "msg_000063"


async def test_a_burst_reaches_the_log_once_each_in_fewer_updates_than_commits(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    messages: list[DeliveriesStored] = []

    def hook(message: object) -> None:
        if isinstance(message, DeliveriesStored):
            messages.append(message)

    app = make_app()
    async with app.run_test(size=SIZE, message_hook=hook):
        await wait_for(lambda: log_of(app).total is not None)
        stored = await record_all(store, [attempt(n) for n in range(1, 301)], one_by_one=True)
        await wait_for(lambda: log_of(app).total == 300)
        # Every attempt reached the app exactly once, in commit order, and never more messages
        # than commits (how many fewer depends on the machine's speed: the feed's own test counts
        # the coalescing exactly).
        delivered = [a.id for m in messages for a in m.attempts]
        assert delivered == [a.id for a in stored]
        assert 1 <= len(messages) <= 300
        assert [row.id for row in log_of(app).window.rows[:300]] == [a.id for a in stored][::-1]


async def test_deliveries_arriving_after_the_screen_is_gone_are_dropped(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    """While the app shuts down its screens go first; a delivery message in flight must not
    raise (it used to: NoMatches for the status bar)."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: log_of(app).total is not None and app.screen.assembled)
        await app.pop_screen()
        await pilot.pause()
        (stored,) = await record_all(store, [attempt(1)])
        app.post_message(DeliveriesStored((stored,)))
        app.post_message(DeliveriesStored((stored,), dropped=3))
        await pilot.pause()
        assert app.is_running


async def test_quitting_as_the_first_frame_is_drawn_ends_cleanly(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    """Ctrl+Q before the parts mounted after the first frame are there: a clean exit."""
    await record_all(store, [attempt(n) for n in range(1, 4)])
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        await pilot.press("ctrl+q")
    assert app.return_code == 0


async def test_quitting_while_deliveries_arrive_ends_cleanly(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    app = make_app()
    async with app.run_test(size=SIZE):
        await wait_for(lambda: log_of(app).total is not None)
        app.exit()
        for n in range(1, 41):
            (stored,) = await record_all(store, [attempt(n)])
            app.post_message(DeliveriesStored((stored,)))
    # Leaving run_test re-raises any error the app met while closing.
    assert app.return_code in (None, 0)


async def test_history_pages_in_and_memory_stays_bounded(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(store, [attempt(n, at_ms=BASE_MS + n) for n in range(1, 601)])
    app = make_app(log_capacity=400)
    async with app.run_test(size=(120, 60)) as pilot:
        log = log_of(app)
        await wait_for(lambda: log.total == 600)
        assert len(log.window) == 200
        # Walk to the bottom of the history: older pages come in, the window never passes 400.
        sizes = []
        while log.window.has_older:
            await pilot.press("end")
            await wait_for(lambda: not log.paging)
            sizes.append(len(log.window))
        await pilot.press("end")
        assert max(sizes) <= 400
        current = log.window.current
        assert current is not None and current.webhook_id == "msg_000001"
        assert log.window.has_newer
        # And back up: newer pages come back in order, without gaps or repeats.
        while log.window.has_newer:
            await pilot.press("pageup")
            await wait_for(lambda: not log.paging)
            assert len(log.window) <= 400
        ids = [row.id for row in log.window.rows]
        assert ids == list(range(600, 600 - len(ids), -1))


async def test_markup_and_escapes_in_a_delivery_are_shown_literally(
    make_app: Callable[..., WalletPassApp], receiver: Receiver, http: httpx.AsyncClient
) -> None:
    app = make_app(receiver=receiver, receiver_display=None)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(lambda: log_of(app).total is not None)
        sender = sender_for(receiver, http)
        hostile_id = "msg_[@click=app.quit]x[/]"
        body = b'{"type": "[@click=app.quit]x[/]", "data": {"passId": "\\u001b[2Jp", "n": "[b]bold[/b]"}}'
        answer = await sender.post(body, msg_id=hostile_id)
        assert answer.status_code == 200
        raw = b"\x1b[2J\x1b]0;pwned\x07[@click=app.quit]x[/]"
        answer = await sender.post(raw, msg_id="msg_escape")
        assert answer.status_code == 200
        await wait_for(lambda: len(visible_ids(app)) == 2)

        lines = ["".join(s.text for s in view_of(app).render_line(y)) for y in range(2)]
        # Topic and pass id, clipped to their columns but literal: no link, no escape sequence.
        assert any("[@click=" in line for line in lines)
        assert any("\\x1b[2" in line for line in lines)
        assert all("\x1b" not in line for line in lines)

        await pilot.press("j", "enter")  # the JSON one (second from the top)
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        await wait_for(lambda: detail.detail.data is not None)
        summary = str(detail.query_one("#detail-summary").render())
        assert hostile_id in summary
        assert "pass \\x1b[2Jp" in summary
        pretty = str(detail.query_one("#detail-body").render())
        assert '"[@click=app.quit]x[/]"' in pretty and "[b]bold[/b]" in pretty
        await pilot.press("escape", "k", "enter")  # the raw escape sequence
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        await wait_for(lambda: detail.detail.data is not None)
        assert "Not JSON" in str(detail.query_one("#detail-body").render())
        await pilot.press("w")
        await wait_for(lambda: "pwned" in str(detail.query_one("#detail-raw").render()))
        raw_text = str(detail.query_one("#detail-raw").render())
        assert "\\x1b[2J\\x1b]0;pwned\\x07[@click=app.quit]x[/]" in raw_text
        await pilot.pause()
        assert app.is_running
