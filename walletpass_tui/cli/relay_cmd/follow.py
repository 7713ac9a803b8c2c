"""``relay follow``: a relay channel's deliveries POSTed to a receiver, one line each."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time
from typing import Any

from walletpass_tui.cli.common import CommandError, settings_from_args
from walletpass_tui.config import ENV_RELAY_TOKEN
from walletpass_tui.text import printable

LATE_HINT_S = 240  # a delivery this late that a receiver refuses gets one hint on --tolerance


def cmd_follow(args: argparse.Namespace) -> int:
    from walletpass_tui.cli.receiver_setup import relay_url
    from walletpass_tui.relay.link.follow import RelayFollower, cursor_path

    settings = settings_from_args(args)
    token = args.relay_token or (settings.relay_token.reveal() if settings.relay_token else None)
    if not token:
        raise CommandError(
            f"Give the subscriber token with {ENV_RELAY_TOKEN}=wpr_... (or --token); "
            "'walletpass-tui relay channel add' printed it."
        )
    url = args.subscribe_url
    if not url.startswith(("http://", "https://")):
        raise CommandError(f"{url!r} is not a subscribe URL: it starts with https:// or http://.")
    url = relay_url(url, settings, "relay follow")
    target = args.target or settings.receiver_url()
    cursor_file = cursor_path(settings.home, url)
    if args.from_start:
        cursor_file.unlink(missing_ok=True)
    follower = RelayFollower(
        url,
        token,
        target,
        cursor_file,
        on_handed=_HandedPrinter(),
        on_skipped=_print_skipped,
        on_state=_StatePrinter(),
        on_retrying=_print_retrying,
        on_rewound=_print_rewound,
        max_body=settings.max_body,
    )
    print(f"Following {url} -> {target} (after cursor {follower.subscriber.cursor})", flush=True)
    asyncio.run(_follow(follower))
    return 0


async def _follow(follower: Any) -> None:
    task = asyncio.ensure_future(follower.run())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            # no signal handlers here: Ctrl-C still stops it
            loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
        await task


class _StatePrinter:
    """One line when the connection comes or goes (not for every cursor step)."""

    def __init__(self) -> None:
        self.last: tuple[bool, str | None] | None = None

    def __call__(self, state: Any) -> None:
        if state.stopped:  # refused for good: why ends the command instead, in one line
            return
        if state.misbehaving:  # one line, then quiet while it retries the same refusal
            if self.last != (False, "misbehaving"):
                self.last = (False, "misbehaving")
                print(
                    f"relay: misbehaving ({printable(state.error or '', 200)}; {state.refusals} "
                    "times in a row); retrying with backoff, skipping nothing",
                    flush=True,
                )
            return
        key = (state.connected, None if state.connected else state.error)
        if key == self.last or (not state.connected and not state.error):
            return
        self.last = key
        if not state.connected:
            later = f"next try in {state.retry_in:.1f} s" if state.retry_in else "retrying"
            print(f"relay: disconnected ({printable(state.error, 200)}); {later}", flush=True)
        elif state.pending:
            n = state.pending
            print(
                f"relay: connected, catching up on {n:,} deliver{'y' if n == 1 else 'ies'} "
                f"after cursor {state.cursor}",
                flush=True,
            )
        else:
            print(f"relay: connected, resuming after cursor {state.cursor}", flush=True)


def _print_retrying(retrying: Any) -> None:
    """A delivery --to did not take, on each try: kept, and tried again."""
    d = retrying.delivery
    delay = retrying.delay_s
    later = f"{delay:.1f} s" if delay < 10 else f"{delay:.0f} s"
    print(
        f"{d.cursor:>8}  {printable(d.webhook_id or '-', 60)}  -> not taken "
        f"({printable(retrying.why, 200)}); try {retrying.tries + 1} in {later}",
        flush=True,
    )


def _print_rewound(cursor: int, head: int) -> None:
    from walletpass_tui.relay.link.state import rewound_line

    print(f"relay: {rewound_line(cursor, head).removeprefix('relay ')}", flush=True)


def _print_skipped(skipped: Any) -> None:
    why = printable(skipped.why, 200)
    print(
        f"{skipped.cursor:>8}  skipped: the relay sent an event that cannot be read ({why})",
        flush=True,
    )


class _HandedPrinter:
    """One line per delivery handed over, and once a hint when late deliveries fail as too old."""

    def __init__(self) -> None:
        self.hinted = False

    def __call__(self, handed: Any) -> None:
        d = handed.delivery
        webhook_id = printable(d.webhook_id or "-", 60)
        print(f"{d.cursor:>8}  {webhook_id}  -> {handed.status}", flush=True)
        late_s = time.time() - d.received_at_ms / 1000
        if handed.status == 401 and late_s > LATE_HINT_S and not self.hinted:
            self.hinted = True
            print(
                f"relay: that delivery reached the relay {late_s / 60:.0f} min ago; a receiver "
                "refuses timestamps older than its --tolerance (300 s): run it with a larger "
                "--tolerance to accept deliveries caught up after a sleep.",
                flush=True,
            )
