"""``attach``: the dashboard on the receiver that already runs on this home (``listen``, ``listen
--relay``, the demo or another dashboard), without binding a port.

The receiver is found through ``runtime/instance.py``; the dashboard reads the same history and
talks to the receiver over its control channel (``runtime/attached.py``). Plain ``walletpass-tui``
comes here too when it finds a receiver on its home. Nothing is written to stdout before the
screen (a terminal server such as textual-serve may speak its own protocol there); a failure is
one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from walletpass_tui.cli.common import CommandError, settings_from_args
from walletpass_tui.cli.give_way import GivingWay, active
from walletpass_tui.cli.signals import exit_app_on_signals
from walletpass_tui.config import Settings
from walletpass_tui.errors import WalletpassError
from walletpass_tui.runtime import instance

if TYPE_CHECKING:
    from walletpass_tui.runtime.attached import AttachedRuntime


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "attach",
        parents=parents,
        help="open the dashboard on the receiver already running on this home",
        description="Open the dashboard on a receiver that already runs on this home (listen, "
        "listen --relay, the demo or another dashboard) without binding a port: the same "
        "history, search, detail, forwards and replays, new deliveries as they are stored, the "
        "receiver's state, and p to pause its acknowledgements. Any number can be attached at "
        "once; closing one leaves the receiver running. When the receiver stops, the dashboard "
        "says so and keeps showing the history, and follows the next one that starts.",
        epilog="examples:\n"
        "  walletpass-tui attach\n"
        "  walletpass-tui attach --home ~/work/wallet-hooks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--theme",
        metavar="NAME",
        help="the dashboard's theme for this run, whatever [ui] theme in the config file says",
    )
    p.add_argument(
        "--normal-priority",
        action="store_true",
        help="draw the dashboard in this process at the usual priority; by default it gives way "
        "to the receiver on a busy machine: drawn beside the receiver at the idle priority, or "
        "where that cannot be, at a lower priority here (see docs/attach.md)",
    )
    # The dashboard a receiver draws beside it (draw_beside.py): the two pipes it was given,
    # and what the front would have shown first.
    p.add_argument("--drawn-for", metavar="LIFE,DONE", help=argparse.SUPPRESS)
    p.add_argument("--notice", action="append", default=[], help=argparse.SUPPRESS)
    p.set_defaults(handler=cmd_attach)


def cmd_attach(args: argparse.Namespace) -> int:
    from walletpass_tui.cli.dashboard_start import theme_arg

    if args.drawn_for is not None:
        return _drawn(args)
    theme = theme_arg(args.theme)
    settings = settings_from_args(args)
    found = instance.find(settings.home)
    if not isinstance(found, instance.Running) or found.record is None:
        raise CommandError(not_running(settings.home, found))
    return run_attached(
        settings,
        found.record,
        theme,
        give_way=not args.normal_priority,
        config=getattr(args, "config", None),
    )


def _drawn(args: argparse.Namespace) -> int:
    """The dashboard a receiver started beside it: at the idle priority, ended when its front
    is gone, its exit status written to the front before it exits."""
    from walletpass_tui.cli.attach_beside import idle_priority, parse_pipes, say_done
    from walletpass_tui.cli.dashboard_start import theme_arg

    try:
        life, done = parse_pipes(args.drawn_for)
    except (ValueError, OSError):
        raise CommandError(
            "--drawn-for is given by a receiver that draws a dashboard beside it; run "
            "`walletpass-tui attach` instead."
        ) from None
    idle_priority()
    status = 1
    try:
        theme = theme_arg(args.theme)
        settings = settings_from_args(args)
        found = instance.find(settings.home)
        if not isinstance(found, instance.Running) or found.record is None:
            raise CommandError(not_running(settings.home, found))
        status = run_attached(
            settings, found.record, theme, tuple(args.notice), give_way=False, life=life
        )
        return status
    except WalletpassError as exc:  # said by the command line's handler, before the pipe closes
        status = exc.exit_status
        raise
    except KeyboardInterrupt:
        status = 130
        raise
    finally:
        say_done(done, status)


def not_running(home: Path, found: instance.Found) -> str:
    """One sentence: nothing to attach to on ``home``, and how to start a receiver there."""
    flag = instance.home_flag(home)
    if isinstance(found, instance.Running):  # its state file could not be read
        return found.unreadable(home)
    if isinstance(found, instance.Stale):
        who = f" ({found.record.describe()})" if found.record else ""
        gone = f": the last one{who} stopped without cleaning up"
    else:
        gone = ""
    demo = ""
    try:
        if isinstance(instance.find(home / "demo", wait_s=0), instance.Running):
            demo = f" A demo runs on it: walletpass-tui attach{instance.home_flag(home / 'demo')}"
    except instance.InstanceError:  # no demo to mention: the hint is optional
        pass
    return (
        f"No receiver runs on {home}{gone}. Start one with `walletpass-tui listen{flag}` (or "
        f"the dashboard, `walletpass-tui{flag}`), then attach.{demo}"
    )


def run_attached(
    settings: Settings,
    record: instance.InstanceRecord,
    theme: str | None = None,
    notices: Sequence[str] = (),
    *,
    give_way: bool = True,
    config: str | None = None,
    life: int | None = None,
) -> int:
    """The dashboard on ``record``'s receiver: drawn beside it where that can be (and giving way
    is asked), else here. ``life``: a descriptor whose end of file ends the dashboard."""
    # Looking gives way to receiving: on a busy machine the receiver (and anything else at the
    # normal priority) is scheduled before this dashboard, never the other way round.
    if give_way and active():
        from walletpass_tui.cli.attach_beside import draw_beside

        status = draw_beside(settings, record, theme, notices, config)
        if isinstance(status, int):
            return status
        if status is not None:  # drawn beside it, but starved there: drawn here, saying why
            notices = (*notices, status)
    way = GivingWay() if give_way else None
    if way is not None:
        way.start(record.pid)
    # As for the dashboard: no cyclic collection while the UI is imported (the app turns it on
    # after its first frame).
    gc.disable()
    try:
        return asyncio.run(run_attached_async(settings, record, theme, notices, way, life))
    finally:
        gc.enable()
        if way is not None:
            way.end()


async def run_attached_async(
    settings: Settings,
    record: instance.InstanceRecord,
    theme: str | None = None,
    notices: Sequence[str] = (),
    way: GivingWay | None = None,
    life: int | None = None,
) -> int:
    from walletpass_tui.cli.dashboard_start import LazyServiceClient, read_first_page
    from walletpass_tui.runtime.attached import AttachedRuntime

    async with AttachedRuntime(settings, record) as runtime:
        first_page = read_first_page(runtime)
        await asyncio.sleep(0)
        from walletpass_tui.ui.app import build_app

        client = LazyServiceClient(settings, runtime.registry.record_created)
        try:
            app = build_app(
                runtime, client, first_page=first_page, theme=theme, notices=tuple(notices)
            )
            followed = None
            if way is not None:
                giving = way
                followed = runtime.watch(lambda: _follow(runtime, giving))
            if life is not None:  # its front gone (closed, killed): ended in order
                _end_with_front(life, app.exit)
            try:
                # SIGTERM and SIGHUP (the terminal closed) end it in order: the terminal is
                # restored and the session given its priority back.
                with exit_app_on_signals(app.exit):
                    await app.run_async()
            finally:
                if followed is not None:
                    followed()
                if life is not None:
                    asyncio.get_running_loop().remove_reader(life)
        finally:
            await client.aclose()
    return app.return_code or 0


def _end_with_front(life: int, exit_app: Callable[[], object]) -> None:
    """``exit_app`` once ``life`` reads its end of file (the front never writes to it)."""
    loop = asyncio.get_running_loop()

    def gone() -> None:
        loop.remove_reader(life)
        exit_app()

    loop.add_reader(life, gone)


def _follow(runtime: AttachedRuntime, way: GivingWay) -> None:
    """A receiver with another pid is followed now: its session looked at on a thread (a write
    to the session's priority may wait out the kernel's 0.1 s between two). Other changes of
    state (paused, counts) ask nothing."""
    record = runtime.record
    if record is not None and not runtime.gone and record.pid != way.followed:
        asyncio.get_running_loop().run_in_executor(None, way.follow, record.pid)
