"""The live feed: commits in, one coalesced message per frame out, nothing lost or repeated."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from ui_helpers import attempt, record_all, wait_for

from walletpass_tui.ui.live_rows import FLOOD_ROWS, LiveRows
from walletpass_tui.ui.messages import DeliveriesStored
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.store import Store

NEVER = 3600.0  # a frame that does not end within a test: only flush() posts


class Collector:
    """Stands in for the app: keeps what the feed posts."""

    def __init__(self) -> None:
        self.messages: list[DeliveriesStored] = []

    def post_message(self, message: Any) -> bool:
        self.messages.append(message)
        return True


class FakeSource:
    """A store's subscribe(), driven by hand."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[list[Attempt]], None]] = []

    def subscribe(self, listener: Callable[[list[Attempt]], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def commit(self, batch: list[Attempt]) -> None:
        for listener in list(self.listeners):
            listener(batch)


async def test_commits_within_one_frame_are_one_message(store: Store) -> None:
    target = Collector()
    feed = LiveRows(store, target, interval=NEVER)  # type: ignore[arg-type]
    feed.start()
    stored = await record_all(store, [attempt(n) for n in range(1, 301)], one_by_one=True)
    assert target.messages == []
    assert feed.pending == 300
    feed.flush()
    assert len(target.messages) == 1
    assert [a.id for a in target.messages[0].attempts] == [a.id for a in stored]
    feed.flush()  # nothing new: nothing posted
    assert len(target.messages) == 1
    feed.stop()


async def test_the_frame_timer_posts_by_itself(store: Store) -> None:
    target = Collector()
    feed = LiveRows(store, target, interval=0.01)  # type: ignore[arg-type]
    feed.start()
    await record_all(store, [attempt(1)])
    await wait_for(lambda: len(target.messages) == 1)
    assert target.messages[0].attempts[0].webhook_id == "msg_000001"
    feed.stop()
    await record_all(store, [attempt(2)])  # after stop: nothing more
    assert feed.pending == 0
    assert len(target.messages) == 1


async def test_a_feed_far_behind_drops_the_oldest_and_says_how_many(store: Store) -> None:
    target = Collector()
    feed = LiveRows(store, target, interval=NEVER, max_pending=10)  # type: ignore[arg-type]
    feed.start()
    await record_all(store, [attempt(n) for n in range(1, 26)], one_by_one=True)
    feed.flush()
    (message,) = target.messages
    assert message.dropped == 15
    assert [a.webhook_id for a in message.attempts] == [f"msg_{n:06d}" for n in range(16, 26)]
    feed.stop()


@settings(max_examples=60, deadline=None)
@given(
    plan=st.lists(st.tuples(st.integers(min_value=1, max_value=20), st.booleans()), max_size=30),
    cap=st.integers(min_value=1, max_value=120),
)
def test_every_commit_arrives_once_in_order_or_is_counted_as_dropped(
    plan: list[tuple[int, bool]], cap: int
) -> None:
    """Whatever the batch sizes and wherever frames end: attempts arrive once each, in commit
    order, and what was left out is counted, never silently lost."""

    async def run() -> None:
        source = FakeSource()
        target = Collector()
        feed = LiveRows(source, target, interval=NEVER, max_pending=cap)  # type: ignore[arg-type]
        feed.start()
        sent: list[int] = []
        next_id = 1
        for size, frame_ends in plan:
            batch = [replace(attempt(n), id=n) for n in range(next_id, next_id + size)]
            next_id += size
            sent.extend(a.id for a in batch)
            source.commit(batch)
            if frame_ends:
                feed.flush()
        feed.flush()
        feed.stop()
        got = [a.id for m in target.messages for a in m.attempts]
        dropped = sum(m.dropped for m in target.messages)
        assert len(got) + dropped == len(sent)
        assert len(set(got)) == len(got)
        assert got == sorted(got)
        assert set(got) <= set(sent)
        assert len(target.messages) <= len(plan)

    asyncio.run(run())


async def test_frames_are_short_while_a_person_interacts_and_long_otherwise(store: Store) -> None:
    target = Collector()
    feed = LiveRows(store, target, interval=0.01, idle_interval=NEVER)  # type: ignore[arg-type]
    feed.start()
    await record_all(store, [attempt(1)])
    await asyncio.sleep(0.05)
    assert target.messages == []  # nobody at the keyboard: the long frame has not ended
    feed.touch()  # a key press: the frame waiting is shortened
    await wait_for(lambda: len(target.messages) == 1)
    await record_all(store, [attempt(2)])  # still in use: a short frame
    await wait_for(lambda: len(target.messages) == 2)
    assert [m.attempts[0].webhook_id for m in target.messages] == ["msg_000001", "msg_000002"]
    feed.stop()


async def test_a_flood_is_posted_twice_a_second_and_a_key_press_still_gets_short_frames() -> None:
    source = FakeSource()
    target = Collector()
    feed = LiveRows(source, target, interval=0.001, idle_interval=0.01)  # type: ignore[arg-type]
    feed.start()
    source.commit([attempt(n) for n in range(1, FLOOD_ROWS + 2)])
    feed.flush()  # a frame that carried more rows than anyone reads
    assert len(target.messages[0].attempts) == FLOOD_ROWS + 1
    source.commit([attempt(FLOOD_ROWS + 2)])
    await asyncio.sleep(0.1)  # well past the idle frame (a timer is only ever late, never early)
    assert len(target.messages) == 1, "a flood waits FLOOD_FRAME_S, not the idle frame"
    feed.touch()  # a person at the keyboard: short frames again, flood or not
    await wait_for(lambda: len(target.messages) == 2)
    assert [a.webhook_id for a in target.messages[1].attempts] == [f"msg_{FLOOD_ROWS + 2:06d}"]
    feed.stop()
