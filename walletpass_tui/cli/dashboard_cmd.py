"""No subcommand: the dashboard, with its receiver in-process on the same event loop (or, when a
receiver already runs on the home, attached to it: ``attach_cmd``).

Everything async is opened inside one ``asyncio.run`` through the delivery runtime: the store
first (a locked or damaged database is reported before the screen changes), the registry, then the
receiver's port (a port in use is one line and exit 1, never a dashboard that is not listening).
The app subscribes, paints its first frame and only then starts accepting deliveries; when it
ends the runtime closes in reverse order, the store last, after every acknowledged delivery is on
disk. With ``--relay`` the runtime also follows a relay channel (its state in the header; a relay
that refuses the token stops following with a notification, the local receiver keeps going).

The first frame comes before the HTTP stack is imported: the port is a plain socket until the
receiver (its HTTP server, forwarding) is built on it after that frame, and the service's client
(httpx) is built the first time a pane calls the service. The log's first page is read by the
store's thread while the UI is imported, so that frame already shows the newest deliveries.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Sequence

from walletpass_tui.cli.common import settings_from_args
from walletpass_tui.cli.dashboard_start import LazyServiceClient, read_first_page, theme_arg
from walletpass_tui.cli.receiver_setup import delivery_setup, receiver_options, relay_link
from walletpass_tui.cli.signals import exit_app_on_signals
from walletpass_tui.cli.upgrade import upgrade_history
from walletpass_tui.config import Settings
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.instance import AlreadyRunning
from walletpass_tui.runtime.local import DeliveryRuntime, Feed
from walletpass_tui.runtime.setup import DeliverySetup


async def run_dashboard_async(
    settings: Settings,
    setup: DeliverySetup | None = None,
    feeds: Sequence[Feed] = (),
    theme: str | None = None,
) -> int | AlreadyRunning:
    """The dashboard with its own receiver; AlreadyRunning (returned, its port released) when
    another receiver took the home meanwhile: the caller attaches to it instead."""
    setup = setup or DeliverySetup(options=receiver_options(settings))
    async with DeliveryRuntime(settings, setup, feeds=feeds) as runtime:
        try:
            await runtime.start_instance("dashboard")
        except AlreadyRunning as exc:  # another receiver runs: the caller says so
            return exc
        first_page = read_first_page(runtime)
        await asyncio.sleep(0)  # the read goes to the store's thread...
        from walletpass_tui.ui.app import build_app  # ...and runs while the UI is imported

        client = LazyServiceClient(settings, runtime.registry.record_created)
        try:
            app = build_app(runtime, client, first_page=first_page, theme=theme)
            with exit_app_on_signals(app.exit):  # the terminal closed: the tunnel is stopped too
                await app.run_async()
        finally:
            await client.aclose()
    return app.return_code or 0


def run_dashboard(args: argparse.Namespace) -> int:
    """The dashboard with its receiver; attached instead when a receiver already runs on the
    home (``listen``, another dashboard), rather than failing to bind its port."""
    theme = theme_arg(getattr(args, "theme", None))
    settings = settings_from_args(args)
    found = instance.find(settings.home)
    if isinstance(found, instance.Running) and found.record is not None:
        return _attach(args, settings, found.record, theme)
    setup = delivery_setup(args, settings)
    link = relay_link(args, settings)
    upgrade_history(settings.database_path)  # before the screen is taken: its progress shows
    # No cyclic garbage collection while the UI is imported and the first screen built (tens of
    # thousands of long-lived objects, walked again by each collection): the app turns it back
    # on after its first frame.
    gc.disable()
    try:
        ran = asyncio.run(
            run_dashboard_async(settings, setup, (link,) if link else (), theme=theme)
        )
    finally:
        gc.enable()
    if isinstance(ran, AlreadyRunning):  # another receiver took the home a moment before
        if ran.found.record is None:
            raise ran
        return _attach(args, settings, ran.found.record, theme)
    return ran


def _attach(
    args: argparse.Namespace,
    settings: Settings,
    record: instance.InstanceRecord,
    theme: str | None,
) -> int:
    from walletpass_tui.cli.attach_cmd import run_attached

    unused = receiver_flags_given(args)
    notices = []
    if unused:
        notices.append(
            f"A receiver already runs on this home ({record.describe()}), so this dashboard "
            f"is attached to it and {', '.join(unused)} "
            f"{'is' if len(unused) == 1 else 'are'} not used. Stop that receiver first to "
            "start one with them, or use another --home."
        )
    return run_attached(settings, record, theme, notices, config=getattr(args, "config", None))


# Flags of the command line that only configure a receiver this process would start.
_NOT_RECEIVER_FLAGS = {"theme", "command", "handler"}


def receiver_flags_given(args: argparse.Namespace) -> list[str]:
    """The receiver's flags given on this command line (``--port``, ``--secret``...): those
    whose value is not the parser's default. Settings flags (``--home``...) are not among them."""
    from walletpass_tui.cli.common import add_settings_flags
    from walletpass_tui.cli.receiver_flags import add_delivery_flags, add_receiver_flags

    settings_flags = argparse.ArgumentParser(add_help=False)
    add_settings_flags(settings_flags)
    skip = _NOT_RECEIVER_FLAGS | {action.dest for action in settings_flags._actions}
    receiver_flags = argparse.ArgumentParser(add_help=False)  # as the command line adds them
    add_receiver_flags(receiver_flags)
    add_delivery_flags(receiver_flags)
    defaults = vars(receiver_flags.parse_args([]))
    return sorted(
        "--" + name.replace("_", "-")
        for name, value in vars(args).items()
        if name not in skip and value != defaults.get(name)
    )
