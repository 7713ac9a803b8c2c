"""One delivery runtime: the store, the endpoint registry, the receiver and the forwarder, opened in
that order and closed in the reverse one, with a single place to subscribe to what happens.

``listen``, the dashboard, the demo and the tests all start deliveries through it::

    async with DeliveryRuntime(settings, setup) as runtime:
        runtime.subscribe(print_batch, print_forward)
        await runtime.serve()          # accept deliveries (the port was bound on open)

Opening binds the receiver's port (a port in use fails here, before any screen is drawn) but
accepts nothing until ``serve()``: the dashboard subscribes and paints its first frame first.
Failure injection is a setting of the runtime, changed through its methods (``pause_acks``...).

Every runtime also learns the payload schema of each topic (``walletpass_tui.schemas``): a
``SchemaLearner`` starts right after the store opens, follows its commits on a thread of its own
(never on the acknowledgement path) and stops right before the store closes. Drift it finds in a
delivery is told to ``subscribe(drift=...)`` listeners. ``DeliverySetup(learn_schemas=False)``
(``--no-schemas``) runs without it. A ``FieldIndexer`` (``walletpass_tui.query``) follows the
commits the same way and keeps the field index that field queries read
(``DeliverySetup(index_fields=False)``: without it, queries look at every body).

Deliveries may also come another way than a POST: a *feed* (a relay subscription, built in
``relay/link/feed.py``) is handed in at construction, started by ``serve()`` and calls ``accept()``,
which runs the receiver's own verify -> store -> forward steps. A feed that stops for good (a relay
refusing the token) is reported through ``feed_stopped()``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from walletpass_tui.config import Settings
from walletpass_tui.runtime.control import OPS, ControlError, ReceiverStatus, apply_request
from walletpass_tui.runtime.feeds import FeedTasks
from walletpass_tui.runtime.followers import CommitFollowers
from walletpass_tui.runtime.protocol import (
    DeliveryListener,
    DriftListener,
    ForwardListener,
    GapListener,
    LearnedListener,
    Learning,
    StatusFeed,
)
from walletpass_tui.runtime.receiver_port import ReceiverPort
from walletpass_tui.runtime.removals import follow_prunes
from walletpass_tui.runtime.setup import DeliverySetup, resigning_secrets
from walletpass_tui.runtime.subscriptions import Subscriptions
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.injection import Injection
from walletpass_tui.webhooks.listening import ReceiverOptions, receiver_url
from walletpass_tui.webhooks.models import Attempt, ForwardResult, ForwardRow
from walletpass_tui.webhooks.store import Store

if TYPE_CHECKING:  # the receiver and the forwarder (httpx) are imported when needed
    from walletpass_tui.query.indexer import FieldIndexer
    from walletpass_tui.runtime.attachable import Attachable
    from walletpass_tui.runtime.instance import InstanceRecord
    from walletpass_tui.schemas.learner import SchemaLearner
    from walletpass_tui.schemas.records import DriftRecord
    from walletpass_tui.tunnel.watch import TunnelWatcher
    from walletpass_tui.webhooks.forward import Forwarder, Route, SecretLookup
    from walletpass_tui.webhooks.receiver import Receiver
    from walletpass_tui.webhooks.relayed import RelayedRequest
    from walletpass_tui.webhooks.target_options import TargetOptions

RuntimeState = Literal["unopened", "opened", "closed"]

log = logging.getLogger(__name__)


class Feed(Protocol):
    """Deliveries reaching the runtime another way than a POST: ``run`` calls
    ``runtime.accept()`` for each until cancelled, or raises when it cannot go on (run as tasks
    by ``feeds.FeedTasks``)."""

    async def run(self, runtime: DeliveryRuntime) -> None: ...


class DeliveryRuntime:
    """An async context manager owning everything one delivery passes through; a ``Runtime``
    (``protocol.py``) whose receiver runs in this process.

    ``store``/``registry`` may be handed in already open (tests, benchmarks); a store handed in is
    left open at exit, one the runtime opened is closed after every acknowledged delivery is on
    disk. ``secret_for`` replaces the default lookup of re-signing secrets.
    """

    def __init__(
        self,
        settings: Settings,
        setup: DeliverySetup | None = None,
        *,
        store: Store | None = None,
        registry: EndpointRegistry | None = None,
        secret_for: SecretLookup | None = None,
        feeds: Sequence[Feed] = (),
    ) -> None:
        self.settings = settings
        self.setup = setup or DeliverySetup()
        self.registry = registry or EndpointRegistry(settings.endpoints_path)
        # The secret a replay or a late forward is re-signed with: by default the delivery's
        # endpoint's, or the only --secret given.
        self.secret_for: SecretLookup = secret_for or resigning_secrets(self.setup, self.registry)
        self._port = ReceiverPort()  # bound on open; the receiver built on it by serve()
        self._injection = self.setup.options.injection if self.setup.options else Injection()
        self._why = ""  # why the injection last changed (injection_why)
        self.forwarder: Forwarder | None = None
        self._store = store
        self._owns_store = store is None
        # subscribe() and watch(): changes are the failures injected and the tunnel's state
        self._heard = Subscriptions(__name__)
        self._unsubscribe_store: Callable[[], None] | None = None
        self._unfollow_prunes: Callable[[], None] | None = None
        self.followers = CommitFollowers(self._heard.drift.notify, self._heard.learned.notify)
        # unopened -> opened -> closed, once: a closed runtime is never opened again (its store,
        # port and learner are gone); make a new one instead.
        self._state: RuntimeState = "unopened"
        self.feeds: tuple[Feed, ...] = tuple(feeds)
        self._feeds = FeedTasks()
        self._attachable: Attachable | None = None  # start_instance(): found, controlled
        # The setup's tunnel: made on open, started by serve().
        self.tunnel: TunnelWatcher | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> DeliveryRuntime:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Store -> schema learner, field indexer -> registry -> receiver (bound, not yet serving) ->
        forwarder.

        Raises StoreError (locked, damaged), ConfigError (a damaged registry) or ReceiverError
        (the port is taken); whatever was opened before the failure is closed again, and the
        runtime with it. Opening an open runtime does nothing; a closed one raises RuntimeError.
        """
        if self._state == "opened":
            return
        if self._state == "closed":
            raise RuntimeError("Cannot open a closed runtime; make a new DeliveryRuntime.")
        if self.feeds and self.setup.options is None:
            raise ValueError("Feeds need a receiver to verify and store their deliveries.")
        if self.feeds:
            self._feeds.prepare()
        try:
            if self._store is None:
                self._store = await Store.open(self.settings.database_path)
            self._unsubscribe_store = self._store.subscribe(self._on_commit)
            self._unfollow_prunes = follow_prunes(self._store, self._heard.gaps.notify)
            await self.followers.start(
                self._store,
                learn_schemas=self.setup.learn_schemas,
                index_fields=self.setup.index_fields,
            )
            self.registry.load()  # a damaged registry is reported now, as one line
            setup = self.setup
            if setup.forwarding:
                from walletpass_tui.webhooks.forward import Forwarder

                self.forwarder = Forwarder(
                    self._store,
                    setup.routes,
                    secret_for=self.secret_for,
                    on_result=self._on_forward,
                )
            if setup.options is not None:
                await self._port.bind(setup.options)
            if self.forwarder is not None:
                await self.forwarder.start()
            if setup.tunnel is not None and self.bound is not None:
                from walletpass_tui.tunnel.watch import TunnelWatcher

                self.tunnel = TunnelWatcher(setup.tunnel)  # started by serve()
                self.tunnel.subscribe(lambda _: self._heard.changes.notify())
        except BaseException:
            await self.close()
            raise
        self._state = "opened"

    async def serve(self) -> None:
        """Start accepting deliveries on the bound port and start the feeds (a no-op without a
        receiver, or twice)."""
        receiver = await self._receiver()
        if receiver is not None:
            await receiver.serve()
            self._start_tunnel()
            self._feeds.start([partial(feed.run, self) for feed in self.feeds])

    async def accept(self, relayed: RelayedRequest) -> Attempt:
        """One delivery from a feed: verified, stored (committed) and forwarded as a POST would
        be; returns the stored attempt. Raises StoreError when it could not be stored."""
        receiver = await self._receiver()
        if receiver is None:
            raise RuntimeError("No receiver runs in this runtime.")
        return await receiver.accept(relayed)

    @property
    def receiver(self) -> Receiver | None:
        """The receiver, once ``serve()`` or a feed's first delivery built it."""
        return self._port.receiver

    async def _receiver(self) -> Receiver | None:
        """The receiver (None without one, or when the runtime is not open)."""
        return await self._port.receiver_on_it(self._new_receiver)

    def _new_receiver(self) -> Receiver:
        from walletpass_tui.webhooks.receiver import Receiver

        assert self.setup.options is not None  # a port is bound only with receiver options
        return Receiver(
            self.store,
            replace(self.setup.options, injection=self._injection),
            registry=self.registry,
            forwarder=self.forwarder,
            ack_target=self.setup.ack_target,
        )

    def _start_tunnel(self) -> None:
        """The tunnel the setup asks for, to the bound port (its own task: the receiver never
        waits for it, nor stops because of it)."""
        if self.tunnel is not None and self.bound is not None:
            from walletpass_tui.tunnel.choice import local_url

            self.tunnel.start(local_url(*self.bound))

    @property
    def public_url(self) -> str | None:
        """Where the service should post: the tunnel's URL while it is up (else the
        ``public_url`` setting), with the receiver's path; None when there is neither."""
        base = self.tunnel.state.public_url if self.tunnel is not None else None
        base = base or self.settings.public_url
        return base.rstrip("/") + self.settings.receiver_path if base else None

    async def feed_stopped(self) -> BaseException:
        """Wait until a feed stops for good; returns why (waits forever without feeds)."""
        return await self._feeds.stopped()

    async def close(self) -> None:
        """Tunnel (its program stopped) -> control channel (attached dashboards see the receiver
        go) -> feeds -> forwarder -> receiver (port released, requests in flight answered) ->
        schema learner -> store -> the home released.

        A feed cut in the middle of a delivery loses nothing: the delivery and its cursor are
        committed together or not at all, and the next run resumes after the last one stored.
        """
        self._state = "closed"
        tunnel, self.tunnel = self.tunnel, None
        if tunnel is not None:  # its program stopped before anything else: none is left behind
            await tunnel.stop()
        attachable, self._attachable = self._attachable, None
        if attachable is not None:  # attached dashboards see it go first
            await attachable.withdraw()
        await self._feeds.cancel()
        if self.forwarder is not None:
            await self.forwarder.stop()
        await self._port.close()
        await self.followers.stop()
        if self._unsubscribe_store is not None:
            self._unsubscribe_store()
            self._unsubscribe_store = None
        if self._unfollow_prunes is not None:
            self._unfollow_prunes()
            self._unfollow_prunes = None
        if self._store is not None and self._owns_store:
            store, self._store = self._store, None
            await store.close()
        if attachable is not None:
            attachable.release()  # the home is free once the history is closed

    async def learn_templates(self, templates: Sequence[Any]) -> list[DriftRecord]:
        """Learn the template objects ``GET passTemplates`` listed (the ``templates`` group of
        the schemas); returns the drift they showed. Through the running learner, else on a
        thread of its own; with ``learn_schemas=False`` nothing is learned."""
        if not self.setup.learn_schemas:
            return []
        return await self.followers.learn_templates(self.store.path, templates)

    @property
    def learner(self) -> SchemaLearner | None:
        """The schema learner (None: not learning, or not open)."""
        return self.followers.learner

    @property
    def field_indexer(self) -> FieldIndexer | None:
        return self.followers.field_indexer

    # -- what the runtime holds --------------------------------------------------------------------

    @property
    def store(self) -> Store:
        if self._store is None:
            raise RuntimeError("The delivery runtime is not open.")
        return self._store

    @property
    def status_feed(self) -> StatusFeed | None:
        """The feed that says how it is doing (the relay link), if any."""
        return next((f for f in self.feeds if isinstance(f, StatusFeed)), None)

    @property
    def status(self) -> ReceiverStatus:
        """What this receiver says of itself (to the header, and to attached dashboards)."""
        injection = self.injection
        state = getattr(self.status_feed, "state", None)
        store = self.store
        problem = store.health.problem
        return ReceiverStatus(
            paused=injection.paused,
            injection=injection.describe(),
            forwarding=self.forwarding,
            forward_targets=tuple(route.target for route in self.routes),
            public_url=self.public_url,
            relay=str(state.headline) if state is not None else None,
            relay_up=bool(state.healthy) if state is not None else False,
            tunnel=self.tunnel.state.headline() if self.tunnel is not None else None,
            history_problem=problem.replace(str(store.path), store.path.name) if problem else None,
            controls=OPS,
        )

    @property
    def gone(self) -> bool:
        """Never: the receiver runs in this process."""
        return False

    def describe(self) -> str | None:
        """None: the receiver runs in this process."""
        return None

    @property
    def learning(self) -> Learning:
        return "here" if self.learner is not None else "off"

    def target_options(self, target: str) -> TargetOptions:
        """A --forward-to target's added headers and trusted certificates; nothing to another
        URL."""
        if self.forwarder is not None:
            return self.forwarder.options(target)
        from walletpass_tui.webhooks.target_options import TargetOptions

        return TargetOptions()

    @property
    def options(self) -> ReceiverOptions | None:
        """The receiver's options (None: no receiver runs)."""
        return self.setup.options

    @property
    def bound(self) -> tuple[str, int] | None:
        """(host, port) the receiver is bound to, or None without a receiver."""
        return self._port.bound

    @property
    def url(self) -> str | None:
        options = self.setup.options
        bound = self.bound
        return receiver_url(options, bound) if options and bound else None

    @property
    def ack_target(self) -> bool:
        """Whether the sender is answered with the forwarding target's status."""
        return self.setup.ack_target and self.forwarder is not None

    @property
    def serving(self) -> bool:
        return self.receiver is not None and self.receiver.serving

    @property
    def routes(self) -> tuple[Route, ...]:
        return self.setup.routes

    @property
    def forwarding(self) -> bool:
        return self.forwarder is not None

    async def pending_forwards(self) -> int:
        """How many forwards wait in the queue (sent only while forwarding is on)."""
        return await self.store.pending_forward_count()

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
        """Call, on the event loop:

        * ``deliveries(batch)`` after each commit;
        * ``forwards(row, result)`` after each forward is answered;
        * ``drift(attempt_id, records)`` for each delivery that showed drift first (after its
          commit, once the schema learner has looked at it: ``DriftRecord.describe()`` is the
          line to show, escaped with ``text.printable``);
        * ``learned(upto)`` once the learner has looked at every row up to ``upto`` (the drift
          of those rows was told before);
        * ``gaps(deleted)`` when a prune took rows out of the history (removals.py): counts and
          rows shown are read again (every commit here is heard, so no new row is ever skipped).

        Returns a function that unsubscribes. A listener that raises is logged and the others
        are still called.
        """
        return self._heard.subscribe(deliveries, forwards, drift=drift, learned=learned, gaps=gaps)

    def _on_commit(self, batch: Sequence[Attempt]) -> None:
        self._heard.deliveries.notify(batch)

    def _on_forward(self, row: ForwardRow, result: ForwardResult) -> None:
        self._heard.forwards.notify(row, result)

    # -- failure injection -------------------------------------------------------------------------

    @property
    def injection(self) -> Injection:
        """The failures injected now (a frozen value; change it with the methods below)."""
        return self._injection

    @property
    def paused(self) -> bool:
        return self.injection.paused

    def pause_acks(self, paused: bool) -> None:
        """Answer verified deliveries 503 (stored all the same) until resumed."""
        self._inject(paused=paused)

    def fail_first(self, attempts: int) -> None:
        """Answer 500 to the first ``attempts`` attempts of each message."""
        if attempts < 0:
            raise ValueError("fail_first takes zero or more attempts")
        self._inject(fail_first=attempts)

    def respond(self, status: int | None) -> None:
        """Answer every verified delivery with ``status`` (None: answer normally); a status that
        cannot be a final answer is a ValueError saying the rule (``Injection`` holds it)."""
        self._inject(respond_status=status)

    def delay(self, seconds: float) -> None:
        """Wait ``seconds`` before each answer."""
        if seconds < 0:
            raise ValueError("delay takes zero or more seconds")
        self._inject(delay_s=seconds)

    def can(self, op: str) -> bool:
        """Whether ``op`` is one of the requests a receiver takes (asked without a receiver,
        the answer says there is none)."""
        return op in OPS

    def request(self, op: str, **args: Any) -> asyncio.Future[None]:
        """Do ``op`` (``control.OPS``) now, as a viewer's request is done; the future is done
        when this returns, with ControlError when no receiver runs here."""
        answer: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.setup.options is None:
            answer.set_exception(ControlError("No receiver runs in this dashboard."))
        else:
            self.control(op, args)
            answer.set_result(None)
        return answer

    def control(self, op: str, message: Mapping[str, Any], why: str = "") -> None:
        """A request (a dashboard's, or a viewer's over the control channel), checked field by
        field (ValueError naming the rule it broke) and done through the methods above; ``why``:
        who asked, in words (``injection_why``)."""
        self._why = why
        try:
            apply_request(self, op, message)
        finally:
            self._why = ""

    @property
    def injection_why(self) -> str:
        """Why the failures injected last changed, in words ("" : the receiver's own settings
        or its own dashboard), for a watcher that says so (listen)."""
        return self._why

    def set_injection(self, injection: Injection, why: str = "") -> None:
        """Inject ``injection`` from now on, for the reason ``why`` (``injection_why``)."""
        self._why = why
        try:
            self._inject(
                **{field.name: getattr(injection, field.name) for field in fields(injection)}
            )
        finally:
            self._why = ""

    def _inject(self, **changes: object) -> None:
        if self.setup.options is None:
            raise RuntimeError("No receiver runs in this runtime.")
        # Fields by name, from this class only; replace() checks the names when it runs.
        self._injection = replace(self._injection, **changes)  # type: ignore[arg-type]
        if self.receiver is not None:
            self.receiver.set_injection(self._injection)
        self._heard.changes.notify()

    # -- attached dashboards: the instance record and the control channel --------------------------

    async def start_instance(self, kind: str) -> InstanceRecord | None:
        """Make this receiver the one ``attach`` finds on its home (``instance.py``) and serve
        its control channel (``control.py``) until ``close()``; ``kind``: listen, dashboard or
        demo. Returns the record a receiver that died on this home left (None: none). Raises
        AlreadyRunning when another receiver holds the home."""
        if self.bound is None or self._attachable is not None:
            raise RuntimeError("start_instance() needs an open runtime with a receiver, once.")
        from walletpass_tui.runtime.attachable import Attachable

        self._attachable = await Attachable.start(self, kind)
        return self._attachable.previous

    def watch(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` whenever the failures injected change (pause included) or the
        tunnel's state does; returns a function that stops it."""
        return self._heard.changes.subscribe(listener)
