"""What the ``sim`` and ``trigger`` commands share: their limits and the checks of their inputs,
each failing with one clear sentence."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from walletpass_tui import __version__
from walletpass_tui.cli.common import CommandError, read_bounded_file
from walletpass_tui.config import DEFAULT_MAX_BODY
from walletpass_tui.sim.clock import check_time_scale
from walletpass_tui.sim.endpoints import url_problem
from walletpass_tui.sim.engine import (
    Attempt,
)
from walletpass_tui.sim.events import event_body, message_id
from walletpass_tui.text import printable
from walletpass_tui.webhooks.verify import parse_secret

DEFAULT_SIM_PORT = 8788
EXCERPT_CHARS = 300
USER_AGENT = f"walletpass-tui/{__version__} (trigger)"


def checked_time_scale(text: str) -> float:
    try:
        return check_time_scale(float(text))
    except ValueError:
        raise CommandError(
            f"--time-scale must be a number above 0 (0.001 turns 5 minutes into 0.3 s), not {text!r}."
        ) from None


def checked_secret(text: str) -> str:
    parse_secret(text)
    return text.strip()


def checked_target_url(url: str) -> str:
    problem = url_problem(url.strip())
    if problem:
        raise CommandError(
            f"--to must be an http or https URL with a host, e.g. http://127.0.0.1:8787/webhooks "
            f"(got {printable(url, 80)!r})."
        )
    return url.strip()


def checked_message_id(text: str | None) -> str:
    if text is None:
        return message_id()
    if not text or not text.isascii() or not text.isprintable() or " " in text:
        raise CommandError("--id must be printable ASCII without spaces, e.g. msg_2KWPBgLlAfxd.")
    return text


def read_body_file(path: str) -> bytes:
    return read_bounded_file(path, DEFAULT_MAX_BODY, what="The body file")


def body_for(args: argparse.Namespace, topic: str) -> bytes:
    if args.body_file:
        return read_body_file(args.body_file)
    body = event_body(topic, when=datetime.now(UTC))
    return json.dumps(body, separators=(",", ":")).encode()


def scale_note(scale: float) -> str:
    if scale == 1:
        return "real time"
    return f"time scale {scale:g}: a 5-minute wait takes {300 * scale:g} s"


def print_attempt(attempt: Attempt) -> None:
    print(attempt.describe(), flush=True)
    if not attempt.ok and attempt.response_excerpt:
        print(f"    answer: {printable(attempt.response_excerpt, EXCERPT_CHARS)}", flush=True)
