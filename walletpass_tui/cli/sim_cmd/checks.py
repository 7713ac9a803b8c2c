"""What the ``sim`` and ``trigger`` commands share: their limits and the checks of their inputs,
each failing with one clear sentence."""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from walletpass_tui import __version__
from walletpass_tui.cli.common import CommandError, read_bounded_file, settings_from_args
from walletpass_tui.cli.home_receiver import receiver_url, signing_secret
from walletpass_tui.cli.secret_flags import GivenSecret, stdin_conflict
from walletpass_tui.config import DEFAULT_MAX_BODY
from walletpass_tui.errors import UsageError
from walletpass_tui.sim.body_edit import Assignment, BodyEditError, apply, parse_assignment
from walletpass_tui.sim.clock import check_time_scale
from walletpass_tui.sim.endpoints import url_problem
from walletpass_tui.sim.engine import (
    SentAttempt,
)
from walletpass_tui.sim.events import event_body, message_id
from walletpass_tui.sim.fixtures import FixtureError, FixtureEvent, compact_json, parse_fixture
from walletpass_tui.text import printable

DEFAULT_SIM_PORT = 8788
FIXTURE_LIMIT = 4 * 1024 * 1024  # bytes of a --fixture file
EXCERPT_CHARS = 300
USER_AGENT = f"walletpass-tui/{__version__} (trigger)"


def checked_time_scale(text: str) -> float:
    try:
        return check_time_scale(float(text))
    except ValueError:
        raise CommandError(
            f"--time-scale must be a number above 0 (0.001 turns 5 minutes into 0.3 s), not {text!r}."
        ) from None


def target_and_secret(args: argparse.Namespace) -> tuple[str, GivenSecret]:
    """Where to send and the secret to sign with (and where it came from). Without --to: this
    home's receiver (from its state file). The secret: one a flag gives (``--secret``,
    ``--secret-file``, ``--secret -``), else this home's test secret when sending to this home's
    receiver, else ``$WALLETPASS_SECRET``'s; refused when there is none."""
    settings = settings_from_args(args)
    url = checked_target_url(args.to) if args.to else receiver_url(settings)
    stdin_conflict(args, "body_file", "fixture")
    secret = signing_secret(args, settings, url)
    if secret is None:
        raise UsageError(
            f"Give the signing secret {printable(url, 80)} verifies with: set WALLETPASS_SECRET, "
            "or give --secret-file PATH or --secret - (standard input). This home's receiver "
            "needs none: leave out --to."
        )
    return url, secret


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


def assignment_arg(text: str) -> Assignment:
    """``--set PATH=VALUE`` for argparse: a malformed one is a usage error (exit 2)."""
    try:
        return parse_assignment(text)
    except BodyEditError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def apply_sets(doc: Any, sets: list[Assignment]) -> Any:
    """``doc`` with each ``--set`` applied in order; a path that cannot be is a usage error."""
    for assignment in sets:
        try:
            apply(doc, assignment.path, assignment.value)
        except BodyEditError as exc:
            raise UsageError(f"--set {assignment}: {exc}") from None
    return doc


def body_document(args: argparse.Namespace, topic: str) -> Any:
    """The body as JSON values: the --body-file's (which must then be JSON) or one made up for
    ``topic``, with every --set applied."""
    sets = getattr(args, "sets", None) or []
    if args.body_file:
        raw = read_body_file(args.body_file)
        try:
            doc = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CommandError(
                f"The body file {args.body_file} is not valid JSON ({exc}); "
                + (
                    "--set changes fields of a JSON body."
                    if sets
                    else "to send any bytes, use 'walletpass-tui trigger --body-file'."
                )
            ) from None
    else:
        doc = event_body(topic, when=datetime.now(UTC))
    return apply_sets(doc, sets)


def body_for(args: argparse.Namespace, topic: str) -> bytes:
    """What ``trigger`` and ``sim deliver`` send: the --body-file's bytes unchanged, unless
    --set changes a field (then the file must be JSON and is sent compactly written)."""
    if args.body_file and not getattr(args, "sets", None):
        return read_body_file(args.body_file)
    return compact_json(body_document(args, topic))


def fixture_events(args: argparse.Namespace, *, need_topic: bool) -> list[FixtureEvent] | None:
    """The events of --fixture (None without one), checked whole before anything is sent; the
    flags that say what one event is cannot be given with it."""
    if not args.fixture:
        if args.topic is None:
            raise UsageError(
                "Give the TOPIC to send (pass.activated or pass.deactivated), or --fixture FILE."
            )
        return None
    given = [
        flag
        for flag, value in (
            ("TOPIC", args.topic),
            ("--set", getattr(args, "sets", None)),
            ("--body-file", args.body_file),
            ("--id", getattr(args, "message_id", None)),
        )
        if value
    ]
    if given:
        raise UsageError(
            f"--fixture lists its events itself; give it without {' or '.join(given)} (each "
            'item has its own topic, and "set" for the fields to change).'
        )
    data = read_bounded_file(
        args.fixture, FIXTURE_LIMIT, what="The fixture", limit_name="the most a fixture may hold"
    )
    try:
        return parse_fixture(data, need_topic=need_topic)
    except FixtureError as exc:
        raise UsageError(f"The fixture {printable(args.fixture, 200)}: {exc}") from None


def scale_note(scale: float) -> str:
    if scale == 1:
        return "real time"
    return f"time scale {scale:g}: a 5-minute wait takes {300 * scale:g} s"


def print_attempt(attempt: SentAttempt) -> None:
    print(attempt.describe(), flush=True)
    if not attempt.ok and attempt.response_excerpt:
        print(f"    answer: {printable(attempt.response_excerpt, EXCERPT_CHARS)}", flush=True)
