"""The laptop side of a relay: a channel's deliveries fed into the local delivery runtime.

``RelayLink(subscribe_url, token)`` is a feed of ``DeliveryRuntime``: ``run(runtime)`` follows
the channel (``RelaySubscriber``: capped backoff, a 401 or 404 stops) and hands every delivery to
``runtime.accept()``, which verifies it with the local secrets, stores it together with its
cursor in one commit and queues its forwards, exactly as for a POST to the local receiver.

Deliveries are handed over without waiting for their commit, and one whose write fails is retried
until stored while later ones commit, so the newest stored cursor does not say every older one is
stored. The link keeps a low-water mark instead (``LowWater``: every cursor at or below it is
stored) and writes it to the store once the rows it covers have committed, at most once every
MARK_EVERY_S and when the link stops. A restart resumes after the durable mark and skips, with one
indexed lookup each, the cursors stored above it: a crash at any moment loses no delivery and
stores none twice.

An event the relay sent with a good cursor that cannot be read is stored as a rejected attempt
("unreadable relay event", its bytes cut as any rejected body) with that cursor, so the mark
passes it and the deliveries after it are not held up. What the subscriber refuses (a cursor that
does not increase, a stream past its bounds) is not stored: the link says why and retries.

The link's state (``state.LinkState``: connected or not, how far behind, why it stopped, how many
identical refusals in a row) is offered to the dashboard's header and to ``listen``, which prints
a line when it changes (``state.StateLines``), and one line for a relay that keeps misbehaving.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from walletpass_tui.config import DEFAULT_MAX_BODY, DEFAULT_TOLERANCE_S, Settings
from walletpass_tui.listeners import Listeners
from walletpass_tui.logs import suppressed
from walletpass_tui.private_files import open_regular
from walletpass_tui.relay.events import RelayedDelivery, readable_parts
from walletpass_tui.relay.link.channel_info import fetch_channel
from walletpass_tui.relay.link.failures import RelayAuthError, RelayClientError, RelayUrlError
from walletpass_tui.relay.link.low_water import LowWater
from walletpass_tui.relay.link.received_times import ReceivedTimes
from walletpass_tui.relay.link.state import LinkState
from walletpass_tui.relay.link.subscriber import (
    BACKOFF_INITIAL_S,
    BACKOFF_MAX_S,
    DEFAULT_IDLE_TIMEOUT_S,
    RelaySubscriber,
    SubscriberState,
    backoff_delay,
)
from walletpass_tui.webhooks.models import Attempt, StoreError
from walletpass_tui.webhooks.reasons import Reason
from walletpass_tui.webhooks.relay_channel import relay_channel
from walletpass_tui.webhooks.relayed import RelayedRequest

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # the store and the listening options are the runtime's to import
    from walletpass_tui.webhooks.listening import ReceiverOptions
    from walletpass_tui.webhooks.store import Store


class LinkTarget(Protocol):
    """What the link uses of the runtime it feeds: the home (one link per channel and home), the
    store (the relay's mark, rejected events), the receiver's bounds and its ``accept``."""

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> Store: ...

    @property
    def options(self) -> ReceiverOptions | None: ...

    async def accept(self, request: RelayedRequest) -> Attempt: ...


# How long the link waits, before following, for the relay to say when the channel was created.
CHANNEL_WAIT_S = 10.0
# Deliveries handed to the store before the first of them is committed: the store's group commit
# puts them in one transaction, so catching up costs one disk sync per batch, not per delivery.
MAX_IN_FLIGHT = 128
MAX_IN_FLIGHT_BYTES = 16 * 1024 * 1024  # and their bodies together
# The durable mark trails the stored deliveries by at most this long (one small write each time):
# after a crash, what was stored since is fetched again and skipped.
MARK_EVERY_S = 1.0


StateListener = Callable[[LinkState], None]
DeliveryListener = Callable[[RelayedDelivery, Attempt], None]


class RelayLink:
    """A feed for ``DeliveryRuntime(feeds=[link])``; the token is never shown."""

    def __init__(
        self,
        subscribe_url: str,
        token: str,
        *,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        idle_timeout_s: float | None = None,
    ) -> None:
        self.url = subscribe_url.split("?", 1)[0]
        self._token = token
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.idle_timeout_s = idle_timeout_s
        self.state = LinkState(self.url)
        self.subscriber: RelaySubscriber | None = None
        self._state_listeners: Listeners[[LinkState]] = Listeners(__name__, "link state")
        self._delivery_listeners: Listeners[[RelayedDelivery, Attempt]] = Listeners(
            __name__, "relayed delivery"
        )
        self._rng = random.Random()
        self._in_flight: collections.deque[asyncio.Task[None]] = collections.deque()
        self._in_flight_bytes = 0
        self._marks = LowWater()
        self._mark_written = 0
        self._mark_moved = asyncio.Event()
        self._mark_lock = asyncio.Lock()  # a mark written never lands after a rewind
        self._stored_above = 0  # cursors up to this one may be stored already (a restart)
        self._catch_up_to: int | None = None  # the head the relay announced as it connected
        self.times = ReceivedTimes(tolerance_ms=DEFAULT_TOLERANCE_S * 1000)

    def __repr__(self) -> str:  # the token never appears
        return f"RelayLink({self.url!r}, cursor={self.state.cursor})"

    def subscribe(
        self, state: StateListener | None = None, deliveries: DeliveryListener | None = None
    ) -> Callable[[], None]:
        """``state(LinkState)`` on every change, ``deliveries(relayed, stored)`` after each
        commit (both on the event loop); returns a function that unsubscribes."""
        stops: list[Callable[[], None]] = []
        if state is not None:
            stops.append(self._state_listeners.subscribe(state))
        if deliveries is not None:
            stops.append(self._delivery_listeners.subscribe(deliveries))

        def unsubscribe() -> None:
            for stop in stops:
                stop()

        return unsubscribe

    async def run(self, runtime: LinkTarget) -> None:
        """Follow the channel into ``runtime`` until cancelled; raises RelayClientError when
        the relay refuses (401, 404) or another process follows it into the same home."""
        with _following(runtime.settings.home, self.url):
            await self._run(runtime)

    async def _run(self, runtime: LinkTarget) -> None:
        after, self._stored_above = await runtime.store.start_relay_mark(self.url)
        self._marks = LowWater(after)
        self._mark_written = after
        self._set(cursor=after, head=max(after, self.state.head))
        options = runtime.options
        tolerance_s = options.tolerance_s if options is not None else DEFAULT_TOLERANCE_S
        self.times = ReceivedTimes(
            tolerance_ms=int(tolerance_s * 1000),
            newest_ms=await runtime.store.relay_received_at(self.url),
        )
        self.subscriber = RelaySubscriber(
            self.url,
            self._token,
            after=after,
            on_delivery=lambda delivery: self._deliver(runtime, delivery),
            on_unreadable=lambda cursor, raw, why: self._unreadable(runtime, cursor, raw, why),
            on_rewound=lambda cursor, head: self._rewound(runtime, cursor, head),
            on_state=self._on_subscriber,
            backoff_initial_s=self.backoff_initial_s,
            backoff_max_s=self.backoff_max_s,
            max_body=options.max_body if options is not None else DEFAULT_MAX_BODY,
            idle_timeout_s=(
                DEFAULT_IDLE_TIMEOUT_S if self.idle_timeout_s is None else self.idle_timeout_s
            ),
        )
        channel = asyncio.create_task(self._learn_channel(), name="relay-channel")
        channel.add_done_callback(lambda task: task.cancelled() or task.exception())  # seen
        marks = asyncio.create_task(self._write_marks(runtime), name="relay-mark")
        try:
            # The channel's creation bounds the received times: asked before the first delivery
            # (a relay that does not answer soon is followed all the same, and asked again).
            await asyncio.wait({channel}, timeout=CHANNEL_WAIT_S)
            await self.subscriber.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            await self._drain()  # what was received is stored before the link stops
            self._set(connected=False, stopped=True, error=str(exc))
            raise
        finally:
            for task in self._in_flight:  # cancelled: the next run fetches them again
                task.cancel()
            self._in_flight.clear()
            channel.cancel()
            marks.cancel()
            with contextlib.suppress(asyncio.CancelledError, StoreError):
                # stopping: the marks task's end, or the store says why on its own
                await marks
            with contextlib.suppress(StoreError):  # if not, the next run skips what is stored
                await self._write_mark(runtime)

    async def _learn_channel(self) -> None:
        """When the channel was created, from the relay (retried with backoff until it answers;
        a relay that does not say leaves the received times without that bound)."""
        failures = 0
        while True:
            try:
                info = await fetch_channel(self.url, self._token)
            except (RelayAuthError, RelayUrlError):
                return  # the stream itself says why
            except RelayClientError as exc:  # not reachable now, or not answering as a relay does
                delay = backoff_delay(
                    failures, self.backoff_initial_s, self.backoff_max_s, self._rng
                )
                failures += 1
                if not self.state.started:  # the first thing tried: said at once, not 10 s on
                    self._set(connected=False, error=exc.why or str(exc), retry_in=delay)
                await asyncio.sleep(delay)
                continue
            self.times.created_ms = info.created_at_ms
            return

    async def _write_marks(self, runtime: LinkTarget) -> None:
        """The mark to the store whenever it moved, at most once every MARK_EVERY_S."""
        while True:
            await self._mark_moved.wait()
            self._mark_moved.clear()
            with contextlib.suppress(StoreError):  # the store says why; tried again next time
                await self._write_mark(runtime)
            await asyncio.sleep(MARK_EVERY_S)

    async def _write_mark(self, runtime: LinkTarget) -> None:
        async with self._mark_lock:
            mark = self._marks.mark
            if mark > self._mark_written:
                await runtime.store.advance_relay_mark(self.url, mark)
                self._mark_written = mark

    async def _rewound(self, runtime: LinkTarget, cursor: int, head: int) -> None:
        """The relay went back to ``head`` (its database restored from a backup) and will number
        new deliveries with cursors this home already holds: what was received is stored first,
        then the deliveries stored above ``head`` let go of their cursors (they stay in the
        history) and the mark goes back to it, so the new ones are stored, not skipped."""
        await self._drain()
        failures = 0
        async with self._mark_lock:
            while True:
                try:
                    released = await runtime.store.rewind_relay(self.url, head)
                    break
                except StoreError:  # the store says why (its health line); tried again
                    delay = backoff_delay(
                        failures, self.backoff_initial_s, self.backoff_max_s, self._rng
                    )
                    failures += 1
                    await asyncio.sleep(delay)
            self._marks = LowWater(head)
            self._mark_written = head
        self._stored_above = min(self._stored_above, head)
        self._catch_up_to = None
        log.info(  # said in the state's line; the count for the debug log
            "The relay %s went back to cursor %d: %d stored deliveries let go of their cursors",
            self.url,
            head,
            released,
        )
        self._set(
            cursor=head,
            head=head,
            pending=None,
            connected=False,
            error=None,
            rewound=(cursor, head),
        )

    def _stored(self, cursor: int) -> None:
        self._marks.stored(cursor)
        if self._marks.mark > self._mark_written:
            self._mark_moved.set()

    async def _deliver(self, runtime: LinkTarget, delivery: RelayedDelivery) -> None:
        """Hand one delivery to the runtime (verified, stored, forwarded), or to the store as
        rejected when the relay's received time is not credible."""
        request = relayed_request(delivery, self.url)
        problem = self.times.problem(delivery.received_at_ms)
        if problem is None:
            self.times.accepted(delivery.received_at_ms)
            await self._hand_over(
                runtime, delivery.cursor, lambda: runtime.accept(request), delivery
            )
            return
        # Kept under this machine's time: the relay's is not credible (it is in the detail), and
        # the history's order, --since and pruning go by it.
        request = replace(request, received_at=datetime.now(UTC))
        body = delivery.body
        rejected = request.attempt(
            request.intake_request(time.perf_counter()),
            Reason.RELAY_TIME,
            problem,
            body=body,
            body_size=len(body),
        )
        await self._hand_over(
            runtime, delivery.cursor, lambda: runtime.store.record(rejected), delivery
        )

    async def _unreadable(self, runtime: LinkTarget, cursor: int, raw: bytes, why: str) -> None:
        """An event the relay sent that is not a delivery: recorded as rejected, with its cursor
        (so the mark passes it), its bytes (cut as any rejected body) and what can be read of
        its head (with a webhook-id, it is listed with its message)."""
        method, path, headers = readable_parts(raw)
        event = RelayedRequest(
            method, path, headers, raw, datetime.now(UTC), relay_url=self.url, relay_cursor=cursor
        )
        rejected = event.attempt(
            event.intake_request(),
            Reason.RELAY_EVENT_UNREADABLE,
            f"the relay sent an event that cannot be read: {why}",
            body=raw,
            body_size=len(raw),
            labelled=False,
        )
        await self._hand_over(runtime, cursor, lambda: runtime.store.record(rejected), None)

    async def _hand_over(
        self,
        runtime: LinkTarget,
        cursor: int,
        write: Callable[[], Awaitable[Attempt]],
        delivery: RelayedDelivery | None,
    ) -> None:
        """Start ``write()`` (stores the attempt of ``cursor``) without waiting for its commit
        (up to MAX_IN_FLIGHT, of MAX_IN_FLIGHT_BYTES together, wait at once, committed in order);
        ``_drain`` waits for them all."""
        self._marks.received(cursor)
        if cursor <= self._stored_above and await self._is_stored(runtime, cursor):
            # Stored before a restart whose mark trailed: not stored, forwarded or counted again.
            self._stored(cursor)
            self._moved(cursor)
            return
        size = len(delivery.body) if delivery is not None else 0
        task = asyncio.create_task(self._store(runtime, cursor, write, delivery))
        self._in_flight_bytes += size
        task.add_done_callback(lambda _: self._release(size))
        self._in_flight.append(task)
        while self._in_flight and (
            self._in_flight[0].done()
            or len(self._in_flight) > MAX_IN_FLIGHT
            or self._in_flight_bytes > MAX_IN_FLIGHT_BYTES
        ):
            await self._in_flight.popleft()

    def _release(self, size: int) -> None:
        self._in_flight_bytes -= size

    async def _is_stored(self, runtime: LinkTarget, cursor: int) -> bool:
        try:
            return await runtime.store.has_relay_cursor(self.url, cursor)
        except StoreError:  # then the store refuses a second copy, and _store looks again
            return False

    async def _drain(self) -> None:
        while self._in_flight:
            with suppressed(log, "a relayed delivery in flight at stop"):
                await self._in_flight.popleft()

    async def _store(
        self,
        runtime: LinkTarget,
        cursor: int,
        write: Callable[[], Awaitable[Attempt]],
        delivery: RelayedDelivery | None,
    ) -> None:
        failures = 0
        while True:
            try:
                stored = await write()
                break
            except StoreError:  # the store reports it (its health line); retried below
                # The store says why on its own (its health line); the delivery waits at the
                # relay meanwhile, and the mark stays below it, so a restart fetches it again. One
                # already stored (its write failed after the commit) is not stored again.
                with contextlib.suppress(StoreError):
                    # the store says why on its own; fetched again after a restart
                    if await runtime.store.has_relay_cursor(self.url, cursor):
                        self._stored(cursor)
                        return
                delay = backoff_delay(
                    failures, self.backoff_initial_s, self.backoff_max_s, self._rng
                )
                failures += 1
                await asyncio.sleep(delay)
        self._stored(cursor)
        self._moved(cursor)
        if delivery is None:
            return
        self._delivery_listeners.notify(delivery, stored)

    def _moved(self, cursor: int) -> None:
        """``cursor`` is stored: the newest stored cursor moves, and the backlog announced when
        the relay connected shrinks (to nothing once the head it announced is stored)."""
        if cursor <= self.state.cursor:
            return
        pending = self.state.pending
        if pending:
            done = self._catch_up_to is None or cursor >= self._catch_up_to
            pending = 0 if done else pending - 1
        self._set(cursor=cursor, head=max(self.state.head, cursor), pending=pending)

    def _on_subscriber(self, state: SubscriberState) -> None:
        # The cursor shown is the last one stored (set when its commit returns), not the last
        # one received.
        pending = self.state.pending if state.connected else None
        if state.connected and not self.state.connected:
            # What the relay said waits, up to the head it announced as it connected.
            self._catch_up_to = state.head
            pending = state.pending if state.head > self.state.cursor else 0
        self._set(
            connected=state.connected,
            head=max(state.head, self.state.cursor),
            error=state.error,
            stopped=state.stopped,
            started=True,
            refusals=state.refusals,
            pending=pending,
            retry_in=state.retry_in,
            rewound=state.rewound,
        )

    def _set(self, **changes: object) -> None:
        # Fields by name, from this class only; replace() checks the names when it runs.
        new = replace(self.state, **changes)  # type: ignore[arg-type]
        if new == self.state:
            return
        self.state = new
        self._state_listeners.notify(new)


def relayed_request(delivery: RelayedDelivery, relay_url: str) -> RelayedRequest:
    """Where a relayed delivery enters the runtime: what the relay received, from the client its
    source rule settled on, for ``runtime.accept`` (the same intake as a POST; ``intake.py``)."""
    return RelayedRequest.from_relay(
        relay_url=relay_url,
        cursor=delivery.cursor,
        received_at_ms=delivery.received_at_ms,
        method=delivery.method,
        path=delivery.path,
        headers=delivery.headers,
        body=delivery.body,
        source=delivery.client or delivery.source,
        forwarded_for=delivery.forwarded_for,
    )


@contextlib.contextmanager
def _following(home: Path, url: str) -> Iterator[None]:
    """One process per home follows a given channel, however its URL is spelt: a second one
    would store every delivery twice (the store refuses the second copy). Held with an advisory
    lock in the home."""
    try:
        import fcntl
    except ImportError:  # no advisory locks here: the store's unique index still guards
        yield
        return
    digest = hashlib.sha256(relay_channel(url).encode()).hexdigest()[:16]
    path = Path(home) / f"relay-{digest}.lock"
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        fd = open_regular(path, os.O_RDWR | os.O_CREAT, follow_links=False, own=True)
    except OSError as exc:
        raise RelayClientError(
            f"Cannot open {path} ({exc.strerror or exc}); remove it and start again."
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise RelayClientError(
                f"Another walletpass-tui already follows {url} into {home}; stop it, or use "
                "another --home."
            ) from None
        yield
    finally:
        os.close(fd)
