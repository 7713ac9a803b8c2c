"""The dashboard's data when it is attached to a receiver running in another process.

``AttachedRuntime`` stands where a ``DeliveryRuntime`` stands for a dashboard with its own
receiver, and offers the dashboard the same things: the history (a store of its own on the same
file: SQLite in WAL mode lets the two processes share it), the endpoints, new deliveries after
each commit (``subscribe``), forwards answered, whether acknowledgements are paused. What it
cannot do itself it asks the receiver, over the control channel (``runtime/control.py``).

New deliveries: the receiver says "rows up to id N" after commits; this side reads those rows
from the history, read-only, on a thread, and hands them on: at once after a quiet spell, then at
most every ``READ_EVERY_S`` while they stream in (the log draws new rows 4 times a second then).
It also looks for itself (``PRAGMA data_version``, no table read unless something changed):
every ``POLL_S`` while no channel is open (the receiver stopped: rows written meanwhile by
``events replay`` or ``check`` from another shell still show) and every ``SLOW_POLL_S`` while one
is (rows other programs write, and rows they prune: ``events prune`` by itself when no receiver
runs moves the oldest id up, and the dashboard reads its counts and rows again). A receiver that
prunes says so (``removed``).

The channel is found again and again: when the receiver goes the dashboard says so and keeps
showing the history; when a receiver starts on the home again it is followed, with backoff
between tries (``BACKOFF_MIN_S`` to ``BACKOFF_MAX_S``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from walletpass_tui.config import Settings
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.attached_rows import Found, RowReader
from walletpass_tui.runtime.attached_targets import TargetsHeard
from walletpass_tui.runtime.control import (
    ControlError,
    ForwardNote,
    ReceiverStatus,
)
from walletpass_tui.runtime.control_client import ControlClient
from walletpass_tui.runtime.protocol import (
    DeliveryListener,
    DriftListener,
    ForwardListener,
    GapListener,
    LearnedListener,
    Learning,
)
from walletpass_tui.runtime.subscriptions import Subscriptions
from walletpass_tui.sqlite_thread import SqliteThread
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.injection import Injection
from walletpass_tui.webhooks.models import (
    Attempt,
    ForwardMode,
    ForwardResult,
    ForwardRow,
    ForwardState,
)
from walletpass_tui.webhooks.store import Store

if TYPE_CHECKING:
    from walletpass_tui.schemas.records import DriftRecord
    from walletpass_tui.webhooks.forward import SecretLookup
    from walletpass_tui.webhooks.target_options import TargetOptions

log = logging.getLogger(__name__)

POLL_S = 0.15
SLOW_POLL_S = 1.0
REMOVED_EVERY_S = 0.25  # a receiver's prune told on at most this often (the history read again)
READ_EVERY_S = 0.1  # while rows stream in, read them at most this often (the log draws 4 a second)
MAX_BEHIND = 2_000  # more new rows than this at once: the log reloads instead of reading each
BACKOFF_MIN_S = 0.2
BACKOFF_MAX_S = 2.0
FIND_WAIT_S = 0.2  # a receiver between its lock and its state file: looked at again later


@dataclass(frozen=True)
class ForwardTarget:
    """Where the receiver forwards (the dashboard reads ``target`` as it reads a route's)."""

    target: str
    topic: str | None = None


class AttachedRuntime:
    """A ``Runtime`` (``protocol.py``) whose receiver runs in another process. Open with
    ``await open()``, close with ``await close()``; ``serve()`` starts following new rows (after
    the dashboard's first frame). ``record``: the receiver found at start."""

    feeds: tuple[object, ...] = ()
    # The receiver learns into the schema file beside the history; this side reads it.
    learning: Learning = "elsewhere"

    def __init__(
        self,
        settings: Settings,
        record: instance.InstanceRecord | None,
        *,
        poll_s: float = POLL_S,
        slow_poll_s: float = SLOW_POLL_S,
        max_behind: int = MAX_BEHIND,
        read_every_s: float = READ_EVERY_S,
        find_receiver: bool = True,
    ) -> None:
        """``find_receiver=False``: show ``record`` as given and never look for the receiver or
        its channel (fixed pictures)."""
        self.settings = settings
        self.record = record
        self.registry = EndpointRegistry(settings.endpoints_path)
        self.status = ReceiverStatus()
        self.connected = False  # the control channel is open
        self.gone = record is None  # no receiver runs on the home (any more)
        self.problem: str | None = None  # why the channel cannot be opened, when it cannot
        self._poll_s = poll_s
        self._slow_poll_s = slow_poll_s
        self._max_behind = max_behind
        self._read_every_s = read_every_s
        self._store: Store | None = None
        self._client: ControlClient | None = None
        self._targets = TargetsHeard()  # what listen adds to requests to its forward targets
        self._heard = Subscriptions(__name__)  # subscribe() and watch()
        self._cursor = 0  # the newest attempt id handed on
        self._pushed = 0  # the newest the receiver announced
        self._wake = asyncio.Event()
        self._removed_count = 0  # attempts the receiver said it pruned, not yet told on
        self._removed_at = float("-inf")
        self._removed_timer: asyncio.TimerHandle | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._secret_for: SecretLookup | None = None
        self._find_receiver = find_receiver

    # -- lifecycle -----------------------------------------------------------------------------

    async def open(self) -> None:
        """Open the history (StoreError when it cannot be) and start following the receiver."""
        self._store = await Store.open(self.settings.database_path)
        try:
            self._cursor = await self._store.last_id()
        except BaseException:
            await self.close()
            raise
        if self._find_receiver:
            self._tasks.append(asyncio.create_task(self._link(), name="attached link"))

    async def serve(self) -> None:
        """Hand on new rows from now on (a no-op the second time)."""
        if not any(t.get_name() == "attached rows" for t in self._tasks):
            self._tasks.append(asyncio.create_task(self._follow_rows(), name="attached rows"))

    async def close(self) -> None:
        if self._removed_timer is not None:
            self._removed_timer.cancel()
            self._removed_timer = None
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._store is not None:
            store, self._store = self._store, None
            await store.close()

    async def __aenter__(self) -> AttachedRuntime:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- what the dashboard reads, as of a DeliveryRuntime ----------------------------------------

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("The attached dashboard's history is not open.")
        return self._store

    @property
    def secret_for(self) -> SecretLookup:
        """A replay is re-signed with its endpoint's secret (the receiver's --secret values
        never leave it)."""
        if self._secret_for is None:
            registry = self.registry

            def lookup(attempt: Attempt) -> str | None:
                from walletpass_tui.webhooks.forward import secret_lookup

                return secret_lookup(registry, ())(attempt)

            self._secret_for = lookup
        return self._secret_for

    @property
    def url(self) -> str | None:
        return self.record.url if self.record is not None else None

    @property
    def bound(self) -> tuple[str, int] | None:
        """(host, port) the receiver listens on, from its state file."""
        if self.record is None or not self.record.url:
            return None
        parts = urlsplit(self.record.url)
        try:
            port = parts.port
        except ValueError:  # a bad port in the record: no port
            return None
        return (parts.hostname or "", port) if port is not None else None

    @property
    def routes(self) -> tuple[ForwardTarget, ...]:
        return tuple(ForwardTarget(t) for t in self.status.forward_targets)

    @property
    def forwarding(self) -> bool:
        return self.status.forwarding

    @property
    def ack_target(self) -> bool:
        return False

    def target_options(self, target: str) -> TargetOptions:
        """A --forward-to target's added headers and trusted certificates, as the receiver told
        them over its control channel (so a replay or check sent there from this dashboard
        carries what listen's forwards do); nothing to another URL."""
        return self._targets.options(target)

    async def learn_templates(self, templates: Sequence[Any]) -> list[DriftRecord]:
        """Learn the templates into the schema file beside the history, on a thread, as the
        command line does (no learner runs in this process)."""
        from walletpass_tui.schemas import learn_templates

        return await asyncio.to_thread(learn_templates, self.store.path, list(templates))

    @property
    def serving(self) -> bool:
        return self.connected

    @property
    def paused(self) -> bool:
        return self.status.paused

    @property
    def injection(self) -> Injection:
        return Injection(paused=self.status.paused)

    def can(self, op: str) -> bool:
        """Whether the receiver takes ``op`` now (reachable, and it says it does)."""
        return self.connected and op in self.status.controls

    def describe(self) -> str | None:
        """``listen, pid 4242`` (the header adds the address), or None when none runs."""
        if self.record is None or self.gone:
            return None
        return f"{self.record.kind}, pid {self.record.pid}"

    # -- subscribers -------------------------------------------------------------------------------

    def subscribe(
        self,
        deliveries: DeliveryListener | None = None,
        forwards: ForwardListener | None = None,
        *,
        drift: DriftListener | None = None,
        learned: LearnedListener | None = None,
        gaps: GapListener | None = None,
    ) -> Callable[[], None]:
        """As ``DeliveryRuntime.subscribe``: new attempts (read from the history), forwards
        answered by the receiver and rows skipped (far behind, or the history replaced), on the
        event loop. ``drift`` and ``learned`` are never called: the receiver learns."""
        return self._heard.subscribe(deliveries, forwards, gaps=gaps)

    def watch(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` when the receiver's state, or whether it runs, changes."""
        return self._heard.changes.subscribe(listener)

    def _changed(self) -> None:
        self._heard.changes.notify()

    # -- controls ------------------------------------------------------------------------------------

    def request(self, op: str, **args: Any) -> asyncio.Future[None]:
        """Ask the receiver for ``op``; the future is its answer, ControlError saying why when
        it cannot be done."""
        return asyncio.ensure_future(self._request(op, **args))

    async def _request(self, op: str, **args: Any) -> None:
        client = self._client
        if client is None or not self.connected:
            raise ControlError(
                "The receiver is not running; start it again (walletpass-tui listen) to pause or "
                "inject failures."
                if self.gone
                else "The receiver's control channel is not reachable now; try again in a moment."
            )
        if op not in self.status.controls:
            raise ControlError(f"This receiver does not take {op!r}.")
        await client.request(op, **args)

    # -- the receiver: found, followed, found again --------------------------------------------------

    async def _link(self) -> None:
        backoff = BACKOFF_MIN_S
        home = self.settings.home
        while True:
            try:
                found: instance.Found | None = await asyncio.to_thread(
                    instance.find, home, wait_s=FIND_WAIT_S
                )
            except (instance.InstanceError, OSError) as exc:  # shown as the attached view's problem
                found, self.problem = None, str(exc)
            if isinstance(found, instance.Running) and found.record is not None:
                if self.gone or self.record != found.record:
                    self.record, self.gone = found.record, False
                    self._changed()
                if found.record.control:
                    try:
                        client = await ControlClient.connect(instance.socket_path(home))
                    except (OSError, ControlError, TimeoutError) as exc:
                        # shown as the attached view's problem
                        self.problem = str(exc) or type(exc).__name__
                    else:
                        backoff = BACKOFF_MIN_S
                        await self._talk(client)
                        continue  # gone, or restarting: look again at once
            elif not self.gone:
                self.gone, self.connected = True, False
                self.status = ReceiverStatus()
                self._changed()
                self._wake.set()  # poll the history at its own pace from now on
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_S)

    async def _talk(self, client: ControlClient) -> None:
        hello = client.hello
        with contextlib.suppress(ValueError):
            # a record this version does not read: the one found is kept
            self.record = instance.InstanceRecord.from_dict(hello.instance)
        self._client = client
        self._targets.clear()  # this receiver tells its own, after the hello
        self.status, self.connected, self.gone, self.problem = hello.state, True, False, None
        self._changed()
        self._announced(hello.upto)
        try:
            why = await client.run(self._message)
        finally:
            self._client = None
            self.connected = False
            self.status = ReceiverStatus(paused=self.status.paused)
            self._changed()
        if why:
            log.info("attached: the control channel closed (%s)", why)

    def _message(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "rows":
            upto = message.get("upto")
            if type(upto) is int and upto >= 0:
                self._announced(upto)
        elif kind == "state":
            try:
                self.status = ReceiverStatus.from_wire(message.get("state"))
            except ValueError:  # a state this version does not know: ignored
                return
            self._changed()
        elif kind == "removed":  # a prune took rows out: counts and rows are read again
            deleted = message.get("deleted")
            if type(deleted) is int and 0 < deleted < 2**63:
                self._removed(deleted)
        elif kind in ("target", "header"):
            self._targets.take(message)
        elif kind == "forward":
            try:
                note = ForwardNote.from_wire(message)
            except ValueError:  # a forward note this version does not know: ignored
                return
            self._forwarded(note)

    def _removed(self, deleted: int) -> None:
        """Rows were pruned: the dashboard reads the history again, at once and then at most
        every ``REMOVED_EVERY_S`` however often the receiver says so."""
        self._removed_count = min(self._removed_count + deleted, 2**62)
        if self._removed_timer is None:
            loop = asyncio.get_running_loop()
            wait = max(0.0, self._removed_at + REMOVED_EVERY_S - loop.time())
            self._removed_timer = loop.call_later(wait, self._tell_removed)

    def _tell_removed(self) -> None:
        self._removed_timer = None
        self._removed_at = asyncio.get_running_loop().time()
        deleted, self._removed_count = self._removed_count, 0
        self._heard.gaps.notify(deleted)

    def _announced(self, upto: int) -> None:
        if upto > self._pushed:
            self._pushed = upto
            self._wake.set()

    def _forwarded(self, note: ForwardNote) -> None:
        row = ForwardRow(
            id=note.id,
            attempt_id=note.attempt_id,
            webhook_id=note.webhook_id,
            kind="replay" if note.kind == "replay" else "forward",
            # Not told over the control channel, and nothing that hears a forward reads them.
            mode=cast("ForwardMode", ""),
            target=note.target,
            state=cast("ForwardState", ""),
            tries=0,
            next_try_at_ms=0,
            created_at_ms=0,
            finished_at_ms=None,
            status=note.status,
            latency_ms=note.latency_ms,
            response_headers=(),
            response_body=b"",
            error=note.error,
            note=None,
            request_body=None,
        )
        result = ForwardResult(status=note.status, latency_ms=note.latency_ms, error=note.error)
        self._heard.forwards.notify(row, result)

    # -- new rows, read from the history --------------------------------------------------------------

    async def _follow_rows(self) -> None:
        reader = RowReader(self.settings.database_path)
        thread = SqliteThread("attached-rows")  # the reader's connection lives there
        try:
            while True:
                try:
                    found = await thread.run(
                        reader.read, self._cursor, self._pushed, self._max_behind
                    )
                except sqlite3.Error as exc:  # replaced or damaged under us: opened again
                    log.info("attached: reading the history failed (%s)", exc)
                    await thread.run(reader.close)
                else:
                    self._hand_on(found)
                    if found.batches:  # a stream: the next read waits a little, to take more
                        await asyncio.sleep(self._read_every_s)
                wait = self._slow_poll_s if self.connected else self._poll_s
                with contextlib.suppress(TimeoutError):  # the poll's interval ended
                    async with asyncio.timeout(wait):
                        await self._wake.wait()
                self._wake.clear()
        finally:
            thread.submit(reader.close)  # after the read under way, if any
            thread.close()

    def _hand_on(self, found: Found) -> None:
        if found.cursor < self._cursor or found.skipped:
            self._cursor = found.cursor
            self._heard.gaps.notify(found.skipped)
            return
        self._cursor = found.cursor
        for batch in found.batches:
            self._heard.deliveries.notify(batch)
