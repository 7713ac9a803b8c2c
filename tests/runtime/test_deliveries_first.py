"""Deliveries first: what follows the history's commits (the search indexer, the field indexer, the
schema learner) yields to the receiver while commits keep coming, and catches up to the last row
once they stop; while it waits it holds no read snapshot of the history.

While the commits stream in, each follower's steps are made to report a large CPU cost, so its
share of a core lets it take one step and then wait far longer than any test runs: what it does is
then counted, never timed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import factories
import pytest
from waiting import until

from walletpass_tui.runtime.followers import CommitFollowers
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.store.indexer import index_path
from walletpass_tui.webhooks.store.pacing import Pace

DEADLINE_S = 60.0  # "did not hang" only
COST_S = 100.0  # the CPU a step with rows reports while costly: at a share of 0.25, a 400 s pause
NAMES = ("search index", "field index", "schema learner")


@dataclass
class Follower:
    """One follower as the test sees it: its pace, its steps with rows, the last row it reached."""

    pace: Pace
    upto: Callable[[], int]
    steps: list[int] = field(default_factory=list)  # rows of each costly step


class Costs:
    """Whether steps with rows report COST_S more CPU than they took (while commits stream)."""

    costly = True

    def counted(self, step: Callable[[], Any], steps: list[int], rows: Callable[[Any], int]) -> Any:
        """``step`` made to report COST_S more CPU whenever it read rows, each such step counted."""

        def run(*args: Any) -> Any:
            done = step(*args)
            if done is None or not self.costly or not rows(done[0]):
                return done
            steps.append(rows(done[0]))
            return done[0], done[1] + COST_S

        return run


def delivery(i: int) -> Attempt:
    body = {"type": "pass.updated", "data": {"passId": f"pass_{i}", "serial": i}}
    if i % 50 == 49:  # drifts: a field its topic never had
        body["data"][f"extra_{i}"] = True
    return factories.attempt(
        f"msg_{i:05d}", json.dumps(body).encode(), topic="pass.updated", at=factories.T0 + i
    )


def search_upto(history: Path) -> int:
    db = sqlite3.connect(index_path(history))
    try:
        row = db.execute("SELECT value FROM meta WHERE key = 'indexed_upto'").fetchone()
    finally:
        db.close()
    return int(row[0])


@pytest.fixture
async def following(tmp_path: Path) -> Any:
    history = tmp_path / "history.sqlite3"
    drift: list[int] = []
    learned = [0]
    store = await Store.open(history)
    followers = CommitFollowers(
        lambda attempt_id, _: drift.append(attempt_id),
        lambda upto: learned.__setitem__(0, max(learned[0], upto)),
    )
    await followers.start(store, learn_schemas=True, index_fields=True)
    learner, fields = followers.learner, followers.field_indexer
    assert learner is not None and fields is not None
    search = store._indexer
    watched = {
        "search index": Follower(search.pace, lambda: search_upto(history)),
        "field index": Follower(fields.pace, lambda: fields.upto),
        "schema learner": Follower(learner.pace, lambda: learned[0]),
    }
    costs = Costs()
    search._step = costs.counted(search._step, watched["search index"].steps, int)
    fields._timed_step = costs.counted(
        fields._timed_step, watched["field index"].steps, lambda s: s.rows
    )
    learner._timed_step = costs.counted(
        learner._timed_step, watched["schema learner"].steps, lambda s: s.rows
    )
    try:
        yield store, followers, watched, drift, costs
    finally:
        await followers.stop()
        await store.close()


def gaps(times: list[float], quiet_s: float) -> int:
    """How often the commits stopped for ``quiet_s`` (each such gap may let a follower step)."""
    return sum(1 for a, b in itertools.pairwise(times) if b - a >= quiet_s)


async def stream(store: Store, watched: dict[str, Follower], after_first: int) -> list[int]:
    """Record deliveries one after another until every follower took a step with rows, then
    ``after_first`` more; the ids recorded."""
    ids: list[int] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    more = after_first
    while more:
        stored = await store.record(delivery(len(ids)))
        ids.append(stored.id or 0)
        if all(w.steps for w in watched.values()):
            more -= 1
        assert loop.time() < deadline, "a follower never took a step"
    return ids


async def test_followers_yield_while_commits_keep_coming_and_catch_up_once_they_stop(
    following: Any,
) -> None:
    store, _, watched, drift, costs = following
    quiet_s = 0.5  # the commits stop for this long: a follower catches up at once
    for w in watched.values():
        w.pace.quiet_s = quiet_s
    committed: list[float] = []
    store.subscribe(lambda _: committed.append(time.monotonic()))

    ids = await stream(store, watched, after_first=150)
    costs.costly = False  # the steps after the stream cost what they cost
    last = ids[-1]
    during = {name: len(w.steps) for name, w in watched.items()}
    behind = {name: w.upto() for name, w in watched.items()}

    # While the commits kept coming, each follower took one step with rows (and one more for
    # each time they stopped for quiet_s on a busy machine): its share, not every commit's.
    stopped = gaps(committed, quiet_s)
    for name in NAMES:
        assert during[name] <= 1 + stopped, (name, during[name], stopped)
        if stopped == 0:
            assert behind[name] < last, name
        assert watched[name].pace.paused >= 1, name

    # Once the commits stop, each catches up to the last row, and the learner said the drift
    # of every drifting delivery (those it reached late included).
    await until(lambda: all(w.upto() == last for w in watched.values()))
    drifting = [i for n, i in enumerate(ids) if n % 50 == 49]
    await until(lambda: set(drifting) <= set(drift))
    assert sorted(set(drift)) == drifting
    assert all(w.pace.cut_short >= 1 for w in watched.values())


async def test_a_follower_holds_no_read_snapshot_while_it_waits(following: Any) -> None:
    """While every follower waits after its step (the commits just stopped; they would resume
    long after), the history's write-ahead log can start over: none of them holds a read
    snapshot. Asked to settle, each stops waiting and catches up."""
    store, followers, watched, _, costs = following
    for w in watched.values():
        w.pace.quiet_s = 3600.0  # the commits never count as stopped: only settling hurries
    ids = await stream(store, watched, after_first=50)
    costs.costly = False
    last = ids[-1]
    for name in NAMES:
        await until(lambda name=name: watched[name].pace.paused >= 1)
        assert watched[name].upto() < last, name

    # The store's own checkpointer may be copying the log at that moment: looked at again until
    # the log starts over, which a follower holding a snapshot through its pause would prevent.
    db = sqlite3.connect(store.path, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout = 1000")
        await until(lambda: db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone() == (0, 0, 0))
    finally:
        db.close()
    paused = {name: w.pace.paused for name, w in watched.items()}
    assert all(w.upto() < last for w in watched.values())  # still waiting after their step

    assert paused == {name: w.pace.paused for name, w in watched.items()}
    await asyncio.wait_for(store.settled(), DEADLINE_S)
    assert followers.field_indexer is not None and followers.learner is not None
    assert await followers.field_indexer.settled(DEADLINE_S)
    await asyncio.wait_for(followers.learner.asettled(), DEADLINE_S)
    await until(lambda: all(w.upto() == last for w in watched.values()))


async def test_deliveries_waiting_for_the_writer_make_every_follower_yield(following: Any) -> None:
    """Deliveries that wait for the writer (it commits many at once: the receiver is saturated)
    give each follower its small yield share; deliveries that each find the writer free (one a
    commit) give it its whole share again."""
    store, _, watched, _, costs = following
    costs.costly = False
    sent = 0

    async def send(together: int) -> None:
        nonlocal sent
        await asyncio.gather(*(store.record(delivery(sent + n)) for n in range(together)))
        sent += together

    async def until_sent(together: int, check: Callable[[], bool]) -> None:
        deadline = asyncio.get_running_loop().time() + DEADLINE_S
        while not check():
            assert asyncio.get_running_loop().time() < deadline, "the followers never noticed"
            await send(together)

    await until_sent(64, lambda: all(w.pace.saturated for w in watched.values()))
    for name in NAMES:
        assert watched[name].pace.share() == watched[name].pace.yield_share, name
    for name in ("search index", "field index"):  # the learner keeps its most, to catch up soon
        assert watched[name].pace.yield_share < watched[name].pace.max_share, name

    await until_sent(1, lambda: not any(w.pace.saturated for w in watched.values()))
    for name in NAMES:
        pace = watched[name].pace
        assert pace.share() == pace.max_share, name


async def test_a_follower_too_far_behind_takes_its_whole_share_while_saturated(
    following: Any,
) -> None:
    """Yielding has a bound: once more rows arrived than a follower read, by more than its
    max_behind, it takes its whole share again though the receiver is still saturated, so
    what reads past it (a search reading unindexed rows one by one) stays bounded."""
    store, _, watched, _, _ = following  # steps with rows are costly: each waits after one
    bound = 300
    for w in watched.values():
        w.pace.max_behind = bound
    sent = 0

    async def send_until(check: Callable[[], bool]) -> None:
        nonlocal sent
        deadline = asyncio.get_running_loop().time() + DEADLINE_S
        while not check():
            assert asyncio.get_running_loop().time() < deadline, "never came to pass"
            await asyncio.gather(*(store.record(delivery(sent + n)) for n in range(64)))
            sent += 64

    await send_until(lambda: all(w.pace.saturated and w.steps for w in watched.values()))
    for name in NAMES:
        pace = watched[name].pace
        if pace.behind <= bound:  # saturated and within the bound: it gives way
            assert pace.yielding and pace.share() == pace.yield_share, name

    await send_until(lambda: all(w.pace.behind > bound for w in watched.values()))
    for name in NAMES:
        pace = watched[name].pace
        assert pace.saturated, name
        assert not pace.yielding and pace.share() == pace.max_share, name
        assert pace.behind <= pace.arrived_rows <= sent, name
