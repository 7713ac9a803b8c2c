"""``listen``: the receiver without any UI, one line (or JSON object) per attempt."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TextIO

from walletpass_tui.cli.common import CommandError, settings_from_args
from walletpass_tui.cli.listen_cmd.printer import ListenPrinter
from walletpass_tui.cli.listen_cmd.tunnel_lines import TunnelPrinter, first_lines, public_url_lines
from walletpass_tui.cli.receiver_flags import add_delivery_flags, add_receiver_flags
from walletpass_tui.cli.receiver_setup import delivery_setup, relay_link
from walletpass_tui.cli.signals import last_words, stop_on_signals
from walletpass_tui.cli.upgrade import upgrade_history
from walletpass_tui.config import Settings
from walletpass_tui.runtime.attachable import ASKED, UNDONE
from walletpass_tui.runtime.instance import InstanceRecord, home_flag
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.text import format_ms, printable
from walletpass_tui.tunnel.ngrok_agent import discover_ngrok
from walletpass_tui.webhooks.models import ForwardResult, ForwardRow
from walletpass_tui.webhooks.store.prune_job import DONE, FAILED, PruneJob

if TYPE_CHECKING:
    from walletpass_tui.relay.link.feed import RelayLink
    from walletpass_tui.relay.link.state import LinkState


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "listen",
        parents=parents,
        help="receive and verify webhooks without the dashboard",
        description="Run the webhook receiver headless. Every attempt is verified (Standard Webhooks "
        "signature, timestamp tolerance), stored in the history database, and printed. A verified "
        "delivery is answered 200 only after it is on disk. It verifies with the secrets given, "
        "those of the endpoints known locally and this home's test secret, made once: what "
        "'walletpass-tui trigger' signs with when it sends to this receiver.",
        epilog="examples:\n"
        "  walletpass-tui listen     # then, in another shell: walletpass-tui trigger activated\n"
        "  walletpass-tui listen --print-secret     # this home's test secret, for your app\n"
        "  walletpass-tui listen --tunnel cloudflared\n"
        '  WALLETPASS_SECRET="$WEBHOOK_SECRET" walletpass-tui listen --forward-to '
        "http://localhost:3000/webhooks "
        '--header "Authorization: Bearer $APP_TOKEN"\n'
        "  walletpass-tui listen --port 9000 --json | jq .verdict\n"
        "  walletpass-tui listen --fail-first 2     # watch the sender retry\n"
        "  WALLETPASS_RELAY_TOKEN=wpr_... walletpass-tui listen --relay "
        "https://relay.example.com/channels/SLUG/events",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_receiver_flags(p)
    p.add_argument(
        "--json", action="store_true", help="print one JSON object per attempt on stdout"
    )
    p.add_argument(
        "--print-secret",
        action="store_true",
        help="print this home's test secret (made now if it has none) and exit: give it to an "
        "app of yours that verifies the deliveries trigger sends",
    )
    add_delivery_flags(p)
    p.set_defaults(handler=cmd_listen)


def cmd_listen(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    if args.print_secret:
        from walletpass_tui.cli.home_receiver import home_test_secret

        print(home_test_secret(settings))
        return 0
    setup = delivery_setup(args, settings)
    upgrade_history(settings.database_path)
    return run_loop(_listen(settings, setup, args.json, relay_link(args, settings)))


def run_loop(main: Coroutine[Any, Any, int]) -> int:
    """``asyncio.run(main)``, on uvloop where it is installed (not on Windows): its event loop
    costs the receiver about a tenth less CPU per delivery, which a busy machine turns into more
    deliveries per second."""
    try:
        import uvloop
    except ImportError:  # no uvloop: the standard event loop, as documented
        return asyncio.run(main)
    return uvloop.run(main)


class RelayStatePrinter:
    """One line (on stderr with --json, else stdout) each time the relay link's state changes."""

    def __init__(self, out: TextIO) -> None:
        from walletpass_tui.relay.link.state import StateLines

        self.out = out
        self.lines = StateLines()

    def __call__(self, state: LinkState) -> None:
        line = self.lines(state)
        if line is not None and not state.stopped:  # why it stopped ends the command instead
            self.out.write(line + "\n")
            self.out.flush()


class InjectionPrinter:
    """One line each time the failures injected change (an attached dashboard's p, say): with
    nobody looking at a dashboard, listen's output is where a pause shows."""

    def __init__(self, out: TextIO, runtime: DeliveryRuntime) -> None:
        self.out = out
        self.runtime = runtime
        self.shown = runtime.injection

    def __call__(self) -> None:
        injection = self.runtime.injection
        if injection == self.shown:
            return  # the tunnel's state changed, or the same request came again
        self.shown = injection
        why = self.runtime.injection_why
        text = injection.describe()
        if why == UNDONE:
            line = (
                f"The dashboard that injected failures closed; injecting listen's own again: {text}"
                if text
                else "The dashboard that injected failures closed: deliveries are answered as "
                "usual again."
            )
        elif text:
            until = ", until it changes them back or closes" if why == ASKED else ""
            line = f"Injecting failures{' ' + why if why else ''}{until}: {text}"
        else:
            line = f"Injecting no failures{' ' + why if why else ''}: deliveries are answered as usual."
        self.out.write(line + "\n")
        self.out.flush()


class PrunePrinter:
    """One line when the receiver starts a prune (``events prune`` in another shell asked it
    to: its writer deletes between deliveries) and one when it ends, with how many it deleted."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, job: PruneJob) -> None:
        before = format_ms(job.cutoff_ms)
        self._say(
            f"Pruning the attempts received before {before}, as 'events prune' asked; "
            "deliveries go first."
        )
        job.ended.subscribe(self._ended)

    def _ended(self, job: PruneJob) -> None:
        before = format_ms(job.cutoff_ms)
        if job.end == DONE:
            self._say(f"Pruned {job.deleted:,} attempt(s) received before {before}.")
        else:
            why = f" ({job.reason})" if job.reason else ""
            verb = "failed" if job.end == FAILED else "stopped"
            self._say(f"Pruning {verb} after {job.deleted:,} attempt(s){why}.")

    def _say(self, line: str) -> None:
        self.out.write(line + "\n")
        self.out.flush()


ANSWER_SHOWN = 200  # characters of your app's answer on the line below a forward


def answer_line(body: bytes) -> str | None:
    """The line below a forward: the first ``ANSWER_SHOWN`` characters of your app's answer,
    escaped (untrusted text), or None for an empty one."""
    text = body.decode("utf-8", errors="backslashreplace").strip()
    if not text:
        return None
    # Escaping only lengthens, so one character more than is shown tells whether to cut.
    return "     " + printable(text[: ANSWER_SHOWN + 1], ANSWER_SHOWN)


class ForwardPrinter:
    """One line (or JSON object) per forward answered, with the start of your app's answer on the
    next line (the JSON object holds the whole answer as stored, at most 64 KiB), handed to
    ``emit`` (the listen printer, which keeps it behind the deliveries it still holds)."""

    def __init__(self, emit: Callable[[str], None], as_json: bool) -> None:
        self.emit = emit
        self.as_json = as_json

    def __call__(self, row: ForwardRow, result: ForwardResult) -> None:
        if self.as_json:
            line = json.dumps(
                {
                    "forward": {
                        "webhook_id": row.webhook_id,
                        "attempt_id": row.attempt_id,
                        "target": row.target,
                        "try": row.tries + 1,
                        "status": result.status,
                        "latency_ms": round(result.latency_ms, 1),
                        "error": result.error,
                        "note": result.note,
                        "response_body": result.body.decode("utf-8", errors="replace"),
                    }
                }
            )
        else:
            outcome = f"{result.status}" if result.status is not None else f"failed: {result.error}"
            later = "" if result.ok else "  (will retry)"
            line = (
                f"  -> {printable(row.webhook_id or '-', 40)} forwarded to {printable(row.target, 80)}: "
                f"{outcome} in {result.latency_ms:.0f} ms{later}"
            )
            answer = answer_line(result.body)
            if answer is not None:
                line += "\n" + answer
        self.emit(line)


async def _listen(
    settings: Settings, setup: DeliverySetup, as_json: bool, relay: RelayLink | None = None
) -> int:
    info = sys.stderr if as_json else sys.stdout
    # Ctrl-C / SIGTERM are caught from the very start: one that arrives while opening the store or
    # binding still ends in a clean stop (port released, store closed, exit 0), not a traceback.
    with stop_on_signals() as stop:
        # What would run once deliveries are accepted runs now, before the port is bound: the
        # receiver's import (built by serve()) and the ngrok lookup (its HTTP client and
        # TLS set-up). Done after, they held up the first deliveries for up to half a second.
        importlib.import_module("walletpass_tui.webhooks.receiver")
        port = setup.options.port if setup.options is not None else 0
        # An ngrok agent run by hand is asked for its URL, unless listen starts a tunnel itself.
        seek = setup.tunnel is None and not settings.public_url
        public_url = settings.public_url or (await discover_ngrok(port) if seek and port else None)
        feeds = (relay,) if relay is not None else ()
        printer = ListenPrinter(sys.stdout, as_json, learning=setup.learn_schemas)
        async with DeliveryRuntime(settings, setup, feeds=feeds) as runtime:
            # The one receiver `attach` finds on this home (AlreadyRunning: one line, exit 1).
            stale = await runtime.start_instance("listen")
            runtime.watch(InjectionPrinter(info, runtime))
            runtime.store.on_prune(PrunePrinter(info))
            runtime.subscribe(
                printer.deliveries,
                ForwardPrinter(printer.forwards, as_json),
                drift=printer.drift,
                learned=printer.learned,
            )
            if runtime.learner is not None:
                runtime.learner.on_warm_up(printer.warm_up)
            await runtime.serve()
            if seek and not port:  # a port picked at random: known only now
                public_url = await discover_ngrok(runtime.bound[1] if runtime.bound else None)
            pending = await runtime.pending_forwards()
            # Said at once, the tunnel as it is now (its URL follows when it is up): a tunnel
            # that takes long to start never holds back the receiver's first lines.
            _announce(info, runtime, public_url, pending, relay, stale)
            if runtime.tunnel is not None:
                runtime.tunnel.subscribe(
                    TunnelPrinter(
                        info,
                        lambda: runtime.public_url,
                        runtime.registry.load,
                        runtime.tunnel.state,
                        home_flag(settings.home),
                        describe=runtime.tunnel.provider.describe,
                    )
                )
            if relay is not None:  # after the announcement, from the state it is in now
                states = RelayStatePrinter(info)
                states(relay.state)
                relay.subscribe(states)
            failed = await _until_stopped(stop, runtime)
        printer.close()  # what the learner had not looked at when it stopped
    if failed is not None:
        raise CommandError(str(failed))
    last_words(info, "Stopped; every acknowledged delivery is in the history.")
    return 0


async def _until_stopped(stop: asyncio.Event, runtime: DeliveryRuntime) -> BaseException | None:
    """Wait for Ctrl-C / SIGTERM (None) or a feed that stopped for good (why)."""
    signalled = asyncio.ensure_future(stop.wait())
    feed = asyncio.ensure_future(runtime.feed_stopped())
    try:
        await asyncio.wait({signalled, feed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        signalled.cancel()
        feed.cancel()
    if feed.done() and not feed.cancelled():
        return feed.result()
    return None


def pending_line(count: int, *, forwarding: bool) -> str:
    """What is said at start about forwards an earlier run left queued."""
    some = f"{count} forward{'s' if count != 1 else ''} from an earlier run"
    if forwarding:
        return f"{some} waiting; resuming them in order.\n"
    wait, stay = ("waits", "stays") if count == 1 else ("wait", "stay")
    return (
        f"{some} {wait} in the queue and {stay} there: listen with --forward-to to send, or give "
        "up with 'walletpass-tui events pending --give-up'.\n"
    )


def _announce(
    out: TextIO,
    runtime: DeliveryRuntime,
    public_url: str | None = None,
    pending: int = 0,
    relay: RelayLink | None = None,
    stale: InstanceRecord | None = None,
) -> None:
    settings = runtime.settings
    out.write(f"Listening on {runtime.url}\n")
    if relay is not None:
        out.write(
            f"Following the relay {printable(relay.url, 200)} (resumes after the last stored)\n"
        )
    if runtime.tunnel is not None:
        for line in first_lines(
            runtime.tunnel.state,
            runtime.tunnel.provider.describe,
            runtime.public_url,
            runtime.registry.load(),
            home_flag(settings.home),
        ):
            out.write(line + "\n")
    elif public_url:
        for line in public_url_lines(
            public_url, settings.receiver_path, found=not settings.public_url
        ):
            out.write(line + "\n")
    ack_target = runtime.ack_target
    for route in runtime.routes:
        topic = route.topic or "every topic"
        mode = "answering with its status" if ack_target else "after storing"
        notes = "".join(f"; {note}" for note in route.options.notes())  # header values masked
        out.write(f"Forwarding {topic} to {route.target} ({mode}){notes}\n")
    options = runtime.setup.options
    secrets = [key.label for key in (options.secrets if options else ())]
    for endpoint in runtime.registry.load():
        secrets.append(f"{endpoint.id} {endpoint.secret.masked}")
    out.write("Verifying with: " + ", ".join(secrets) + "\n")
    injected = runtime.injection.describe()
    if injected:
        out.write(f"Injecting failures: {injected}\n")
    if pending:
        out.write(pending_line(pending, forwarding=runtime.forwarding))
    if stale is not None:
        out.write(
            f"The last receiver on this home ({stale.describe()}) stopped without cleaning up; "
            "its state was replaced.\n"
        )
    out.write(f"Send a test delivery: walletpass-tui trigger activated{home_flag(settings.home)}\n")
    out.write(f"Attach a dashboard: walletpass-tui attach{home_flag(settings.home)}\n")
    out.write(f"History: {settings.database_path}   (Ctrl-C to stop)\n")
    out.flush()
