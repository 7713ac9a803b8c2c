"""``sim serve``: the simulated service on its own, until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from datetime import datetime

from walletpass_tui.cli.common import (
    CommandError,
)
from walletpass_tui.cli.signals import stop_on_signals
from walletpass_tui.cli.sim_cmd.checks import (
    checked_time_scale,
    scale_note,
)
from walletpass_tui.config import ENV_API_KEY, ENV_BASE_URL, ENV_REGISTRATION_URL
from walletpass_tui.sim.engine import (
    DeliveryResult,
    SentAttempt,
)
from walletpass_tui.sim.events import new_api_key
from walletpass_tui.sim.http_api import CONTROL_PREFIX
from walletpass_tui.sim.service import SimulatedService


def cmd_sim_serve(args: argparse.Namespace) -> int:
    scale = checked_time_scale(args.time_scale)
    key, reused = _serve_key(args)
    if not 0 <= args.sim_port <= 65535:
        raise CommandError(f"--port must be between 0 and 65535, got {args.sim_port}.")
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C stops it, as the next line says
        asyncio.run(_serve(args.sim_host, args.sim_port, key, scale, reused))
    print("Simulator stopped.", flush=True)
    return 0


def _serve_key(args: argparse.Namespace) -> tuple[str, bool]:
    key = getattr(args, "api_key", None)
    if key:
        key = key.strip()
        if not key.isascii() or not key.isprintable() or " " in key:
            raise CommandError("--api-key must be printable ASCII without spaces.")
        return key, False
    from_env = os.environ.get(ENV_API_KEY, "").strip()
    if from_env.startswith("sk_sim_"):
        return from_env, True
    return new_api_key(), False


async def _serve(host: str, port: int, key: str, scale: float, reused: bool) -> None:
    service = SimulatedService(key, time_scale=scale)
    handler = _log_to_stdout()
    service.subscribe(_serve_printer)
    try:
        with stop_on_signals() as stop:
            try:
                url = await service.start(host, port)
                _print_banner(url, key, scale, reused)
                await stop.wait()
            finally:
                await service.stop()
    finally:
        logging.getLogger("walletpass_tui.sim").removeHandler(handler)


def _log_to_stdout() -> logging.Handler:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("walletpass_tui.sim")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return handler


def _serve_printer(event: SentAttempt | DeliveryResult) -> None:
    stamp = datetime.now().strftime("%H:%M:%S")
    if isinstance(event, SentAttempt):
        print(f"{stamp} {event.message_id} -> {event.endpoint_id}  {event.describe()}", flush=True)
    elif event.state == "stopped":
        print(
            f"{stamp} {event.message_id} -> {event.endpoint_id}  stopped after "
            f"{event.attempts} attempt(s): the endpoint was disabled or removed",
            flush=True,
        )
    elif event.state == "failed":
        print(
            f"{stamp} {event.message_id} -> {event.endpoint_id}  gave up after "
            f"{event.attempts} attempts",
            flush=True,
        )


def _print_banner(url: str, key: str, scale: float, reused: bool) -> None:
    key_note = f"reused from ${ENV_API_KEY}" if reused else "a simulator key, valid only here"
    print(f"Simulated Wallet Pass Service on {url} ({scale_note(scale)})")
    print(f"  base_url:          {url}   (GET /api/v0/passTemplates)")
    print(f"  registration_url:  {url}   (POST /v0/webhookEndpoints)")
    print(f"  control API:       {url}{CONTROL_PREFIX}   (sim emit, sim endpoint, sim deliveries)")
    print(f"  API key:           {key}   ({key_note})")
    print()
    print("Paste into another shell:")
    print(f"  export {ENV_BASE_URL}={url}")
    print(f"  export {ENV_REGISTRATION_URL}={url}")
    print(f"  export {ENV_API_KEY}={key}")
    print("then, for example:")
    print(
        "  walletpass-tui endpoints create --allow-http --url http://127.0.0.1:8787/webhooks "
        "--topic pass.activated"
    )
    print("  walletpass-tui sim emit pass.activated")
    print("Press Ctrl-C to stop.", flush=True)
