"""``SchemaLearner``: follows the history by row id off the commit path, the schema file's
connection on a ``SqliteThread`` of its own (``sqlite_thread.py``), paced from the event loop.

After a commit (``wake()``, a listener of the store) the learner waits COALESCE_S for more
commits, then learns every new row in one transaction of the schema file (``Book.step``, on the
file's thread), and tells its drift subscribers what the rows showed first. Without a wake-up it
looks for new rows every POLL_S (a history written by another program). Everything touching the
file runs on its thread, in the order it was asked for: a step, ``settled()``, ``rebuild()`` and
``learn_templates()`` never overlap, and each runs after the step under way.

A backlog with nothing arriving (the first start on a long history, the end of a rush) is
learned in chunks that leave the interpreter to others a tenth of the time (BACKLOG_SHARE). While
deliveries keep arriving, deliveries come first (``webhooks/store/pacing.py``): learning takes
at most BUSY_SHARE of the time, and while the receiver is saturated (deliveries wait for the
writer) YIELD_SHARE in short steps; what the learner could not keep pace with is caught up as soon
as the rush is over.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from walletpass_tui.listeners import Listeners
from walletpass_tui.logs import suppressed
from walletpass_tui.schemas.book import CHUNK, Book, Progress, Step
from walletpass_tui.schemas.model import Finding, GroupKey
from walletpass_tui.sqlite_thread import SqliteThread
from walletpass_tui.webhooks.store.pacing import Pace

if TYPE_CHECKING:
    from walletpass_tui.webhooks.store import Store

log = logging.getLogger(__name__)

T = TypeVar("T")
COALESCE_S = 0.05  # after a wake-up, wait this long for more commits
POLL_S = 0.5  # look for rows committed by another program this often
RETRY_S = 0.5  # after a failed step (the file locked by another program)
BACKLOG_SHARE = 0.9  # of the time a backlog may take while nothing arrives
BUSY_SHARE = 0.33  # of the time learning takes at most while commits keep arriving
# ... and while the receiver is saturated: as much, so that the learner catches up within a
# quarter of a saturated run's time after it (benchmarks/schema.py: a quarter of the time gave
# 0.32 of it with varied bodies, a third 0.07-0.16)
YIELD_SHARE = BUSY_SHARE

DriftListener = Callable[[int | None, Sequence[Finding]], None]
WarmUpListener = Callable[[GroupKey, int], None]
LearnedListener = Callable[[Step], None]
ProgressListener = Callable[[int], None]


class SchemaLearner:
    """Learn the schema of every topic from the history at ``history_path``.

    ``start()``, on the event loop, opens the schema file on the learner's thread and begins
    following the history; ``await aclose()`` ends it (safe to call twice). Listeners registered
    with ``on_drift`` are called with ``(attempt_id, findings)`` for each delivery that showed a
    drift first, on the event loop ``start()`` was called on. Only rows committed after
    ``start()`` are announced; drift found while catching up with older rows, or while
    rebuilding, is stored and queryable but not announced.
    """

    def __init__(
        self,
        history_path: Path,
        *,
        busy_timeout_ms: int = 5000,
        coalesce_s: float = COALESCE_S,
        poll_s: float = POLL_S,
    ) -> None:
        self.history_path = Path(history_path)
        self._book = Book(self.history_path, busy_timeout_ms)
        self._coalesce_s = coalesce_s
        self._poll_s = poll_s
        self._thread: SqliteThread | None = None  # the schema file's: every Book call runs there
        self._task: asyncio.Task[None] | None = None  # the pacing, on the event loop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._wake = asyncio.Event()
        self._opened = False  # the file was opened once (set on its thread)
        self._stopping = False
        self.pace = Pace(
            max_share=BUSY_SHARE,
            yield_share=YIELD_SHARE,
            backlog_share=BACKLOG_SHARE,
        )
        self._drift: Listeners[[int | None, Sequence[Finding]]] = Listeners(__name__, "drift")
        self._learned: Listeners[[Step]] = Listeners(__name__, "schema learned")
        self._progress: Listeners[[int]] = Listeners(__name__, "learning progress")
        self._warm_up: Listeners[[GroupKey, int]] = Listeners(__name__, "warm-up")
        self._announce_after: int | None = None
        self.failures = 0
        self.problem: str | None = None  # why learning stopped for now (None: it works)

    # -- life --------------------------------------------------------------------------------

    def start(self, announce_after: int | None = None) -> SchemaLearner:
        """Start following the history (returns at once; the file is opened on its thread).
        Call it on the event loop: the pacing runs there, and listeners are called there.

        Drift is announced for rows past ``announce_after`` (by default the history's last row
        when the thread opens the file); a runtime passes the last row it knows was committed
        before it starts accepting deliveries, so none of them can fall before that mark.
        """
        if self._thread is not None:
            raise RuntimeError("This SchemaLearner was already started.")
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._announce_after = announce_after
        thread = self._thread = SqliteThread("schema-learner")
        opened = thread.run(self._open_book)  # first on the thread: before any job
        self._task = asyncio.create_task(self._run(thread, opened), name="schema-learner")
        self.wake()
        return self

    async def aclose(self) -> None:
        """Finish the step under way and close the file; jobs asked for before still run, later
        ones are refused."""
        self._stopping = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await task
        thread = self._thread
        if thread is not None and not thread.closed:
            with suppressed(log, "closing the schema file"):
                await thread.run(self._book.close)  # after the step and jobs under way
            thread.close()

    def wake(self, batch: object = None) -> None:
        """New rows were committed: learn them soon. A store listener (``store.subscribe``);
        safe to call from any thread."""
        if batch is not None:  # a commit's rows (not a look asked for)
            self.pace.arrived(batch)
        if self._loop_thread == threading.get_ident() or self._loop is None:
            self._wake.set()
        elif not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nothing to wake
                self._loop.call_soon_threadsafe(self._wake.set)

    def follow(self, store: Store) -> Callable[[], None]:
        """Wake after each of ``store``'s commits; returns a function that stops that."""
        return store.subscribe(self.wake)

    # -- listeners ---------------------------------------------------------------------------

    def on_drift(self, listener: DriftListener) -> Callable[[], None]:
        """Call ``listener(attempt_id, findings)`` for each new delivery that showed drift first
        (right after its batch is learned); returns a function that unsubscribes."""
        return self._drift.subscribe(listener)

    def on_progress(self, listener: ProgressListener) -> Callable[[], None]:
        """Call ``listener(upto)`` after each batch that read any row (verified or not), with the
        last row id read: every delivery up to it has been looked at, and the drift it showed
        was told before this call. Returns a function that unsubscribes."""
        return self._progress.subscribe(listener)

    def on_warm_up(self, listener: WarmUpListener) -> Callable[[], None]:
        """Call ``listener(group, samples)`` after each batch that taught a group still learning
        what its payloads look like (``samples`` of DRIFT_AFTER; at DRIFT_AFTER drift is looked
        for from then on, and the findings of what they disagreed on are told right after, as
        drift). Only for rows committed after ``start()``. Returns a function that
        unsubscribes."""
        return self._warm_up.subscribe(listener)

    def on_learned(self, listener: LearnedListener) -> Callable[[], None]:
        """Call ``listener(step)`` after each batch that learned anything (a view of the
        schemas can refresh then); returns a function that unsubscribes."""
        return self._learned.subscribe(listener)

    # -- work handed to the file's thread ----------------------------------------------------

    def _submit(self, job: Callable[[], T]) -> concurrent.futures.Future[T]:
        """``job()`` on the file's thread, after the work asked for before it."""
        thread = self._thread
        if thread is None or self._stopping or thread.closed:
            future: concurrent.futures.Future[T] = concurrent.futures.Future()
            future.set_exception(RuntimeError("The schema learner is not running."))
            return future
        return thread.submit(self._job, job)

    def settled(self, timeout: float | None = None) -> Step:
        """Block until every row committed before this call is learned; returns what that took
        (from any thread; from the event loop, ``await asettled()``)."""
        return self._submit(self._book.catch_up).result(timeout)

    async def asettled(self) -> Step:
        return await asyncio.wrap_future(self._submit(self._book.catch_up))

    def rebuild(self, progress: Progress | None = None) -> int:
        """Forget every topic and learn the whole stored history again (blocks: call it off the
        event loop; ``progress(done, total)`` is called on the learner's thread). Returns the
        deliveries learned."""

        def job() -> int:
            learned = self._book.rebuild(progress)
            # a view of the schemas refreshes; no drift is announced for old deliveries
            self._call(self._learned.notify, Step(learned=learned))
            return learned

        return self._submit(job).result()

    def learn_templates(
        self, templates: Iterable[Any], seen_at_ms: int | None = None
    ) -> concurrent.futures.Future[list[Finding]]:
        """Learn the template objects of ``GET passTemplates``; the future holds the drift they
        showed (``await asyncio.wrap_future(...)`` from the event loop)."""
        items = list(templates)
        return self._submit(lambda: self._book.learn_templates(items, seen_at_ms))

    # -- the pacing, on the event loop -------------------------------------------------------

    async def _run(self, thread: SqliteThread, opened: asyncio.Future[bool]) -> None:
        while not await opened:
            await asyncio.sleep(RETRY_S)
            opened = thread.run(self._open_book)
        while True:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow the cancel
            # aclose() sends when a wake-up comes at the same moment, and it would wait forever.
            with contextlib.suppress(TimeoutError):  # no wake-up: look for new rows anyway
                async with asyncio.timeout(self._poll_s):
                    await self._wake.wait()
            if self._wake.is_set():
                await asyncio.sleep(self._coalesce_s)  # gather the commits that follow
            self._wake.clear()
            await self._follow(thread)

    async def _follow(self, thread: SqliteThread) -> None:
        """Learn every new row: one step after a commit; a backlog in chunks, yielding."""
        while True:
            # From the moment it is asked for: the trip to the thread and back to a busy event
            # loop left the time to others too.
            began = time.monotonic()
            # Whole chunks even while the receiver is saturated: each step writes the schema
            # file in a transaction of its own, so short steps cost more per delivery than the
            # receiver gains (the interpreter switches threads every 5 ms anyway), and the
            # learner then fell behind by more than a quarter of a saturated run.
            limit = CHUNK
            done = await thread.run(self._timed_step, limit)
            if done is None:  # failed: _failed logged it and shows the problem
                await asyncio.sleep(RETRY_S)
                self._wake.set()
                return
            step, spent = done
            self.pace.measure(step.rows, spent)
            if step.rows < limit:  # the next step waits COALESCE_S anyway: part of the pause
                await self.pace.pause(spent, began, then=self._coalesce_s)
                return
            await self.pace.pause(spent, began)

    # -- on the file's thread ----------------------------------------------------------------

    def _open_book(self) -> bool:
        """Open the file (False: it failed, logged and shown; tried again after RETRY_S)."""
        try:
            self._open_once()
        except Exception as exc:  # _failed logs it and shows the problem
            self._failed(exc)
            return False
        return True

    def _open_once(self) -> None:
        self._book.open()
        if self._announce_after is None:
            self._announce_after = self._book.top()
        self._opened = True
        self.problem = None

    def _timed_step(self, limit: int) -> tuple[Step, float] | None:
        """One chunk, and how long it took on the file's thread (Python work: the event loop
        waits for the interpreter's lock meanwhile, see pacing.py); None: it failed, logged and
        shown."""
        started = time.perf_counter()
        try:
            step = self._book.step(limit)
        except Exception as exc:  # _failed logs it and shows the problem
            self._failed(exc)
            return None
        self.problem = None
        self._tell(step)
        return step, time.perf_counter() - started

    def _job(self, job: Callable[[], T]) -> T:
        """A job asked for by a caller: the file opened first if it never was; a failure is
        logged and shown, and raised to the caller."""
        try:
            if not self._opened:
                self._open_once()
            result = job()
        except Exception as exc:  # _failed logs it; the caller gets the exception
            self._failed(exc)
            raise
        if isinstance(result, Step):
            self._tell(result)
        return result

    def _failed(self, exc: BaseException) -> None:
        self.failures += 1
        problem = (
            f"Learning payload schemas from {self.history_path} failed ({type(exc).__name__}: "
            f"{exc}); it is tried again, and deliveries are not affected."
        )
        # Said once while it lasts (it is tried again every RETRY_S): then at debug level.
        log.log(logging.DEBUG if problem == self.problem else logging.WARNING, "%s", problem)
        self.problem = problem
        with suppressed(log, "recovering the schema book"):
            self._book.recover()

    def _tell(self, step: Step) -> None:
        if step.learned:
            after = self._announce_after or 0
            news = [(a, f) for a, f in step.findings if a is None or a > after]
            self._call(self._learned.notify, step)
            for key, (samples, row) in step.warming.items():
                if row > after:
                    self._call(self._warm_up.notify, key, samples)
            for attempt_id, found in news:
                self._call(self._drift.notify, attempt_id, found)
        if step.rows:
            self._call(self._progress.notify, step.upto)

    def _call(self, notify: Callable[..., None], *args: Any) -> None:
        """Tell the listeners on the event loop the learner was started on; ``notify`` logs a
        listener that fails and goes on."""
        loop = self._loop
        if loop is None or loop.is_closed():
            log.debug("The event loop closed; a schema notice was not delivered")
            return
        try:
            loop.call_soon_threadsafe(notify, *args)
        except RuntimeError:  # the loop closed meanwhile: nobody is left on it to tell
            log.debug("The event loop closed; a schema notice was not delivered")
