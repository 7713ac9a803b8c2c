"""The dashboard application: built by ``build_app`` from injected parts, which the command line,
the demo and the tests all call the same way.

The app owns the lifecycle of what it is given to run: it starts the receiver when it mounts and
stops it when it ends (releasing the port), and subscribes the live feed to the store. Whoever opened
the store closes it, unless the app was handed an opener, in which case it opens and closes it.
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from textual.app import App
from textual.binding import Binding

from walletpass_tui.config import Settings
from walletpass_tui.endpoints import EndpointRegistry
from walletpass_tui.ui.commands import DashboardCommands
from walletpass_tui.ui.context import DashboardContext, ServiceClient
from walletpass_tui.ui.live_feed import DeliveriesStored, LiveFeed
from walletpass_tui.ui.log_window import DEFAULT_CAPACITY
from walletpass_tui.ui.panes.event_log import EventLogPane
from walletpass_tui.ui.screens.create_endpoint import CreateEndpointScreen
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.screens.help import HelpScreen, KeyGroup
from walletpass_tui.ui.screens.main import MainScreen
from walletpass_tui.ui.screens.template_json import TemplateScreen
from walletpass_tui.ui.widgets.log_view import LogView
from walletpass_tui.ui.widgets.status_bar import ReceiverState
from walletpass_tui.webhooks.receiver import Receiver, ReceiverError
from walletpass_tui.webhooks.store import VERIFIED, Attempt, LogFilter, Stats, Store

StoreOpener = Callable[[], Awaitable[Store]]

DARK_THEME = "textual-dark"
LIGHT_THEME = "textual-light"


@dataclass(frozen=True)
class AppParts:
    """What ``build_app`` was given."""

    settings: Settings
    client: ServiceClient | None
    store: Store | StoreOpener
    registry: EndpointRegistry
    receiver: Receiver | None
    receiver_display: str | None
    mode: str | None
    log_capacity: int


class WalletPassApp(App[int]):
    CSS_PATH = ["app.tcss", "panes.tcss", "screens.tcss"]
    TITLE = "walletpass-tui"
    COMMANDS = App.COMMANDS | {DashboardCommands}
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("question_mark", "help", "Keys"),
        Binding(
            "p",
            "toggle_pause",
            "Pause acks",
            tooltip="Pause or resume acknowledgements (verified deliveries answered 503)",
        ),
        Binding("d", "toggle_theme", "Dark/light", show=False, tooltip="Dark or light theme"),
    ]

    def __init__(
        self,
        settings: Settings,
        client: ServiceClient | None,
        store: Store | StoreOpener,
        registry: EndpointRegistry,
        receiver: Receiver | None,
        *,
        receiver_display: str | None,
        mode: str | None,
        log_capacity: int,
        theme: str,
    ) -> None:
        super().__init__()
        self.parts = AppParts(
            settings, client, store, registry, receiver, receiver_display, mode, log_capacity
        )
        self._receiver_problem: str | None = None
        self._feed: LiveFeed | None = None
        self.context: DashboardContext | None = None
        self.main_screen: MainScreen | None = None
        self.stats = Stats()
        self.theme = theme
        chosen = self.get_theme(theme)
        self._dark_theme = theme if chosen is not None and chosen.dark else DARK_THEME

    # -- lifecycle ----------------------------------------------------------------------------------

    async def on_mount(self) -> None:
        parts = self.parts
        store = parts.store if isinstance(parts.store, Store) else await parts.store()
        self.context = DashboardContext(
            settings=parts.settings,
            client=parts.client,
            registry=parts.registry,
            store=store,
            receiver=parts.receiver,
            receiver_display=parts.receiver_display,
            mode=parts.mode,
        )
        self._feed = LiveFeed(store, self)
        self._feed.start()
        if parts.receiver is not None:
            try:
                await parts.receiver.start()
            except ReceiverError as exc:
                self._receiver_problem = str(exc)
                self.notify(str(exc), title="Not listening", severity="error", markup=False)
        self.stats = await store.stats()
        self.main_screen = MainScreen(self.context, log_capacity=parts.log_capacity)
        await self.push_screen(self.main_screen)
        self._show_receiver()
        self.main_screen.show_stats(self.stats)
        self.call_after_refresh(gc.freeze)

    # The thousands of objects a Textual screen is built from live as long as the app; frozen
    # after the first paint, the collector stops walking them in every full collection, which
    # otherwise pauses the UI for tens of milliseconds at random moments.

    async def on_unmount(self) -> None:
        if self._feed is not None:
            self._feed.stop()
        if self.parts.receiver is not None:
            await self.parts.receiver.stop()
        if not isinstance(self.parts.store, Store) and self.context is not None:
            await self.context.store.close()

    # -- live updates: one message per frame from the feed ----------------------------------------

    def on_deliveries_stored(self, message: DeliveriesStored) -> None:
        self._count(message.attempts)
        main = self.main_screen
        if main is None:
            return
        main.show_stats(self.stats)
        main.deliveries_stored(message.attempts, message.dropped)
        if isinstance(self.screen, DetailScreen):
            self.screen.deliveries_stored(message.attempts, message.dropped)
        if message.dropped and self.context is not None:
            self._recount()

    def _count(self, attempts: Sequence[Attempt]) -> None:
        s = self.stats
        verified = sum(1 for a in attempts if a.verdict == VERIFIED)
        self.stats = Stats(
            received=s.received + len(attempts),
            verified=s.verified + verified,
            rejected=s.rejected + len(attempts) - verified,
            redeliveries=s.redeliveries + sum(1 for a in attempts if a.attempt_no > 1),
        )

    def _recount(self) -> None:
        async def recount() -> None:
            assert self.context is not None
            self.stats = await self.context.store.stats()
            if self.main_screen is not None:
                self.main_screen.show_stats(self.stats)

        self.run_worker(recount(), group="stats", exclusive=True, exit_on_error=False)

    def _show_receiver(self) -> None:
        if self.main_screen is None or self.context is None:
            return
        self.main_screen.show_receiver(
            ReceiverState(
                address=self.context.receiver_address(),
                problem=self._receiver_problem,
                public_url=self.parts.settings.public_url,
                paused=self.context.paused,
                mode=self.parts.mode,
            )
        )

    # -- actions --------------------------------------------------------------------------------

    def _main(self) -> MainScreen | None:
        """The main screen, brought to the front (closing any detail or dialog over it)."""
        main = self.main_screen
        if main is None:
            return None
        while self.screen is not main and len(self.screen_stack) > 2:
            self.pop_screen()
        return main

    def action_toggle_pause(self) -> None:
        receiver = self.parts.receiver
        if receiver is None:
            self.notify("No receiver runs in this dashboard.", severity="warning", markup=False)
            return
        injection = receiver.options.injection
        injection.paused = not injection.paused
        self._show_receiver()
        if injection.paused:
            self.notify(
                "Acknowledgements paused: verified deliveries are stored but answered 503, so "
                "the service retries them. Press p to resume.",
                severity="warning",
                markup=False,
            )
        else:
            self.notify("Acknowledgements resumed.", markup=False)

    def action_toggle_theme(self) -> None:
        current = self.get_theme(self.theme)
        if current is not None and current.dark:
            self._dark_theme = self.theme
            self.theme = LIGHT_THEME
        else:
            self.theme = self._dark_theme

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.key_groups()))

    def key_groups(self) -> list[KeyGroup]:
        return [
            ("Everywhere", [*self.BINDINGS, Binding("ctrl+p", "command_palette", "Commands")]),
            ("Main screen", MainScreen.BINDINGS),
            ("Event log", [*EventLogPane.BINDINGS, *LogView.BINDINGS]),
            ("Delivery detail", DetailScreen.BINDINGS),
            ("Template JSON", TemplateScreen.BINDINGS),
            ("Forms", CreateEndpointScreen.BINDINGS),
        ]

    def action_new_endpoint(self) -> None:
        if main := self._main():
            main.action_new_endpoint()

    def action_import_endpoint(self) -> None:
        if main := self._main():
            main.action_import_endpoint()

    def action_refresh_templates(self) -> None:
        if main := self._main():
            main.action_refresh_templates()

    def action_show_pane(self, pane: str) -> None:
        if main := self._main():
            main.action_show_pane(pane)

    def action_filter_log(self) -> None:
        if main := self._main():
            main.action_show_pane("events")
            main.event_log.action_filter()

    def action_clear_filter(self) -> None:
        if main := self._main():
            main.event_log.action_clear_filter()

    def action_only(self, verdict: str) -> None:
        if main := self._main():
            main.action_show_pane("events")
            log = main.event_log
            log.set_terms(LogFilter(log.filter.topic, verdict, log.filter.text))

    def action_follow(self) -> None:
        if main := self._main():
            main.action_show_pane("events")
            main.event_log.action_follow()

    def action_open_detail(self) -> None:
        if main := self._main():
            main.action_open_detail()


def build_app(
    settings: Settings,
    client: ServiceClient | None,
    store: Store | StoreOpener,
    registry: EndpointRegistry,
    receiver: Receiver | None = None,
    *,
    receiver_display: str | None = None,
    mode: str | None = None,
    log_capacity: int = DEFAULT_CAPACITY,
    theme: str = DARK_THEME,
) -> WalletPassApp:
    """The dashboard, ready to run (``await app.run_async()``, ``app.run_test()``...).

    ``client``: the service (``WalletPassClient``), or None when no API key is set: templates then
    say how to set one. ``store``: an open ``Store``, closed by whoever opened it; or an async
    function opening one, for running under ``App.run()`` (snapshot tests), which the app calls on
    mount and closes at exit. ``receiver``: started on mount and stopped at exit, on the app's own
    event loop. ``receiver_display``: the address shown when there is no receiver (screenshots).
    ``mode``: a word shown in the header (``demo``).
    """
    if receiver is not None and not isinstance(store, Store):
        raise ValueError("A receiver needs the store it writes to: pass the open Store.")
    return WalletPassApp(
        settings,
        client,
        store,
        registry,
        receiver,
        receiver_display=receiver_display,
        mode=mode,
        log_capacity=log_capacity,
        theme=theme,
    )
