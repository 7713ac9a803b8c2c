"""``sim deliver`` (one message through the full retry schedule) and ``trigger`` (one signed
post)."""

from __future__ import annotations

import argparse
import asyncio
import time
from datetime import UTC, datetime

import httpx

from walletpass_tui.api.topics import topic_label
from walletpass_tui.cli.common import CommandError
from walletpass_tui.cli.secret_flags import GivenSecret
from walletpass_tui.cli.sim_cmd.checks import (
    EXCERPT_CHARS,
    USER_AGENT,
    body_for,
    checked_message_id,
    checked_time_scale,
    fixture_events,
    print_attempt,
    scale_note,
    target_and_secret,
)
from walletpass_tui.config import ENV_SECRET
from walletpass_tui.sim.engine import (
    RETRY_WAITS,
    DeliveryEngine,
    DeliveryResult,
    Message,
    SentAttempt,
    Target,
    format_wait,
)
from walletpass_tui.sim.events import message_id
from walletpass_tui.text import printable
from walletpass_tui.webhooks.injection import PAUSED_ANSWER
from walletpass_tui.webhooks.verify import sign


def cmd_sim_deliver(args: argparse.Namespace) -> int:
    scale = checked_time_scale(args.time_scale)
    url, given = target_and_secret(args)
    msg_id = checked_message_id(args.message_id)
    body = body_for(args, args.topic)
    message = Message(id=msg_id, topic=args.topic, body=body)
    print(
        f"Delivering {msg_id} ({args.topic}, {len(body)} bytes) to {url}, {signed_with(given)}: "
        f"up to {len(RETRY_WAITS)} attempts ({scale_note(scale)}).",
        flush=True,
    )
    result = asyncio.run(_deliver(url, given.value, message, scale))
    if result is None or result.state == "stopped":
        raise CommandError("The delivery was stopped before it finished.")
    if result.state == "delivered":
        print(f"Delivered on attempt {result.attempts}.")
        return 0
    raise CommandError(
        f"Gave up after {result.attempts} failed attempts, as the service would: the message is "
        "not delivered."
    )


async def _deliver(url: str, secret: str, message: Message, scale: float) -> DeliveryResult | None:
    engine = DeliveryEngine(time_scale=scale)
    engine.subscribe(lambda e: print_attempt(e) if isinstance(e, SentAttempt) else None)
    try:
        delivery = engine.deliver(Target(url, secret), message)
        return await delivery.wait()
    finally:
        await engine.aclose()


# -- trigger ----------------------------------------------------------------------------------------


def signed_with(given: GivenSecret) -> str:
    """Which secret a delivery is signed with, masked, and where it came from."""
    return f"signed with {given.masked} ({given.source})"


PAUSED = (
    "a dashboard paused its acknowledgements: press p in that dashboard to resume them (or close "
    "it)"
)


def paused_answer(status: int, answer: bytes) -> bool:
    """Whether the receiver's answer says its acknowledgements are paused (``PAUSED_ANSWER``)."""
    return status == 503 and answer.strip() == PAUSED_ANSWER.strip().encode()


ANOTHER_SECRET = (
    f"if it verifies with another secret, give that one (${ENV_SECRET}, --secret-file PATH or "
    "--secret -)"
)


def cmd_trigger(args: argparse.Namespace) -> int:
    url, given = target_and_secret(args)
    secret = given.value
    if not 0 < args.timeout <= 3600:
        raise CommandError(f"--timeout must be between 0 and 3600 seconds, got {args.timeout:g}.")
    events = fixture_events(args, need_topic=False)
    print(f"Signing with: {given.masked} ({given.source})", flush=True)
    with httpx.Client(timeout=args.timeout, trust_env=False, follow_redirects=False) as client:
        if events is None:
            msg_id = checked_message_id(args.message_id)
            status, answer = _post(
                client, url, secret, msg_id, args.topic, body_for(args, args.topic)
            )
            if 200 <= status <= 299:
                return 0
            retry = (
                "the service would count this as a failed attempt and retry in "
                f"{format_wait(RETRY_WAITS[1])}"
            )
            if status == 401:  # the secret is the likely cause: say which one was used
                raise CommandError(
                    f"The receiver answered 401 to a delivery {signed_with(given)}: "
                    f"{ANOTHER_SECRET}; {retry}."
                )
            if paused_answer(status, answer):
                raise CommandError(f"The receiver answered 503 because {PAUSED}; {retry}.")
            raise CommandError(f"The receiver answered {status}, not 2xx: {retry}.")
        refused = unauthorized = paused = 0
        for index, event in enumerate(events):
            body = event.render(datetime.now(UTC))
            status, answer = _post(
                client, url, secret, message_id(), event.topic, body, index=index
            )
            refused += not 200 <= status <= 299
            unauthorized += status == 401
            paused += paused_answer(status, answer)
    print(f"Sent {len(events)} event(s) in order: {len(events) - refused} answered 2xx.")
    if refused:
        why = ""
        if unauthorized:
            why = f"; {unauthorized} answered 401 to deliveries {signed_with(given)}: {ANOTHER_SECRET}"
        if paused:
            why += f"; {paused} answered 503 because {PAUSED}"
        raise CommandError(
            f"{refused} of {len(events)} event(s) got no 2xx answer: the service would count "
            f"each as a failed attempt and retry it{why}."
        )
    return 0


def _post(
    client: httpx.Client,
    url: str,
    secret: str,
    msg_id: str,
    topic: str | None,
    body: bytes,
    *,
    index: int | None = None,
) -> tuple[int, bytes]:
    """Sign and POST one body; print what was sent and the answer; return its status and the
    start of the answer."""
    headers = sign(secret, msg_id, body, datetime.now(UTC))
    headers["Content-Type"] = "application/json"
    headers["User-Agent"] = USER_AGENT
    which = "" if index is None else f" (fixture item [{index}])"
    timeout = client.timeout.read
    started = time.perf_counter()
    try:
        response = client.post(url, content=body, headers=headers)
    except httpx.TimeoutException:
        raise CommandError(
            f"No answer from {url} within {timeout:g} s{which}: the service would count this as "
            "a failed attempt."
        ) from None
    except httpx.HTTPError as exc:
        raise CommandError(
            f"Could not deliver to {url}{which} ({type(exc).__name__}: {printable(str(exc), 120)})."
        ) from None
    elapsed_ms = (time.perf_counter() - started) * 1000
    print(f"POST {url}  webhook-id {msg_id}  ({topic_label(topic)}, {len(body)} bytes)")
    print(f"-> {response.status_code} {response.reason_phrase} in {elapsed_ms:.0f} ms", flush=True)
    answer = response.content[:4096]
    text = answer.decode("utf-8", errors="replace")
    if text.strip():
        print(f"   answer: {printable(text, EXCERPT_CHARS)}", flush=True)
    return response.status_code, answer
