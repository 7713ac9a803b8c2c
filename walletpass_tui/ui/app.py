"""The dashboard application: built by ``build_app`` from injected parts, which the command line,
the demo and the tests all call the same way.

The app is given an open delivery runtime (``runtime.local``) and only subscribes to it; it
tells the runtime to start accepting deliveries once the first frame is painted. Whoever opened
the runtime closes it, unless the app was handed an opener, in which case it opens and closes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver

from walletpass_tui.runtime.control import ControlError
from walletpass_tui.runtime.protocol import Runtime, RuntimeOpener
from walletpass_tui.tunnel.ngrok_agent import FOUND_FROM_AGENT, NGROK_API, discover_ngrok
from walletpass_tui.ui.commands import DashboardCommands
from walletpass_tui.ui.lazily import Lazily
from walletpass_tui.ui.live_rows import LiveRows
from walletpass_tui.ui.messages import (
    DeliveriesStored,
    DiffRequested,
    ForwardAnswered,
    LiveSignals,
    ReceiverState,
    ReplayRequested,
)
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.preferences import Preferences
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.terminal_driver import hangup_safe
from walletpass_tui.ui.view.context import DashboardContext, ServiceClient
from walletpass_tui.ui.view.log_window import DEFAULT_CAPACITY
from walletpass_tui.ui.view.totals import Totals
from walletpass_tui.ui.widgets.log_lines import LogLines
from walletpass_tui.ui.worker_errors import ReportsWorkerErrors
from walletpass_tui.webhooks.models import (
    FORWARD,
    Attempt,
    ForwardResult,
    ForwardRow,
    LogRow,
    Stats,
    now_ms,
)
from walletpass_tui.webhooks.store.activity import ALL_TIME_MS, MINUTE_MS

if TYPE_CHECKING:  # the relay (aiohttp) and the replay form (httpx) load when first used
    from walletpass_tui.ui.drift_watch import DriftWatch
    from walletpass_tui.ui.screens.help import KeyGroup
    from walletpass_tui.ui.screens.replay import Replayed
    from walletpass_tui.ui.view.traffic import Traffic

RECEIVE_AFTER_S = 1.0  # deliveries are accepted once the log is on screen, or after this at most
FORWARDS_EVERY_S = 1.0  # the traffic's forwards are read again at most this often


@dataclass(frozen=True)
class AppParts:
    """What ``build_app`` was given."""

    runtime: Runtime | RuntimeOpener
    client: ServiceClient | None = None
    receiver_display: str | None = None
    mode: str | None = None
    log_capacity: int = DEFAULT_CAPACITY
    first_page: asyncio.Future[list[LogRow]] | None = None
    # Where [ui] theme and [keys] are read and the theme saved: None, the runtime's settings'
    # config file (the command line's, the demo's); tests and pictures have none.
    config_file: Path | None = None
    # Epoch milliseconds now, for the traffic charts (fixed in pictures and tests).
    clock: Callable[[], int] = now_ms
    # Sentences said once the screen is up (a flag that was not used, say).
    notices: tuple[str, ...] = ()


class WalletPassApp(ReportsWorkerErrors, App[int]):
    CSS_PATH = ["app.tcss", "panes.tcss", "screens.tcss"]
    TITLE = "walletpass-tui"
    COMMANDS = App.COMMANDS | {DashboardCommands}
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True, id="app.quit"),
        Binding("question_mark", "help", "Keys", id="app.help"),
        Binding(
            "p",
            "toggle_pause",
            "Pause acks",
            id="app.pause_acks",
            tooltip="Pause or resume acknowledgements (verified deliveries answered 503)",
        ),
        Binding(
            "d",
            "toggle_theme",
            "Dark/light",
            show=False,
            id="app.toggle_theme",
            tooltip="Dark or light theme",
        ),
        Binding(
            "ctrl+p",
            "command_palette",
            "Commands",
            show=False,
            priority=True,
            id="app.command_palette",
            tooltip="Every action by name, and the theme picker",
        ),
    ]

    def __init__(self, parts: AppParts, *, theme: str | None = None) -> None:
        super().__init__()
        self.parts = parts
        self.pending_forwards = 0
        self.ngrok_api = NGROK_API
        self._receiver_problem: str | None = None
        self._live_rows: LiveRows | None = None
        self._runtime: Runtime | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.context: DashboardContext | None = None
        self.stats = Stats()
        self._totals = Totals()
        self._forwards_from: int | None = None  # the forwards to read again, from this minute
        self.preferences = Preferences(self, theme)

    def get_driver_class(self) -> type[Driver]:
        # A closed terminal must not freeze the app while it stops (and stops its tunnel).
        return hangup_safe(super().get_driver_class())

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def runtime(self) -> Runtime:
        """The delivery runtime the app shows (open from mount to unmount)."""
        if self._runtime is None:
            raise RuntimeError("The dashboard is not mounted.")
        return self._runtime

    async def on_mount(self) -> None:
        parts = self.parts
        given = parts.runtime
        runtime = await given() if callable(given) else given
        self._runtime = runtime
        settings = runtime.settings
        self.context = DashboardContext(
            runtime=runtime,
            client=parts.client,
            receiver_display=parts.receiver_display,
            mode=parts.mode,
            first_page=parts.first_page,
        )
        if settings.public_url:
            self.context.public_url = settings.public_url.rstrip("/") + settings.receiver_path
        self.preferences.load(parts.config_file or settings.config_file)
        # The runtime's subscribe() is the store's; the log's new rows are posted without a wait.
        self._live_rows = LiveRows(runtime, self, shown=self.live.shown)
        self._live_rows.start()

        def answered(row: ForwardRow, result: ForwardResult) -> None:
            self.post_message(ForwardAnswered(row, result))

        self._unsubscribe = runtime.subscribe(forwards=answered)
        # Every failed write of the history is said in the header until one succeeds again.
        self._unwatch_health = runtime.store.on_health(self._history_health)
        if runtime.feeds:  # --relay: its module (aiohttp) is loaded already
            from walletpass_tui.ui.view.relay_header import relay_link_of, watch_relay

            link = relay_link_of(runtime.feeds)
            self._unwatch_relay = watch_relay(
                link, self._show_receiver, self._relay_stopped, self._relay_went_back
            )
        self._watch_receiver(runtime)
        self._show_receiver()
        # Deliveries are accepted once the log shows its first page (or after a second, should it
        # not load): the port is already bound, a sender connecting meanwhile waits in the
        # backlog, and the receiver's import (its HTTP server, forwarding) does not hold up the
        # first rows.
        self._receiving_timer = self.set_timer(RECEIVE_AFTER_S, self._start_receiving)
        # Textual writes nothing to the terminal until the app's mount is over: the main screen
        # is pushed after it, so its first frame goes out as soon as it is drawn, and what is
        # mounted after that frame (MountLater) comes after it on the terminal too.
        self.call_later(self._open_main_screen)

    async def _open_main_screen(self) -> None:
        assert self.context is not None  # made by on_mount, which schedules this
        await self.push_screen(MainScreen(self.context, log_capacity=self.parts.log_capacity))
        for notice in self.parts.notices:
            self.notify(notice, severity="warning", timeout=15, markup=False)
        self._recount()  # the header's totals: a count of the whole history, not before paint
        self._load_traffic()  # the last hour by minute: one aggregate query, after paint too
        self._count_pending()
        self._start_drift_watch()  # which deliveries drifted: the log's marks, after paint too
        self.call_after_refresh(_collect_again)

    _receiving = False

    def _start_receiving(self) -> None:
        if self._receiving:
            return
        self._receiving = True
        self._receiving_timer.stop()
        self.run_worker(self._serve(), group="receiver", exclusive=True, exit_on_error=False)

    async def _serve(self) -> None:
        runtime = self.runtime
        await runtime.serve()
        self._show_receiver()

    _tunnel_sought = False
    _public_from_receiver = False  # the public URL is the one the receiver (its tunnel) says
    _tunnel_said: str | None = None

    def on_event_log_pane_ready(self, message: EventLogPane.Ready) -> None:
        """The log shows its first page: only now is a tunnel looked for (its HTTP client takes
        a moment the first paint should not wait for)."""
        self._start_receiving()
        if self.preferences.keys_unchecked:
            self.call_after_refresh(self._check_key_ids)
        runtime = self._runtime
        if self._tunnel_sought or runtime is None or runtime.bound is None:
            return
        self._tunnel_sought = True
        starts_its_own = runtime.status.tunnel is not None or self._public_from_receiver
        if self.context is not None and not self.context.public_url and not starts_its_own:
            self.run_worker(
                self._discover_public_url(runtime.bound[1]), group="ngrok", exit_on_error=False
            )

    # The thousands of objects a Textual screen is built from live as long as the app; frozen
    # after the first paint, the collector stops walking them in every full collection, which
    # otherwise pauses the UI for tens of milliseconds at random moments.

    def _relay_stopped(self, why: str) -> None:
        self.notify(why, title="Relay stopped", severity="error", timeout=30, markup=False)

    def _relay_went_back(self, line: str) -> None:
        self.notify(line, title="Relay went back", severity="warning", timeout=30, markup=False)

    async def on_unmount(self) -> None:
        if self._drift_watch is not None:
            self._drift_watch.stop()
        if getattr(self, "_unwatch_relay", None) is not None:
            self._unwatch_relay()
        if getattr(self, "_unwatch_health", None) is not None:
            self._unwatch_health()
        if getattr(self, "_unwatch_receiver", None) is not None:
            self._unwatch_receiver()
        if self._live_rows is not None:
            self._live_rows.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._runtime is not None and callable(self.parts.runtime):
            await self._runtime.close()  # the app opened it

    # -- live updates: published to the panes, which subscribe to what they show ---------------------

    async def on_event(self, event: events.Event) -> None:
        if self._live_rows is not None and isinstance(event, (events.Key, events.MouseEvent)):
            self._live_rows.touch()  # a person is here: the live log draws at full frame rate
        await super().on_event(event)

    @cached_property
    def live(self) -> LiveSignals:
        """The signals panes subscribe to (deliveries, forwards and replays, header values)."""
        return LiveSignals(self)

    def on_deliveries_stored(self, message: DeliveriesStored) -> None:
        """One message per frame from ``LiveRows``: counted here, shown by the panes."""
        self._count(message.attempts)
        self.traffic.add_attempts(message.attempts)
        self.live.deliveries.publish(message)
        if message.dropped and self.context is not None:
            self._recount()
            self._load_traffic()  # some were never seen here: counted from the history again
        if self._runtime is not None and self._runtime.forwarding:
            self._count_pending()
            if message.attempts:  # queued with them: their forwards
                self._forwards_changed(message.attempts[0].received_at_ms)

    def on_forward_answered(self, message: ForwardAnswered) -> None:
        if message.row.kind == FORWARD:
            self._forwards_changed(message.row.created_at_ms)
        self._count_pending()
        if message.row.webhook_id:
            self.live.history.publish(message.row.webhook_id)

    def _count_pending(self) -> None:
        """How many forwards wait for the user's app, for the header (a query of the index)."""
        if self.context is None:
            return

        async def count() -> None:
            assert self.context is not None
            self.pending_forwards = await self.context.store.pending_forward_count()
            self._show_receiver()

        self.run_worker(Lazily(count), group="pending", exclusive=True, exit_on_error=False)

    def _count(self, attempts: Sequence[Attempt]) -> None:
        if self._totals.add(attempts) and self._totals.stats is not None:
            self.stats = self._totals.stats
            self.live.publish_stats(self.stats)

    def _forwards_changed(self, queued_at_ms: int) -> None:
        """A forward queued at ``queued_at_ms`` was queued or tried: the traffic's forwards from
        its minute on are read again, at most once a second (a retried forward replaces its
        earlier answer; see view/traffic.py)."""
        minute = queued_at_ms // MINUTE_MS
        first = self._forwards_from
        self._forwards_from = minute if first is None else min(first, minute)
        if first is None:
            self.set_timer(FORWARDS_EVERY_S, self._load_forwards)

    def _load_forwards(self) -> None:
        minute, self._forwards_from = self._forwards_from, None
        if minute is None or self.context is None:
            return
        traffic = self.traffic
        minute = max(minute, traffic.since_ms() // MINUTE_MS)

        async def load() -> None:
            assert self.context is not None
            found = await self.context.store.activity(minute * MINUTE_MS, MINUTE_MS, attempts=False)
            traffic.load_forwards(found, minute)

        self.run_worker(load(), group="traffic-forwards", exit_on_error=False)

    @cached_property
    def traffic(self) -> Traffic:
        """The last hour by minute, made (and its module loaded) after the first frame: with the
        history's read, or the first deliveries, whichever comes first."""
        from walletpass_tui.ui.view.traffic import Traffic

        traffic = Traffic(self.parts.clock)
        self.live.traffic = traffic
        return traffic

    def _load_traffic(self) -> None:
        """The last hour by minute from the history (the header's sparkline, the Stats
        screen); from then on only what arrives is counted."""

        async def load() -> None:
            assert self.context is not None
            traffic = self.traffic
            traffic.reset()
            traffic.load(await self.context.store.activity(traffic.since_ms(), MINUTE_MS))

        self.run_worker(Lazily(load), group="traffic", exclusive=True, exit_on_error=False)

    def _recount(self) -> None:
        """The header's totals from the history (the activity query, one bucket)."""
        self._totals.reading()

        async def recount() -> None:
            assert self.context is not None
            try:
                found = await self.context.store.activity(0, ALL_TIME_MS, forwards=False)
            except BaseException:
                self._totals.gave_up()  # the worker reports why; nothing is held for it
                raise
            self.stats = self._totals.load(found)
            self.live.publish_stats(self.stats)

        self.run_worker(Lazily(recount), group="stats", exclusive=True, exit_on_error=False)

    async def _discover_public_url(self, port: int) -> None:
        found = await discover_ngrok(port, api=self.ngrok_api)
        if found and self.context is not None:
            self.context.public_url = found.rstrip("/") + self.runtime.settings.receiver_path
            self._show_receiver()
            self.notify(
                f"ngrok forwards {found} to this receiver ({FOUND_FROM_AGENT}). Register it as "
                f"an endpoint (n) with the URL {self.context.public_url}.",
                title="Tunnel found",
                markup=False,
            )

    def _show_receiver(self) -> None:
        if self.context is None:
            return
        runtime = self._runtime
        routes = runtime.routes if runtime is not None else ()
        fields: dict[str, Any] = {
            "address": self.context.receiver_address(),
            "problem": self._receiver_problem,
            "public_url": self.context.public_url,
            "paused": self.context.paused,
            "mode": self.parts.mode,
            "forward_targets": tuple(r.target for r in routes),
            "pending_forwards": self.pending_forwards,
            "history_problem": self._history_problem(),
        }
        if runtime is not None:
            fields.update(self._runtime_fields(runtime, fields["history_problem"]))
        self.live.publish_receiver(ReceiverState(**fields))

    def _runtime_fields(self, runtime: Runtime, own_problem: str | None) -> dict[str, Any]:
        """The header's words the receiver says of itself: which process runs it (when another
        does), or that it stopped; its relay link; a history it cannot write (or this process
        cannot)."""
        status = runtime.status
        return {
            "attached": runtime.describe(),
            "gone": runtime.gone,
            "relay": status.relay,
            "relay_up": status.relay_up,
            "tunnel": status.tunnel,
            "history_problem": own_problem or status.history_problem,
        }

    def _watch_receiver(self, runtime: Runtime) -> None:
        self._was_gone = runtime.gone

        # Rows skipped (far behind, or the history replaced): the log and the counts read again.
        def gap(skipped: int) -> None:
            self.post_message(DeliveriesStored((), dropped=skipped))

        unwatch = runtime.watch(self._receiver_changed)
        unsubscribe = runtime.subscribe(gaps=gap)

        def unwatch_receiver() -> None:
            unwatch()
            unsubscribe()

        self._unwatch_receiver = unwatch_receiver

    def _receiver_changed(self) -> None:
        """What was asked of the receiver changed, or (another process's) it stopped, came back
        or reports something new."""
        runtime = self._runtime
        if runtime is None:
            return
        status = runtime.status
        if self.context is not None:
            if status.public_url and status.public_url != self.context.public_url:
                self.context.public_url = status.public_url  # the tunnel's URL, new or again
                self._public_from_receiver = True
            elif not status.public_url and self._public_from_receiver:
                self.context.public_url = None  # the tunnel is down: no URL to offer
        if status.tunnel != self._tunnel_said:
            self._tunnel_said = status.tunnel
            if status.tunnel and not status.tunnel.endswith("starting"):
                self.notify(status.tunnel, title="Tunnel", severity="warning", markup=False)
        self._show_receiver()
        self.refresh_bindings()  # the key line greys what the receiver cannot take now
        if runtime.gone != self._was_gone:
            self._was_gone = runtime.gone
            if runtime.gone:
                self.notify(
                    "The receiver stopped. The history stays on screen (rows other programs "
                    "write still show), and the dashboard follows the receiver again when one "
                    "starts on this home.",
                    title="Receiver stopped",
                    severity="warning",
                    timeout=10,
                    markup=False,
                )
            else:
                self.notify(
                    f"Attached to {runtime.describe()} again.", title="Receiver back", markup=False
                )
                self._recount()
            self._count_pending()

    @property
    def unavailable_actions(self) -> frozenset[str]:
        """Actions the key line shows greyed: the receiver cannot take them now."""
        runtime = self._runtime
        if runtime is not None and not runtime.can("pause"):
            return frozenset({"toggle_pause"})
        return frozenset()

    def _history_problem(self) -> str | None:
        """The header's words when the history cannot be written (its file named, not its path)."""
        if self._runtime is None:
            return None
        store = self._runtime.store
        problem = store.health.problem
        return problem.replace(str(store.path), store.path.name) if problem else None

    def _history_health(self, sentence: str | None) -> None:
        self._show_receiver()
        if sentence is not None:  # the whole sentence once, with the file's full path
            self.notify(sentence, title="History not saved", severity="error", markup=False)

    # -- actions --------------------------------------------------------------------------------

    def action_toggle_pause(self) -> None:
        runtime = self._runtime
        if runtime is None:
            return
        answer = runtime.request("pause", paused=not runtime.paused)
        if answer.done():  # a receiver in this process: done already
            self._paused_answered(runtime, answer)
        else:  # one in another process answers over the control channel
            self.run_worker(
                Lazily(lambda: self._pause_answer(runtime, answer)),
                group="pause",
                exclusive=True,
                exit_on_error=False,
            )

    async def _pause_answer(self, runtime: Runtime, answer: asyncio.Future[None]) -> None:
        with contextlib.suppress(ControlError):  # said by _paused_answered
            await answer
        self._paused_answered(runtime, answer)

    def _paused_answered(self, runtime: Runtime, answer: asyncio.Future[None]) -> None:
        """Say the receiver's answer: paused or resumed, or why it cannot be done."""
        exc = answer.exception()
        if isinstance(exc, ControlError):
            self.notify(str(exc), title="Pause unavailable", severity="warning", markup=False)
            return
        if exc is not None:
            raise exc
        self._show_receiver()
        self._said_paused(runtime.paused, attached=runtime.describe() is not None)

    def _said_paused(self, paused: bool, *, attached: bool) -> None:
        if paused:
            # An attached dashboard's pause is lifted when it closes (runtime/attachable.py).
            also = " (closing this dashboard resumes them too)" if attached else ""
            self.notify(
                "Acknowledgements paused: verified deliveries are stored but answered 503, so "
                f"the service retries them. Press p to resume{also}.",
                severity="warning",
                markup=False,
            )
        else:
            self.notify("Acknowledgements resumed.", markup=False)

    def on_diff_requested(self, message: DiffRequested) -> None:
        """A screen asked to compare deliveries: open the comparison over it."""
        if self.context is not None:
            from walletpass_tui.ui.screens.diff import DiffScreen

            self.push_screen(DiffScreen(self.context.store, message.attempt_id, message.against))

    def on_replay_requested(self, message: ReplayRequested) -> None:
        """A screen asked to replay a delivery: open the form over it."""
        if self.context is not None:
            self.run_worker(
                Lazily(lambda: self._open_replay(message.attempt_id)),
                group="replay-open",
                exclusive=True,
                exit_on_error=False,
            )

    async def _open_replay(self, attempt_id: int) -> None:
        assert self.context is not None
        from walletpass_tui.ui.screens.replay import ReplayScreen  # the form imports httpx

        attempt = await self.context.store.attempt(attempt_id)
        if attempt is None:
            self.notify("That delivery is no longer in the history.", markup=False)
            return
        screen = ReplayScreen(
            self.context.store,
            attempt,
            target=await self.context.replay_target_for(attempt),
            secret_for=self.context.secret_for,
            options_for=self.context.target_options,
        )
        self.push_screen(screen, lambda done: self._replayed(attempt, done))

    def _replayed(self, attempt: Attempt, done: Replayed | None) -> None:
        if done is None or self.context is None:
            return
        self.context.last_replay_target = done.target
        r = done.result
        outcome = f"answered {r.status}" if r.status is not None else f"failed: {r.error}"
        self.notify(
            f"Replayed ({done.mode}) to {done.target}: {outcome} in {r.latency_ms:.0f} ms. "
            "It is recorded under Forwards & replays.",
            severity="information" if r.ok else "warning",
            markup=False,
        )
        if attempt.webhook_id:
            self.live.history.publish(attempt.webhook_id)

    def action_give_up_forwards(self) -> None:
        async def give_up() -> None:
            assert self.context is not None
            count = await self.context.store.give_up_pending()
            self.notify(
                f"Gave up on {count} pending forward(s); they stay in the history as 'given up'."
                if count
                else "No forwards are waiting.",
                markup=False,
            )
            self.pending_forwards = await self.context.store.pending_forward_count()
            self._show_receiver()
            self.live.history.publish(None)

        if self.context is not None:
            self.run_worker(Lazily(give_up), group="give-up", exclusive=True, exit_on_error=False)

    def action_toggle_theme(self) -> None:
        self.preferences.toggle_theme()

    def action_stats(self) -> None:
        """The Stats screen: the last hour as charts (its module loads when first opened)."""
        from walletpass_tui.ui.screens.stats import StatsScreen

        if not isinstance(self.screen, StatsScreen):
            self.push_screen(StatsScreen(self.traffic))

    # -- payload schemas -------------------------------------------------------------------------

    _drift_watch: DriftWatch | None = None

    def _start_drift_watch(self) -> None:
        from walletpass_tui.ui.drift_watch import DriftWatch

        self._drift_watch = DriftWatch(self.runtime, self, self.live)
        self._drift_watch.start()

    def action_schema(self, group: str = "") -> None:
        """The Schema screen: each topic's learned fields and drift (``group='templates'``: the
        pass templates' fields). Its module loads when first opened."""
        from walletpass_tui.ui.screens.schema import SchemaScreen

        if isinstance(self.screen, SchemaScreen):
            self.screen.select_group(group)
        elif self._runtime is not None:
            self.push_screen(SchemaScreen(self._runtime, group=group))

    def action_help(self) -> None:
        from walletpass_tui.ui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.key_groups()))

    def _check_key_ids(self) -> None:
        """Entries of [keys] naming no binding of the dashboard are said (they do nothing)."""
        from walletpass_tui.ui.keymap import binding_ids

        self.preferences.check_key_ids(lambda: binding_ids(self.key_groups()))

    def key_groups(self) -> list[KeyGroup]:
        """Every binding of the dashboard, by where it works (the help screen's sections)."""
        from walletpass_tui.ui.panes.delivery_detail import DeliveryDetail
        from walletpass_tui.ui.panes.templates import TemplatesPane
        from walletpass_tui.ui.screens.check import CheckScreen
        from walletpass_tui.ui.screens.create_endpoint import CreateEndpointScreen
        from walletpass_tui.ui.screens.detail import DetailScreen
        from walletpass_tui.ui.screens.endpoint_secret import EndpointSecretScreen
        from walletpass_tui.ui.screens.help import HelpScreen
        from walletpass_tui.ui.screens.import_endpoint import ImportEndpointScreen
        from walletpass_tui.ui.screens.replay import ReplayScreen
        from walletpass_tui.ui.screens.schema import SchemaScreen
        from walletpass_tui.ui.screens.stats import StatsScreen
        from walletpass_tui.ui.screens.template_json import TemplateScreen

        return [
            ("Everywhere", self.BINDINGS),
            ("Main screen", MainScreen.BINDINGS),
            ("Event log", [*EventLogPane.BINDINGS, *LogLines.BINDINGS]),
            ("Templates", TemplatesPane.BINDINGS),
            ("Delivery detail", [*DetailScreen.BINDINGS, *DeliveryDetail.BINDINGS]),
            ("Template JSON", TemplateScreen.BINDINGS),
            ("Forms", [*CreateEndpointScreen.BINDINGS, *ImportEndpointScreen.BINDINGS]),
            ("Replay", ReplayScreen.BINDINGS),
            ("Check my app", CheckScreen.BINDINGS),
            ("Stats", StatsScreen.BINDINGS),
            ("Schema", SchemaScreen.BINDINGS),
            ("New endpoint's secret", EndpointSecretScreen.BINDINGS),
            ("This list", HelpScreen.BINDINGS),
        ]


def _collect_again() -> None:
    """After the first frame: the objects built so far frozen (full collections no longer walk
    the screen's thousands of objects) and the collector, paused by the dashboard command while
    it imports and builds the first screen, back on."""
    gc.freeze()
    gc.enable()


def build_app(
    runtime: Runtime | RuntimeOpener,
    client: ServiceClient | None = None,
    *,
    receiver_display: str | None = None,
    mode: str | None = None,
    log_capacity: int = DEFAULT_CAPACITY,
    theme: str | None = None,
    first_page: asyncio.Future[list[LogRow]] | None = None,
    config_file: Path | None = None,
    clock: Callable[[], int] | None = None,
    notices: tuple[str, ...] = (),
) -> WalletPassApp:
    """The dashboard, ready to run (``await app.run_async()``, ``app.run_test()``...).

    ``runtime``: an open ``Runtime`` (``runtime/protocol.py``: a ``DeliveryRuntime``, or an
    ``AttachedRuntime`` standing for a receiver in another process), closed by whoever opened it;
    or an async function opening one, for running under ``App.run()``
    (snapshot tests), which the app calls on mount and closes at exit. The app starts its receiver
    serving after the first frame. ``client``: the service (``WalletPassClient``), or None when no
    API key is set: templates then say how to set one. ``receiver_display``: the address shown
    when there is no receiver (screenshots). ``mode``: a word shown in the header (``demo``).
    ``first_page``: the log's first page (no filter), already being read from the store.
    ``theme``: the theme to use whatever the config file says (``--theme``). ``config_file``:
    where the saved theme and ``[keys]`` are read (default: the runtime's settings' file).
    ``clock``: epoch milliseconds now, for the traffic charts (fixed in pictures).
    ``notices``: sentences said once the screen is up.
    """
    parts = AppParts(
        runtime,
        client,
        receiver_display,
        mode,
        log_capacity,
        first_page,
        config_file,
        clock or now_ms,
        notices,
    )
    return WalletPassApp(parts, theme=theme)
