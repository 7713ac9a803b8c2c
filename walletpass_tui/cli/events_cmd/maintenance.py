"""``events prune`` and ``events pending``: delete old history, see or give up waiting forwards.

A receiver running on the home is asked to prune (``runtime/prune_client.py``): its own writer
deletes between its commits, deliveries first. Without one, or with one that cannot be asked (an
older version), the command prunes by itself in steps (``prune_in_steps``), paced beside a
receiver; it does the same for the rest when the receiver stops before the end."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import CommandError, settings_from_args
from walletpass_tui.cli.events_cmd.shared import with_history, with_store
from walletpass_tui.cli.progress import Progress
from walletpass_tui.cli.signals import on_signals
from walletpass_tui.errors import UsageError
from walletpass_tui.runtime.control import PRUNE_DONE, PRUNE_FAILED, PRUNE_STOPPED
from walletpass_tui.runtime.prune_client import SILENT
from walletpass_tui.text import format_ms, printable

if TYPE_CHECKING:
    from walletpass_tui.config import Settings
    from walletpass_tui.runtime.instance import InstanceRecord
    from walletpass_tui.runtime.prune_client import Pruned
    from walletpass_tui.webhooks.store import Store
    from walletpass_tui.webhooks.store.prune import Step
    from walletpass_tui.webhooks.store.reading import History

log = logging.getLogger(__name__)


def _confirm(question: str) -> bool:
    """Ask on the terminal; False when there is none (a script must pass --yes)."""
    if not sys.stdin.isatty():
        return False
    try:
        answer = input(f"{question} [y/N] ")
    except EOFError:  # no answer on stdin: no
        return False
    return answer.strip().lower() in ("y", "yes")


# A prune step is one transaction; its size follows how long the last one held the history's
# write lock. Beside a receiver running on the home, a step holds it about HOLD_S; then the prune
# waits until the receiver has committed what waited for the step (at most WAIT_S: SQLite retries
# a waiting writer every 100 ms at the longest), and PAUSE_S or as long as the step held the lock
# more, whichever is longer, so what arrived meanwhile gets in too and the receiver has the lock
# at least half the time it wants it. A receiver with nothing to commit after a step is not waited
# for after the next, only paused for. The receiver's own checkpoints copy the log. With none,
# steps grow to about HOLD_ALONE_S: a large step costs less per row (index pages that rows share
# are written once per step), so a prune with nothing else writing takes a fraction of the time,
# and the prune copies the log into the database file after each step, so the log holds a step,
# not everything pruned.
FIRST_STEP = 100
MIN_STEP, MAX_STEP = 50, 20_000
HOLD_S = 0.02
HOLD_ALONE_S = 0.5
WAIT_S = 0.25
PAUSE_S = 0.03
POLL_S = 0.002
LOOK_EVERY_S = 1.0  # whether a receiver runs on the home is looked at again this often


def cmd_prune(args: argparse.Namespace) -> int:

    settings = settings_from_args(args)
    if args.older_than is not None:
        cutoff = args.older_than.ms  # a duration back from now, or an ISO 8601 time
        ago = args.older_than.ago_s
        if ago is not None:
            label = f"older than {_duration_label(ago)}"
        else:
            # A later time is now: what arrives while the prune runs is kept, and said so.
            cutoff = min(cutoff, int(time.time() * 1000))
            label = f"received before {format_ms(cutoff)}"
    elif settings.retention_days > 0:
        cutoff = int((time.time() - settings.retention_days * 86400) * 1000)
        label = f"older than {settings.retention_days} days"
    else:
        raise UsageError(
            "Give --older-than (e.g. 7d); retention_days is 0, which keeps everything."
        )

    async def count(history: History) -> tuple[int, int]:
        from walletpass_tui.webhooks.models import LogFilter

        return await history.count(LogFilter(since_ms=cutoff)), await history.count()

    kept, total = with_history(settings, count)
    if not args.yes and total and not kept:
        question = f"This deletes all {total} attempt(s) in {settings.database_path}. Continue?"
        if not _confirm(question):
            raise UsageError(
                f"Not pruning: it would delete all {total} attempt(s) of the history. "
                "Pass --yes to do it anyway (e.g. from a script)."
            )

    with Progress("pruned", total - kept) as progress:
        removed, stopped = asyncio.run(_prune(settings, cutoff, total - kept, progress))
    if stopped:
        print(
            f"Stopped: removed {removed} attempt(s) {label}; run the command again to remove "
            "the rest."
        )
        return 130
    print(f"Removed {removed} attempt(s) {label}.")
    return 0


async def _prune(
    settings: Settings, cutoff_ms: int, old: int, progress: Progress
) -> tuple[int, bool]:
    """Prune, by the receiver running on the home when it takes the request, else here (and
    here for the rest when it stops before the end); (how many were removed, whether Ctrl-C
    stopped it). Ctrl-C stops after the step under way; a second one interrupts at once."""
    from walletpass_tui.runtime import instance

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopped() -> None:
        stop.set()
        with contextlib.suppress(RuntimeError, ValueError):  # the loop is closing: nothing set
            loop.remove_signal_handler(signal.SIGINT)  # the next Ctrl-C interrupts at once

    def receiver_runs() -> bool:
        return isinstance(instance.find(settings.home, wait_s=0), instance.Running)

    with on_signals(stopped, (signal.SIGINT,)):
        by_receiver = 0
        found = instance.find(settings.home, wait_s=0)
        if isinstance(found, instance.Running) and found.record is not None:
            pruned = await _ask_receiver(settings, found.record, cutoff_ms, progress, stop)
            if pruned is not None:
                if pruned.end in (PRUNE_DONE, PRUNE_STOPPED):
                    return pruned.deleted, pruned.end == PRUNE_STOPPED
                if pruned.end == PRUNE_FAILED:
                    raise CommandError(
                        f"The receiver on this home could not go on pruning after removing "
                        f"{pruned.deleted} attempt(s): {printable(pruned.reason or '-', 300)}"
                    )
                if pruned.end == SILENT:
                    return _silent(pruned, progress, stop)
                by_receiver = max(pruned.deleted, old - await _count_before(settings, cutoff_ms))
                if stop.is_set():  # Ctrl-C, and the receiver went before it said its count
                    return by_receiver, True
                progress.close()  # the sentence on a line of its own; drawn again as it goes on
                print(
                    f"The receiver stopped before the prune ended ({by_receiver} attempt(s) "
                    "removed by it); going on without it.",
                    file=sys.stderr,
                    flush=True,
                )
        from walletpass_tui.webhooks.store import Store

        async with await Store.open(settings.database_path) as store:
            here = await prune_in_steps(
                store, cutoff_ms, _Counted(progress, by_receiver), receiver_runs, stop=stop
            )
    return by_receiver + here, stop.is_set()


def _silent(pruned: Pruned, progress: Progress, stop: asyncio.Event) -> tuple[int, bool]:
    """The receiver stopped talking mid-way (suspended, e.g. by Ctrl-Z in its terminal, or
    hung): after Ctrl-C the command ends with what it was told; else one sentence, exit 1. The
    receiver stops its prune after the step under way once it runs again and finds the command
    gone."""
    progress.close()
    if stop.is_set():
        print(
            f"The receiver on this home did not answer ({pruned.reason}); it may have removed "
            "more than said below.",
            file=sys.stderr,
            flush=True,
        )
        return pruned.deleted, True
    raise CommandError(
        f"The receiver on this home stopped answering while it pruned ({pruned.reason}; "
        f"{pruned.deleted} attempt(s) removed so far): it is suspended (Ctrl-Z in its terminal) "
        "or hung; resume it (fg) or stop it, then run this again."
    )


async def _ask_receiver(
    settings: Settings,
    record: InstanceRecord,
    cutoff_ms: int,
    progress: Progress,
    stop: asyncio.Event,
) -> Pruned | None:
    """The prune done by the receiver described by ``record``; None when it cannot be asked."""
    from walletpass_tui.runtime import instance
    from walletpass_tui.runtime.control import ControlError
    from walletpass_tui.runtime.prune_client import NOT_TAKEN, prune_through
    from walletpass_tui.webhooks.models import now_ms

    if not record.control:
        return None
    # Never later than now: the deliveries that arrive while it runs are kept. Never before
    # 1970 either (a retention of up to a century can reach that far): nothing was received then.
    before = max(0, min(cutoff_ms, now_ms()))
    progress.update(0)
    try:
        pruned = await prune_through(
            instance.socket_path(settings.home), before, progress.update, stop
        )
    except ControlError as exc:  # refused: why, in its words (another process's: escaped)
        raise CommandError(printable(str(exc), 300)) from None
    if pruned.end == NOT_TAKEN:  # an older receiver, or out of reach: pruned here, as before
        why = pruned.reason
        log.info("pruning here: the receiver (%s) cannot be asked: %s", record.describe(), why)
        return None
    return pruned


async def _count_before(settings: Settings, cutoff_ms: int) -> int:
    """How many attempts received before ``cutoff_ms`` are still in the history."""
    from walletpass_tui.webhooks.models import LogFilter
    from walletpass_tui.webhooks.store.read_only import open_history

    async with await open_history(settings.database_path) as history:
        return await history.count(LogFilter(until_ms=cutoff_ms))


class _Counted:
    """A progress that counts on from what the receiver removed before it stopped."""

    def __init__(self, progress: Progress, before: int) -> None:
        self.progress = progress
        self.before = before

    def update(self, done: int) -> None:
        self.progress.update(self.before + done)


async def prune_in_steps(
    store: Store,
    cutoff_ms: int,
    progress: Progress | _Counted,
    receiver_runs: Callable[[], bool] = lambda: False,
    *,
    stop: asyncio.Event | None = None,
) -> int:
    """Delete every attempt received before ``cutoff_ms``, oldest first, in steps of one
    transaction each, and show how far it got on a terminal. A receiver running on the home
    waits for one step at most before its commit: after each step the prune waits for it to
    commit (see HOLD_S and WAIT_S above). ``stop`` set: it ends after the step under way.
    Returns how many were deleted. (A receiver that takes the request prunes by itself
    instead: see ``_prune``.)"""
    removed = 0
    step = FIRST_STEP
    progress.update(0)
    running, looked = receiver_runs(), time.monotonic()
    receiving = True  # whether the receiver committed after the last step
    while True:
        # Beside a receiver no fsync of its own: the receiver's next commit syncs the log.
        done = await store.prune_oldest(cutoff_ms, step, durable=not running)
        removed += done.deleted
        progress.update(removed)
        if not running:
            await store.copy_log()
        if done.deleted < step or (stop is not None and stop.is_set()):
            return removed
        if time.monotonic() - looked > LOOK_EVERY_S:
            running, looked = receiver_runs(), time.monotonic()
        held = max(done.held_s, 0.001)
        target = HOLD_S if running else HOLD_ALONE_S
        wanted = step * target / held
        step = int(max(MIN_STEP, min(MAX_STEP, step * 2, max(step / 2, wanted))))
        if running:
            wait_s = WAIT_S if receiving else 0.0
            receiving = await _let_receiver_in(store, done, wait_s, max(PAUSE_S, held))


async def _let_receiver_in(store: Store, step: Step, wait_s: float, pause_s: float) -> bool:
    """After ``step``, beside a running receiver: wait until it has committed (``wait_s`` at
    most), then ``pause_s`` more, so it commits what arrived meanwhile too; whether it
    committed."""
    deadline = time.monotonic() + wait_s
    while not (committed := await store.others_committed(step)):
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(POLL_S)
    await asyncio.sleep(pause_s)
    return committed or await store.others_committed(step)


def _duration_label(seconds: float) -> str:
    from walletpass_tui.text import format_duration

    return format_duration(seconds, fine=False)


def when_pending_go_out(settings: Settings) -> str:
    """When the pending forwards are sent: by the receiver running on this home if it forwards,
    else once one that does runs."""
    from walletpass_tui.cli.home_receiver import running_url

    if running_url(settings):
        return (
            "A receiver runs on this home: it is retrying them if it was started with "
            "--forward-to, else they go out once one that is runs."
        )
    return "They go out when 'walletpass-tui listen --forward-to ...' or the dashboard runs."


def cmd_pending(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)

    async def work(store: Store) -> tuple[int, list[tuple[str, int]]]:
        if args.give_up:
            return await store.give_up_pending(args.target), []
        by_target = await store.pending_forwards_by_target()
        if args.target is not None:
            by_target = [(t, n) for t, n in by_target if t == args.target]
        return sum(n for _, n in by_target), by_target

    count, by_target = with_store(settings, work)
    if args.give_up:
        print(f"Gave up on {count} pending forward(s); they stay in the history as 'given up'.")
    elif count:
        print(f"{count} forward(s) pending:")
        for target, n in by_target:
            print(f"  {n:>6}  {printable(target, 200)}")
        print(when_pending_go_out(settings))
    else:
        where = f" to {printable(args.target, 200)}" if args.target else ""
        print(f"No forwards pending{where}.")
    return 0
