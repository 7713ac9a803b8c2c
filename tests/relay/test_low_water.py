"""The link's low-water mark: whatever order deliveries are stored in, and however many writes
fail first, the mark never passes a delivery that is not stored, and reaches the newest once all
are."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.relay.link.low_water import LowWater

# A step: receive the next delivery, or finish one of those waiting (by its position among them),
# its write succeeding or failing (a failed one stays waiting and is retried later).
steps = st.lists(
    st.one_of(
        st.tuples(st.just("receive"), st.integers(1, 5), st.just(False)),
        st.tuples(st.just("finish"), st.integers(0, 1_000), st.booleans()),
    ),
    max_size=200,
)


@given(start=st.integers(0, 10**12), steps=steps)
def test_the_mark_never_passes_a_cursor_not_stored(
    start: int, steps: list[tuple[str, int, bool]]
) -> None:
    marks = LowWater(start)
    received: list[int] = []
    stored: set[int] = set()
    last = start
    for kind, value, ok in steps:
        waiting = [c for c in received if c not in stored]
        if kind == "receive":
            last += value  # cursors rise, with gaps (edge-rejected posts, pruned ones)
            received.append(last)
            marks.received(last)
        elif waiting and ok:
            cursor = waiting[value % len(waiting)]
            stored.add(cursor)
            marks.stored(cursor)
        # every received cursor at or below the mark is stored ...
        assert all(c in stored for c in received if c <= marks.mark)
        # ... and the mark is as far as that allows: the next one above it is not stored
        above = [c for c in received if c > marks.mark]
        assert not above or above[0] not in stored
        assert marks.mark >= start
        assert marks.waiting == len(received) - len(stored)
    if received and stored == set(received):
        assert marks.mark == received[-1]


def test_a_cursor_stored_twice_or_never_received_does_not_move_the_mark() -> None:
    marks = LowWater(10)
    marks.received(12)
    marks.received(15)
    marks.stored(15)
    marks.stored(13)  # never received
    marks.stored(15)
    assert marks.mark == 10
    marks.stored(12)
    assert marks.mark == 15 and marks.waiting == 0


def test_cursors_must_be_received_in_order() -> None:
    marks = LowWater(10)
    with pytest.raises(ValueError):
        marks.received(10)
