"""Commands around the simulated service: ``sim serve|emit|endpoint|deliveries|deliver`` and ``trigger``.

``sim serve`` runs the simulator on its own; ``sim emit`` and ``sim endpoint`` drive it over its
control API; ``sim deliver`` runs one message through the service's full retry schedule against any
receiver; ``trigger`` signs and sends a single webhook.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from datetime import UTC, datetime
from typing import Any

import httpx

from walletpass_tui import __version__
from walletpass_tui.api.models import TOPICS
from walletpass_tui.cli.common import (
    CommandError,
    bounded_float,
    print_json,
    print_table,
    printable,
    read_bounded_file,
    settings_from_args,
    topic_arg,
)
from walletpass_tui.config import DEFAULT_MAX_BODY, ENV_API_KEY, ENV_BASE_URL, ENV_REGISTRATION_URL
from walletpass_tui.sim.clock import check_time_scale
from walletpass_tui.sim.engine import (
    ANSWER_DEADLINE_S,
    RETRY_WAITS,
    Attempt,
    DeliveryEngine,
    DeliveryResult,
    Message,
    Target,
    format_wait,
)
from walletpass_tui.sim.events import event_body, message_id, new_api_key
from walletpass_tui.sim.service import CONTROL_PREFIX, SimError, SimulatedService, url_problem
from walletpass_tui.webhooks.verify import SecretError, parse_secret, sign

DEFAULT_SIM_PORT = 8788
EXCERPT_CHARS = 300
USER_AGENT = f"walletpass-tui/{__version__} (trigger)"


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    sim = sub.add_parser(
        "sim",
        parents=parents,
        help="run or drive the simulated Wallet Pass Service",
        description="A simulated Wallet Pass Service on your machine: the two API calls, events and "
        "deliveries on the service's retry schedule (time-scalable). Serve it, then point the "
        "client at it, register an endpoint and emit events.",
        epilog="example: walletpass-tui sim serve --time-scale 0.001",
    )
    sim_sub = sim.add_subparsers(dest="sim_command", metavar="ACTION", required=True)

    serve = sim_sub.add_parser(
        "serve",
        parents=parents,
        help="run the simulated service until Ctrl-C",
        description="Serve GET /api/v0/passTemplates, POST /v0/webhookEndpoints and the control API "
        f"({CONTROL_PREFIX}) on one port, deliver emitted events to the registered endpoints and "
        "print every delivery attempt. Without --api-key a simulator key (sk_sim_...) is made up, "
        "or reused from WALLETPASS_API_KEY when that holds one.",
        epilog="example: walletpass-tui sim serve --port 8788 --time-scale 0.001",
    )
    serve.add_argument(
        "--host", dest="sim_host", default="127.0.0.1", help="address (default 127.0.0.1)"
    )
    serve.add_argument(
        "--port",
        dest="sim_port",
        type=int,
        default=DEFAULT_SIM_PORT,
        help=f"port (default {DEFAULT_SIM_PORT}; 0 picks a free one)",
    )
    _add_time_scale(serve, "1")
    serve.set_defaults(handler=cmd_sim_serve)

    emit = sim_sub.add_parser(
        "emit",
        parents=parents,
        help="make the simulator emit an event",
        description="Emit an event: the simulator POSTs it to every enabled endpoint subscribed to "
        "the topic. Without --body-file the simulator makes up a plausible body.",
        epilog="example: walletpass-tui sim emit pass.activated --sim http://127.0.0.1:8788 "
        "--api-key sk_sim_...",
    )
    emit.add_argument("topic", metavar="TOPIC", type=topic_arg, help=" or ".join(TOPICS))
    _add_sim_flag(emit)
    emit.add_argument(
        "--body-file", metavar="FILE", help="JSON file to send as the body ('-' for stdin)"
    )
    emit.add_argument("--json", action="store_true", help="print the simulator's answer as JSON")
    emit.set_defaults(handler=cmd_sim_emit)

    endpoint = sim_sub.add_parser(
        "endpoint",
        parents=parents,
        help="enable, disable, remove or list the simulator's endpoints",
        description="Change an endpoint in the simulator. Disabling or removing it stops its "
        "deliveries, retries already scheduled included.",
        epilog="example: walletpass-tui sim endpoint disable ep_abc123 --sim http://127.0.0.1:8788",
    )
    ep_sub = endpoint.add_subparsers(dest="sim_endpoint_command", metavar="ACTION", required=True)
    for action, text in (
        ("enable", "enable an endpoint (new events are delivered to it again)"),
        ("disable", "disable an endpoint (its deliveries stop, scheduled retries included)"),
        ("remove", "remove an endpoint (its deliveries stop, scheduled retries included)"),
    ):
        p = ep_sub.add_parser(
            action,
            parents=parents,
            help=text,
            description=text[0].upper() + text[1:] + ".",
            epilog=f"example: walletpass-tui sim endpoint {action} ep_abc123 "
            "--sim http://127.0.0.1:8788",
        )
        p.add_argument("endpoint_id", metavar="ID", help="the endpoint's id (ep_...)")
        _add_sim_flag(p)
        p.set_defaults(handler=cmd_sim_endpoint, sim_action=action)
    lst = ep_sub.add_parser(
        "list",
        parents=parents,
        help="the simulator's endpoints (secrets masked)",
        epilog="example: walletpass-tui sim endpoint list --sim http://127.0.0.1:8788 --json",
    )
    _add_sim_flag(lst)
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(handler=cmd_sim_endpoint_list)

    deliveries = sim_sub.add_parser(
        "deliveries",
        parents=parents,
        help="the simulator's delivery attempts",
        description="Every delivery attempt the simulator made: endpoint, message, attempt number, "
        "service-time offset, the receiver's answer and the wait before the next attempt.",
        epilog="example: walletpass-tui sim deliveries --sim http://127.0.0.1:8788 --endpoint ep_abc",
    )
    _add_sim_flag(deliveries)
    deliveries.add_argument("--endpoint", metavar="ID", help="only this endpoint's attempts")
    deliveries.add_argument("--message", metavar="ID", help="only this message's attempts")
    deliveries.add_argument("--json", action="store_true", help="print a JSON array")
    deliveries.set_defaults(handler=cmd_sim_deliveries)

    deliver = sim_sub.add_parser(
        "deliver",
        parents=parents,
        help="send one message through the full retry schedule to any receiver",
        description="Deliver one message to --to as the service would: up to 8 attempts with waits "
        "of 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, a 2xx within 15 s counting as success. "
        "Each attempt is printed with its offset in service time. --time-scale shortens the waits "
        "(0.001 turns 5 minutes into 0.3 s) and the 15-s deadline (never below 1 s).",
        epilog="example: walletpass-tui sim deliver --to http://127.0.0.1:8787/webhooks "
        "--secret whsec_... --time-scale 0.001",
    )
    _add_target_flags(deliver)
    deliver.add_argument(
        "--topic", choices=TOPICS, default=TOPICS[0], help="the event's topic (default %(default)s)"
    )
    _add_time_scale(deliver, "1")
    deliver.set_defaults(handler=cmd_sim_deliver)

    trigger = sub.add_parser(
        "trigger",
        parents=parents,
        help="sign and send one webhook to a receiver",
        description="Send one signed webhook (Standard Webhooks headers, as the service would) to "
        "--to and print the receiver's answer and how long it took. Exit status 0 on a 2xx "
        "answer, 1 otherwise. Without --body-file a plausible event body is made up.",
        epilog="example: walletpass-tui trigger pass.activated --to http://127.0.0.1:8787/webhooks "
        "--secret whsec_...",
    )
    trigger.add_argument("topic", metavar="TOPIC", type=topic_arg, help=" or ".join(TOPICS))
    _add_target_flags(trigger)
    trigger.add_argument(
        "--timeout",
        type=bounded_float(0, 3600),
        default=ANSWER_DEADLINE_S,
        help="seconds to wait for the answer (default %(default)g, the service's deadline)",
    )
    trigger.set_defaults(handler=cmd_trigger)


def _add_time_scale(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--time-scale",
        metavar="F",
        default=default,
        help="multiply every retry wait and the 15-s deadline (min 1 s) by F; 0.001 turns 5 min "
        f"into 0.3 s (default {default})",
    )


def _add_sim_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sim",
        metavar="URL",
        dest="sim_url",
        help=f"the simulator's URL (default: the base URL, ${ENV_BASE_URL}); the key is --api-key "
        f"or ${ENV_API_KEY}",
    )


def _add_target_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--to", metavar="URL", required=True, help="the receiver's URL")
    parser.add_argument("--secret", required=True, help="the endpoint's signing secret (whsec_...)")
    parser.add_argument(
        "--body-file",
        metavar="FILE",
        help="send this file's bytes as the body, unchanged ('-' for stdin)",
    )
    parser.add_argument(
        "--id", dest="message_id", metavar="MSG_ID", help="the webhook-id (default: msg_ + random)"
    )


# -- input checks -----------------------------------------------------------------------------------


def _time_scale(text: str) -> float:
    try:
        return check_time_scale(float(text))
    except ValueError:
        raise CommandError(
            f"--time-scale must be a number above 0 (0.001 turns 5 minutes into 0.3 s), not {text!r}."
        ) from None


def _secret(text: str) -> str:
    try:
        parse_secret(text)
    except SecretError as exc:
        raise CommandError(str(exc)) from None
    return text.strip()


def _target_url(url: str) -> str:
    problem = url_problem(url.strip())
    if problem:
        raise CommandError(
            f"--to must be an http or https URL with a host, e.g. http://127.0.0.1:8787/webhooks "
            f"(got {printable(url, 80)!r})."
        )
    return url.strip()


def _message_id(text: str | None) -> str:
    if text is None:
        return message_id()
    if not text or not text.isascii() or not text.isprintable() or " " in text:
        raise CommandError("--id must be printable ASCII without spaces, e.g. msg_2KWPBgLlAfxd.")
    return text


def _read_body_file(path: str) -> bytes:
    return read_bounded_file(path, DEFAULT_MAX_BODY, what="The body file")


def _body(args: argparse.Namespace, topic: str) -> bytes:
    if args.body_file:
        return _read_body_file(args.body_file)
    body = event_body(topic, when=datetime.now(UTC))
    return json.dumps(body, separators=(",", ":")).encode()


def _scale_note(scale: float) -> str:
    if scale == 1:
        return "real time"
    return f"time scale {scale:g}: a 5-minute wait takes {300 * scale:g} s"


def _print_attempt(attempt: Attempt) -> None:
    print(attempt.describe(), flush=True)
    if not attempt.ok and attempt.response_excerpt:
        print(f"    answer: {printable(attempt.response_excerpt, EXCERPT_CHARS)}", flush=True)


# -- sim serve --------------------------------------------------------------------------------------


def cmd_sim_serve(args: argparse.Namespace) -> int:
    scale = _time_scale(args.time_scale)
    key, reused = _serve_key(args)
    if not 0 <= args.sim_port <= 65535:
        raise CommandError(f"--port must be between 0 and 65535, got {args.sim_port}.")
    try:
        asyncio.run(_serve(args.sim_host, args.sim_port, key, scale, reused))
    except KeyboardInterrupt:
        pass
    except SimError as exc:
        raise CommandError(str(exc)) from None
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
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    try:
        url = await service.start(host, port)
        _print_banner(url, key, scale, reused)
        await stop.wait()
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        await service.stop()
        logging.getLogger("walletpass_tui.sim").removeHandler(handler)


def _log_to_stdout() -> logging.Handler:
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%H:%M:%S"))
    logger = logging.getLogger("walletpass_tui.sim")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return handler


def _serve_printer(event: Attempt | DeliveryResult) -> None:
    stamp = datetime.now().strftime("%H:%M:%S")
    if isinstance(event, Attempt):
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
    print(f"Simulated Wallet Pass Service on {url} ({_scale_note(scale)})")
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


# -- control API commands ---------------------------------------------------------------------------


def _control(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    settings = settings_from_args(args)
    url = (args.sim_url or settings.base_url or "").rstrip("/")
    if not url:
        raise CommandError(
            f"Give the simulator's URL with --sim (or set {ENV_BASE_URL}), e.g. --sim "
            f"http://127.0.0.1:{DEFAULT_SIM_PORT}."
        )
    if url_problem(url):
        raise CommandError(f"--sim must be an http(s) URL with a host, got {printable(url, 80)!r}.")
    if not settings.api_key:
        raise CommandError(
            f"Give the simulator's API key with --api-key or {ENV_API_KEY} (sim serve prints it)."
        )
    headers = {
        "Authorization": f"Bearer {settings.api_key.reveal()}",
        "Accept": "application/json",
        "User-Agent": USER_AGENT,
    }
    return url, headers


def _call(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    base, headers = _control(args)
    url = base + CONTROL_PREFIX + path
    try:
        with httpx.Client(timeout=10.0, trust_env=False) as client:
            response = client.request(
                method, url, headers=headers, json=body if body is not None else None
            )
    except httpx.TimeoutException:
        raise CommandError(f"The simulator at {base} did not answer within 10 s.") from None
    except httpx.HTTPError as exc:
        raise CommandError(
            f"Could not reach the simulator at {base} ({type(exc).__name__}); is "
            "'walletpass-tui sim serve' running there?"
        ) from None
    try:
        data = response.json()
    except ValueError:
        data = None
    if response.status_code >= 400:
        message = None
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            message = data["error"].get("message")
        if response.status_code == 401:
            raise CommandError(
                f"The simulator at {base} refused the API key ({message or 'unauthorized'}); "
                "use the key 'sim serve' printed."
            )
        raise CommandError(
            f"The simulator answered {response.status_code}: "
            f"{printable(str(message or response.text), EXCERPT_CHARS)}"
        )
    if data is None:
        raise CommandError(f"The answer from {base} is not JSON; is it the simulator?")
    return data


def cmd_sim_emit(args: argparse.Namespace) -> int:
    payload: dict[str, Any] = {"topic": args.topic}
    if args.body_file:
        raw = _read_body_file(args.body_file)
        try:
            payload["body"] = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CommandError(
                f"The body file {args.body_file} is not valid JSON ({exc}); to send any bytes, "
                "use 'walletpass-tui trigger --body-file'."
            ) from None
    data = _call(args, "POST", "/events", payload)
    if args.json:
        print_json(data)
        return 0
    endpoints = data.get("endpoints") or []
    if endpoints:
        print(
            f"Emitted {data.get('messageId')} ({args.topic}) to {len(endpoints)} endpoint(s): "
            f"{', '.join(endpoints)}"
        )
    else:
        print(
            f"Emitted {data.get('messageId')} ({args.topic}); no enabled endpoint subscribes to it, "
            "so nothing is delivered."
        )
    return 0


def cmd_sim_endpoint(args: argparse.Namespace) -> int:
    ep_id = args.endpoint_id
    if args.sim_action == "remove":
        _call(args, "DELETE", f"/endpoints/{_path_id(ep_id)}")
        print(f"Removed {ep_id}; its deliveries stopped, scheduled retries included.")
        return 0
    _call(args, "POST", f"/endpoints/{_path_id(ep_id)}/{args.sim_action}")
    if args.sim_action == "enable":
        print(f"Enabled {ep_id}; new events are delivered to it.")
    else:
        print(f"Disabled {ep_id}; its deliveries stopped, scheduled retries included.")
    return 0


def _path_id(ep_id: str) -> str:
    if not ep_id or not all(c.isalnum() or c in "_-" for c in ep_id):
        raise CommandError(f"{printable(ep_id, 60)!r} is not an endpoint id (ep_ + letters).")
    return ep_id


def cmd_sim_endpoint_list(args: argparse.Namespace) -> int:
    endpoints = _call(args, "GET", "/endpoints").get("data", [])
    if args.json:
        print_json(endpoints)
        return 0
    if not endpoints:
        print(
            "The simulator has no endpoints; register one with 'walletpass-tui endpoints create'."
        )
        return 0
    rows = [
        [
            str(e.get("id")),
            printable(str(e.get("url")), 60),
            ",".join(e.get("enabledTopics") or []),
            "on" if e.get("enabled") else "off",
            str(e.get("createdAt")),
            str(e.get("secret")),
        ]
        for e in endpoints
    ]
    print_table(rows, ["ID", "URL", "TOPICS", "ENABLED", "CREATED", "SECRET"])
    return 0


def cmd_sim_deliveries(args: argparse.Namespace) -> int:
    query = []
    if args.endpoint:
        query.append(f"endpointId={_path_id(args.endpoint)}")
    if args.message:
        query.append(f"messageId={_path_id(args.message)}")
    path = "/deliveries" + ("?" + "&".join(query) if query else "")
    attempts = _call(args, "GET", path).get("data", [])
    if args.json:
        print_json(attempts)
        return 0
    if not attempts:
        print("No delivery attempts yet.")
        return 0
    rows = []
    for a in attempts:
        outcome = str(a.get("status") if a.get("status") is not None else a.get("error"))
        wait = a.get("nextWaitSeconds")
        rows.append(
            [
                str(a.get("messageId")),
                str(a.get("endpointId")),
                f"{a.get('attempt')}/{a.get('maxAttempts')}",
                str(a.get("offset")),
                outcome,
                "-" if wait is None else format_wait(float(wait)),
            ]
        )
    print_table(rows, ["MESSAGE", "ENDPOINT", "ATTEMPT", "AT", "ANSWER", "NEXT IN"])
    return 0


# -- sim deliver ------------------------------------------------------------------------------------


def cmd_sim_deliver(args: argparse.Namespace) -> int:
    scale = _time_scale(args.time_scale)
    url = _target_url(args.to)
    secret = _secret(args.secret)
    msg_id = _message_id(args.message_id)
    body = _body(args, args.topic)
    message = Message(id=msg_id, topic=args.topic, body=body)
    print(
        f"Delivering {msg_id} ({args.topic}, {len(body)} bytes) to {url}: up to "
        f"{len(RETRY_WAITS)} attempts ({_scale_note(scale)}).",
        flush=True,
    )
    result = asyncio.run(_deliver(url, secret, message, scale))
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
    engine.subscribe(lambda e: _print_attempt(e) if isinstance(e, Attempt) else None)
    try:
        delivery = engine.deliver(Target(url, secret), message)
        return await delivery.wait()
    finally:
        await engine.aclose()


# -- trigger ----------------------------------------------------------------------------------------


def cmd_trigger(args: argparse.Namespace) -> int:
    url = _target_url(args.to)
    secret = _secret(args.secret)
    msg_id = _message_id(args.message_id)
    if not 0 < args.timeout <= 3600:
        raise CommandError(f"--timeout must be between 0 and 3600 seconds, got {args.timeout:g}.")
    body = _body(args, args.topic)
    headers = sign(secret, msg_id, body, datetime.now(UTC))
    headers["Content-Type"] = "application/json"
    headers["User-Agent"] = USER_AGENT
    started = time.perf_counter()
    try:
        with httpx.Client(timeout=args.timeout, trust_env=False, follow_redirects=False) as client:
            response = client.post(url, content=body, headers=headers)
    except httpx.TimeoutException:
        raise CommandError(
            f"No answer from {url} within {args.timeout:g} s: the service would count this as a "
            "failed attempt."
        ) from None
    except httpx.HTTPError as exc:
        raise CommandError(
            f"Could not deliver to {url} ({type(exc).__name__}: {printable(str(exc), 120)})."
        ) from None
    elapsed_ms = (time.perf_counter() - started) * 1000
    print(f"POST {url}  webhook-id {msg_id}  ({args.topic}, {len(body)} bytes)")
    print(f"-> {response.status_code} {response.reason_phrase} in {elapsed_ms:.0f} ms")
    text = response.content[:4096].decode("utf-8", errors="replace")
    if text.strip():
        print(f"   answer: {printable(text, EXCERPT_CHARS)}")
    if 200 <= response.status_code <= 299:
        return 0
    raise CommandError(
        f"The receiver answered {response.status_code}, not 2xx: the service would count this as "
        f"a failed attempt and retry in {format_wait(RETRY_WAITS[1])}."
    )
