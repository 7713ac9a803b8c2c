"""Traffic of the last hour: the header's sparkline and the Stats screen, counted from the history
once (the activity query, by minute) and then from what arrives, never twice; check requests are
not deliveries; a quiet minute is drawn as nothing, not as the lowest bar."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ui_helpers import BASE_MS, attempt, record_all, wait_for

from walletpass_tui.ui.app import WalletPassApp
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.screens.stats import MinuteChart, StatsScreen
from walletpass_tui.ui.view.charts import QUIET, bars, nice_top, resample, spark, time_axis
from walletpass_tui.ui.view.traffic import Traffic
from walletpass_tui.ui.widgets.status_bar import StatusBar
from walletpass_tui.webhooks.models import FORWARD, ORIGINAL, ForwardResult
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.activity import MINUTE_MS, Activity, BucketCount

NOW = BASE_MS + 10 * MINUTE_MS + 30_000  # 14:10:30 UTC
MIN_14_01 = BASE_MS // MINUTE_MS + 1


def at(minute: int, second: int = 0) -> int:
    """Epoch ms of 14:MM:SS on the fixed day."""
    return BASE_MS + minute * MINUTE_MS + second * 1000


def test_charts_start_at_zero_and_keep_quiet_minutes_blank() -> None:
    assert spark([0, 0, 5, 10], 4) == f"{QUIET}{QUIET}▄█"
    assert spark([3, 3, 3], 3) == "███"  # steady traffic is traffic, not the lowest bar
    assert spark([0, None, 1], 3) == f"{QUIET} █"
    assert resample([1, 3, 5, 7], 2) == [2, 6]
    assert resample([1, 2], 4) == [1, 1, 2, 2]
    assert nice_top(38) == 50 and nice_top(0) == 1 and nice_top(200) == 200
    assert bars([0, 1, 16], 3, 2, 16) == ["  █", " ▁█"]  # a value above zero shows
    axis = time_axis(60)
    assert axis.startswith("-60 min") and axis.endswith("now") and "-30" in axis


def test_history_then_live_counts_each_attempt_once() -> None:
    traffic = Traffic(lambda: NOW)
    early = replace(attempt(1, at_ms=at(9, 1)), id=5)
    late = replace(attempt(2, at_ms=at(9, 2)), id=6)
    traffic.add_attempts([early, late])  # arrived while the history was being read
    assert traffic.series(lambda m: m.deliveries)[-2] == 0
    # The query saw attempt 5 (counted in its row), not attempt 6.
    row = BucketCount(at(9) // MINUTE_MS, "pass.activated", False, 1, 0, 0)
    traffic.load(Activity([row], [], last_attempt_id=5, last_forward_id=0))
    assert traffic.series(lambda m: m.deliveries)[-2] == 2
    traffic.add_attempts([replace(attempt(3, at_ms=at(10, 5)), id=7)])
    assert traffic.series(lambda m: m.deliveries)[-1] == 1
    assert traffic.last_minute() == 2
    # Older than the hour: not counted.
    traffic.add_attempts([replace(attempt(4, at_ms=NOW - 2 * 3600_000), id=8)])
    assert sum(traffic.series(lambda m: m.deliveries)) == 3
    # Told after the read, which saw it already (a read again after a prune): not again.
    traffic.add_attempts([early])
    assert sum(traffic.series(lambda m: m.deliveries)) == 3


async def test_the_store_aggregates_the_last_hour_by_minute(store: Store) -> None:
    check = attempt(9, at_ms=at(5, 10), note="check pass: valid delivery → 200 in 3 ms")
    stored = await record_all(
        store,
        [
            attempt(1, at_ms=at(1, 1)),
            attempt(2, at_ms=at(1, 2), topic="pass.deactivated"),
            attempt(3, at_ms=at(5, 3), verdict="rejected", reason="timestamp too old"),
            check,
            attempt(4, at_ms=BASE_MS - 3 * 3600_000),  # before the hour
        ],
    )
    await store.add_forward_result(
        stored[0],
        kind=FORWARD,
        mode=ORIGINAL,
        target="http://127.0.0.1:9/app",
        result=ForwardResult(200, 40.0),
    )
    history = await store.activity(NOW - 59 * MINUTE_MS, MINUTE_MS)
    rows = sorted(
        (r.bucket - MIN_14_01 + 1, r.topic, r.attempts, r.rejected) for r in history.deliveries()
    )
    assert rows == [
        (1, "pass.activated", 1, 0),
        (1, "pass.deactivated", 1, 0),
        (5, "pass.activated", 1, 1),
    ]
    assert history.last_attempt_id == max(a.id for a in stored)
    assert len(history.forwards) == 1 and history.forwards[0].max_ms == 40.0
    assert [(r.bucket - MIN_14_01 + 1, r.check) for r in history.attempts if r.check] == [(5, True)]


def spark_of(app: WalletPassApp) -> str:
    return app.screen.query_one(StatusBar).sparks.get(30, "")


async def test_header_sparkline_and_stats_screen_from_history_then_live(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    await record_all(
        store,
        [
            attempt(1, at_ms=at(1, 1)),
            attempt(2, at_ms=at(1, 2)),
            attempt(3, at_ms=at(1, 3)),
            attempt(4, at_ms=at(5, 3), verdict="rejected", reason="timestamp too old"),
            attempt(5, at_ms=at(5, 4), note="check fail: forged → 200 in 3 ms"),
        ],
    )
    queries = 0
    real = store.activity

    async def counted(since_ms: int, bucket_ms: int, **kwargs: Any) -> Any:
        nonlocal queries
        queries += bucket_ms == MINUTE_MS  # the last hour by minute (not the header's totals)
        return await real(since_ms, bucket_ms, **kwargs)

    store.activity = counted  # type: ignore[method-assign]
    app = make_app(clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        log = app.screen.query_one(EventLogPane)
        await wait_for(lambda: log.total == 5)
        await wait_for(lambda: bool(spark_of(app)))
        header = spark_of(app)
        assert len(header) == 30 and header.count(QUIET) == 28  # two busy cells in the hour
        assert f"{header} 0/min" in str(app.screen.query_one(StatusBar).render())
        assert app.traffic.series(lambda m: m.deliveries)[-10] == 3

        # Live deliveries are counted into their minute; the sparkline follows within a second.
        await record_all(store, [attempt(6, at_ms=at(10, 1)), attempt(7, at_ms=at(10, 2))])
        await wait_for(lambda: app.traffic.series(lambda m: m.deliveries)[-1] == 2)
        await wait_for(lambda: spark_of(app) != header, timeout=5)

        await pilot.press("s")
        await wait_for(lambda: isinstance(app.screen, StatsScreen))
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        await pilot.pause()
        deliveries = screen.query_one("#chart-deliveries", MinuteChart)
        assert deliveries.series[-10:] == [3, 0, 0, 0, 1, 0, 0, 0, 0, 2]
        rejected = screen.query_one("#chart-rejected", MinuteChart)
        assert rejected.series[-6] == 1 and sum(v or 0 for v in rejected.series) == 1
        box = screen.query_one("#stats-deliveries")
        assert "6 in the hour" in str(box.border_subtitle)  # the check's request is no delivery
        assert "peak 3 at 14:01" in str(box.border_subtitle)
        forwards = screen.query_one("#stats-forwards")
        assert "no forwards" in str(forwards.border_subtitle)

        await pilot.press("n")
        table = screen.numbers
        await wait_for(lambda: table.display and table.row_count == 60)
        newest = [str(c) for c in table.get_row_at(0)]
        assert newest[:2] == ["14:10", "2"]
        row_14_05 = [str(c) for c in table.get_row(str(at(5) // MINUTE_MS))]
        assert row_14_05[1] == "1"  # deliveries
        await pilot.press("escape")
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        assert queries == 1  # the history was read once; the rest came live

        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"stats")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await wait_for(lambda: isinstance(app.screen, StatsScreen))
        assert queries == 1


async def test_topics_from_the_wire_are_plain_text_and_their_columns_bounded(
    make_app: Callable[..., WalletPassApp], store: Store
) -> None:
    """Anyone who can post sets a topic (rejected posts keep theirs): a markup-looking topic is
    shown as written, and 30 of them get 12 columns and one for the rest."""
    forged = [
        attempt(n, at_ms=at(2, n % 60), topic=f"[/x][red]t{n:02d}", verdict="rejected")
        for n in range(30)
    ]
    await record_all(store, forged)
    app = make_app(clock=lambda: NOW)
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_for(lambda: isinstance(app.screen, MainScreen))
        await wait_for(lambda: app.traffic.loaded and len(app.traffic.topics()) == 30)
        await pilot.press("s")
        await wait_for(lambda: isinstance(app.screen, StatsScreen))
        screen = app.screen
        assert isinstance(screen, StatsScreen)
        await pilot.press("n")
        table = screen.numbers
        await wait_for(lambda: table.display and table.row_count == 60)
        labels = [str(column.label) for column in table.columns.values()]
        topic_labels = [label for label in labels if label.startswith("[/x]")]
        assert len(topic_labels) == 12
        assert "18 other topics" in labels
        row = [str(c) for c in table.get_row(str(at(2) // MINUTE_MS))]
        assert row[1] == "30" and row[labels.index("18 other topics")] == "18"
