"""The receiver's side of attaching: its home claimed (``instance.py``), its control channel served
(``control.py``), and what the channel says and does, taken from the runtime it runs beside.

``DeliveryRuntime.start_instance(kind)`` starts one; ``close()`` withdraws it first (attached
dashboards see the receiver go while it finishes the requests in flight) and releases the home
last, once the history is closed. It only listens to the runtime: after a commit one ``rows``
message (the newest id, never a body) is written to each viewer's socket buffer, at once after a
quiet spell and then at most every ``ROWS_EVERY_S`` while deliveries stream in (a viewer wakes
that often, not once per commit); nothing on the delivery path waits for a viewer. When a prune takes rows out of the history,
every viewer hears one ``removed`` message (at most every ``removals.TOLD_EVERY_S`` while it
runs, once when it ends) and reads its counts and rows again.

A viewer may ask for a prune (``events prune`` does): the store's writer runs it between its
commits (``Store.start_prune``), one at a time, and only that viewer hears how far it got, at
most every ``PRUNED_EVERY_S`` and once when it ended. It stops when that viewer asks or leaves,
and when the receiver stops (the viewer is told first, so it can go on by itself).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, Protocol

from walletpass_tui.runtime import instance
from walletpass_tui.runtime.control import (
    CHANGES,
    MAX_TARGETS,
    PRUNE,
    PRUNE_OPS,
    ForwardNote,
    PruneNote,
    ReceiverStatus,
    TargetNote,
    prune_cutoff,
)
from walletpass_tui.runtime.control_server import ControlServer
from walletpass_tui.runtime.draw_beside import DrawServer
from walletpass_tui.runtime.draw_beside import socket_path as draw_socket_path
from walletpass_tui.runtime.protocol import (
    DeliveryListener,
    ForwardListener,
    GapListener,
    StatusFeed,
)
from walletpass_tui.webhooks.models import Attempt, ForwardResult, ForwardRow, now_ms

log = logging.getLogger(__name__)

ROWS_EVERY_S = 0.05
PRUNED_EVERY_S = 0.1  # how often the viewer that asked for a prune hears how far it got
PRUNE_STOP_WAIT_S = 5.0  # a receiver that stops waits this long for its prune's step to end

if TYPE_CHECKING:
    from walletpass_tui.config import Settings
    from walletpass_tui.tunnel.watch import TunnelWatcher
    from walletpass_tui.webhooks.injection import Injection
    from walletpass_tui.webhooks.store import Store
    from walletpass_tui.webhooks.store.prune_job import PruneJob
    from walletpass_tui.webhooks.target_options import TargetOptions

# Why the failures injected changed (``DeliveryRuntime.injection_why``), as listen says it.
ASKED = "as an attached dashboard asked"
UNDONE = "since the dashboard that asked for them closed"


class Served(Protocol):
    """What the channel needs of the receiver it runs beside (``DeliveryRuntime``)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def url(self) -> str | None: ...

    @property
    def store(self) -> Store: ...

    @property
    def status(self) -> ReceiverStatus: ...

    @property
    def status_feed(self) -> StatusFeed | None: ...

    @property
    def public_url(self) -> str | None: ...

    @property
    def tunnel(self) -> TunnelWatcher | None: ...

    def subscribe(
        self,
        deliveries: DeliveryListener | None = None,
        forwards: ForwardListener | None = None,
        *,
        gaps: GapListener | None = None,
    ) -> Callable[[], None]: ...

    def watch(self, listener: Callable[[], None]) -> Callable[[], None]: ...

    @property
    def injection(self) -> Injection: ...

    def control(self, op: str, message: Mapping[str, Any], why: str = "") -> None: ...

    def set_injection(self, injection: Injection, why: str = "") -> None: ...

    def target_options(self, target: str) -> TargetOptions: ...


class Attachable:
    """One receiver made findable and controllable; built by ``start``."""

    def __init__(
        self, runtime: Served, claim: instance.Claim, record: instance.InstanceRecord
    ) -> None:
        self.runtime = runtime
        self.claim = claim
        self.record = record
        self.server = ControlServer(claim.socket_path, self)
        self.drawer = DrawServer(draw_socket_path(claim.directory), claim.home)
        self.upto = 0  # the newest attempt id committed, as far as this receiver knows
        self._told = 0  # the newest id viewers were told of
        self._told_at = float("-inf")
        self._telling: asyncio.TimerHandle | None = None
        self._unsubscribe: list[Callable[[], None]] = []
        self._status: ReceiverStatus | None = None
        self._feed = runtime.status_feed
        # What viewers asked of the receiver lasts as long as they do: the viewers that asked
        # (holders), which fields of the injection they changed, and what those were before.
        self._holders: set[object] = set()
        self._changed: set[str] = set()
        self._before: Injection | None = None
        self._withdrawn = False
        self._prune: PruneJob | None = None  # the prune a viewer asked for, while it runs
        self._pruner: object = None  # that viewer
        self._pruned_told_at = float("-inf")

    @property
    def previous(self) -> instance.InstanceRecord | None:
        """What a receiver that died on this home had left in the state file."""
        return self.claim.previous

    @classmethod
    async def start(cls, runtime: Served, kind: str) -> Attachable:
        """Claim the home, serve the channel, then publish the state file (so a dashboard that
        finds it can connect at once). AlreadyRunning when another receiver holds the home."""
        claim = await asyncio.to_thread(instance.claim, runtime.settings.home)
        feed = runtime.status_feed
        record = instance.InstanceRecord(
            pid=os.getpid(),
            kind=kind,
            url=instance.shown_url(runtime.url),
            started_at_ms=now_ms(),
            control=True,
            relay=instance.shown_url(feed.url) if feed is not None else None,
            public_url=instance.public_url_kept(runtime.public_url),
        )
        attachable = cls(runtime, claim, record)
        try:
            attachable.upto = await runtime.store.last_id()
            await attachable.server.start()
            await attachable.drawer.start()
            attachable._follow()
            claim.publish(record)
        except BaseException:
            await attachable.withdraw()
            claim.release()
            raise
        return attachable

    async def withdraw(self) -> None:
        """Remove the state file, stop listening to the runtime and close the channel: a viewer
        that sees it close and looks again finds no receiver."""
        self._withdrawn = True  # viewers closed from now on are the receiver's going, not theirs
        self.claim.withdraw()
        await self._stop_prune()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe.clear()
        if self._telling is not None:
            self._telling.cancel()
            self._telling = None
        await self.drawer.stop()
        await self.server.stop()

    def release(self) -> None:
        self.claim.release()

    # -- what the channel says -------------------------------------------------------------------

    def _follow(self) -> None:
        runtime = self.runtime
        self._unsubscribe.append(
            runtime.subscribe(self._committed, self._forwarded, gaps=self._removed)
        )
        self._unsubscribe.append(runtime.store.on_health(lambda _: self._state_changed()))
        self._unsubscribe.append(runtime.watch(self._state_changed))
        if self._feed is not None:
            self._unsubscribe.append(self._feed.subscribe(state=lambda _: self._state_changed()))
        if runtime.tunnel is not None:
            self._unsubscribe.append(runtime.tunnel.subscribe(lambda _: self._tunnel_changed()))

    def _tunnel_changed(self) -> None:
        """The state file follows the tunnel's URL (what `endpoints create --from-listener`
        reads from another shell); attached dashboards are told."""
        public_url = instance.public_url_kept(self.runtime.public_url)
        if public_url != self.record.public_url:
            self.record = replace(self.record, public_url=public_url)
            self.claim.publish(self.record)
        self._state_changed()

    def _committed(self, batch: Sequence[Attempt]) -> None:
        newest = max((a.id for a in batch if a.id is not None), default=0)
        if newest <= self.upto:
            return
        self.upto = newest
        if self._telling is not None:
            return  # told with the next message, already due
        loop = asyncio.get_running_loop()
        wait = self._told_at + ROWS_EVERY_S - loop.time()
        if wait <= 0:
            self._tell_rows()
        else:
            self._telling = loop.call_later(wait, self._tell_rows)

    def _tell_rows(self) -> None:
        self._telling = None
        self._told_at = asyncio.get_running_loop().time()
        if self.upto > self._told:
            self._told = self.upto
            self.server.broadcast({"type": "rows", "upto": self.upto})

    def _removed(self, deleted: int) -> None:
        """A prune took rows out of the history (``removals.py``): every viewer reads its counts
        and rows again (but the one that asked for it, which hears ``pruned``; this is called
        before the job's end is told, so that viewer is still known)."""
        self.server.broadcast({"type": "removed", "deleted": deleted}, but=self._pruner)

    def _forwarded(self, row: ForwardRow, result: ForwardResult) -> None:
        note = ForwardNote(
            id=row.id,
            attempt_id=row.attempt_id,
            webhook_id=row.webhook_id,
            kind=row.kind,
            target=row.target,
            status=result.status,
            latency_ms=result.latency_ms,
            error=result.error,
        )
        self.server.broadcast(note.to_wire())

    def _state_changed(self) -> None:
        if not self.server.viewers:  # nobody to tell; a viewer that arrives is greeted with it
            self._status = None
            return
        status = self.status()
        if status != self._status:  # a relay link reports every cursor; the words change seldom
            self._status = status
            self.server.broadcast({"type": "state", "state": status.to_wire()})

    def status(self) -> ReceiverStatus:
        status = self.runtime.status
        return replace(status, controls=status.controls + PRUNE_OPS)

    # -- control.Handler ---------------------------------------------------------------------------

    def hello(self) -> dict[str, Any]:
        self._status = self.status()
        return {
            "instance": asdict(self.record) | {"home": str(self.runtime.settings.home)},
            "state": self._status.to_wire(),
            "upto": self.upto,
        }

    def after_hello(self) -> list[dict[str, Any]]:
        """Each forward target's options (listen's --header, --insecure, --ca-bundle's path), so
        an attached dashboard's replays and checks to it carry the same."""
        told: list[dict[str, Any]] = []
        for target in self.runtime.status.forward_targets[:MAX_TARGETS]:
            options = self.runtime.target_options(target)
            note = TargetNote(
                target,
                headers=options.headers,
                insecure=options.trust.insecure,
                ca_file=options.trust.ca_file,
            )
            told.extend(note.to_wire())
        return told

    def request(self, op: str, message: Mapping[str, Any], viewer: object) -> None:
        """A viewer's request, checked and done by the runtime (which tells every viewer the new
        state). It holds until the last viewer that asked for anything leaves (``left``)."""
        if op in PRUNE_OPS:
            self._prune_request(op, message, viewer)
            return
        before = self.runtime.injection
        self.runtime.control(op, message, ASKED)
        if not self._holders:
            self._before, self._changed = before, set()
        self._holders.add(viewer)
        self._changed.add(CHANGES[op])

    def left(self, viewer: object) -> None:
        """A viewer is gone. Once no viewer that asked for something remains, what they changed
        goes back to what it was before (a pause never outlives the dashboards that made it:
        with nobody looking, every delivery would be answered 503)."""
        if viewer is self._pruner and self._prune is not None:
            self._prune.stop("the command that asked for it went away")
        if viewer not in self._holders:
            return
        self._holders.discard(viewer)
        if self._holders or self._withdrawn or self._before is None:
            return
        before, changed = self._before, self._changed
        self._before, self._changed = None, set()
        now = self.runtime.injection
        undone = replace(now, **{name: getattr(before, name) for name in changed})
        if undone != now:
            self.runtime.set_injection(undone, UNDONE)

    # -- a prune a viewer asked for ----------------------------------------------------------------

    def _prune_request(self, op: str, message: Mapping[str, Any], viewer: object) -> None:
        job = self._prune
        if op != PRUNE:  # prune_stop
            if job is None or viewer is not self._pruner:
                raise ValueError("no prune of yours is under way")
            job.stop("stopped as asked")
            return
        cutoff = prune_cutoff(message, now_ms())
        if job is not None:
            raise RuntimeError(
                "The receiver is pruning its history already, for another command (one prune "
                "at a time); wait for it to end, then run this again."
            )
        if self._withdrawn:
            raise RuntimeError("The receiver is stopping; run the prune again once it has.")
        job = self.runtime.store.start_prune(cutoff)
        self._prune, self._pruner = job, viewer
        self._pruned_told_at = float("-inf")
        job.stepped.subscribe(self._pruned)
        job.ended.subscribe(self._prune_ended)
        log.info("pruning the attempts received before %d, as a viewer asked", cutoff)

    def _pruned(self, job: PruneJob) -> None:
        now = asyncio.get_running_loop().time()
        if now - self._pruned_told_at >= PRUNED_EVERY_S:
            self._pruned_told_at = now
            self.server.tell(self._pruner, PruneNote(job.deleted).to_wire())

    def _prune_ended(self, job: PruneJob) -> None:
        note = PruneNote(job.deleted, job.end, job.reason)
        self.server.tell(self._pruner, note.to_wire())
        log.info("prune %s (%s): %s", job.end, job.reason or "-", job.describe())
        self._prune = self._pruner = None

    async def _stop_prune(self) -> None:
        """The receiver stops: its prune ends after the step under way, and the viewer that
        asked hears how far it got before the channel closes."""
        job = self._prune
        if job is None:
            return
        ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def told(_: PruneJob) -> None:
            if not ended.done():
                ended.set_result(None)

        unsubscribe = job.ended.subscribe(told)
        job.stop("the receiver is stopping")
        try:
            with contextlib.suppress(TimeoutError):  # told by the store's close instead
                async with asyncio.timeout(PRUNE_STOP_WAIT_S):
                    await ended
        finally:
            unsubscribe()
