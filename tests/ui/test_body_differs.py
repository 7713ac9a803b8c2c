"""A webhook-id seen again with another body is marked in the log and said in the detail."""

from __future__ import annotations

from collections.abc import Callable

from ui_helpers import SIZE, attempt, body_for, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.webhooks.store import Store


def top_line(app: WalletPassApp) -> str:
    return "".join(s.text for s in app.screen.query_one(LogLines).render_line(0))


async def test_a_redelivery_with_another_body_is_marked_and_explained(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    first = attempt(1, webhook_id="msg_same")
    same = attempt(2, webhook_id="msg_same", body=first.body)  # a retry: the same body
    other = attempt(3, webhook_id="msg_same", body=body_for("pass.activated", "pass_other"))
    stored = await record_all(store, [first, same, other], one_by_one=True)
    assert [a.body_differs for a in stored] == [False, False, True]

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        log = app.screen.query_one(LogLines)
        await wait_for(lambda: len(log.visible_rows()) == 3)
        lines = [
            "".join(s.text for s in log.render_line(y)) for y in range(len(log.visible_rows()))
        ]
        assert "#3≠" in lines[0]  # the newest: another body under the same webhook-id
        assert not any("≠" in line for line in lines[1:])  # the first attempt and the retry

        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, DetailScreen))
        detail = app.screen
        assert isinstance(detail, DetailScreen)
        await wait_for(lambda: detail.detail.data is not None)
        summary = str(detail.query_one("#detail-summary").render())
        assert "body differs from the first attempt of this webhook-id" in summary
