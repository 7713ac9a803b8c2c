"""``sim emit|endpoint|deliveries``: drive a running simulator over its control API."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

import httpx

from walletpass_tui.cli.common import CommandError, print_json, print_table, settings_from_args
from walletpass_tui.cli.sim_cmd.checks import (
    DEFAULT_SIM_PORT,
    EXCERPT_CHARS,
    USER_AGENT,
    body_document,
    fixture_events,
)
from walletpass_tui.config import ENV_API_KEY, ENV_BASE_URL
from walletpass_tui.sim.endpoints import url_problem
from walletpass_tui.sim.engine import (
    format_wait,
)
from walletpass_tui.sim.http_api import CONTROL_PREFIX
from walletpass_tui.text import printable


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
    except ValueError:  # not JSON: the status line says what failed
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
    events = fixture_events(args, need_topic=True)
    if events is None:
        payload: dict[str, Any] = {"topic": args.topic}
        if args.body_file or args.sets:
            payload["body"] = body_document(args, args.topic)
        payloads = [payload]
    else:
        payloads = [
            {"topic": event.topic, "body": event.document(datetime.now(UTC))} for event in events
        ]
    answers = []
    for payload in payloads:
        data = _call(args, "POST", "/events", payload)
        answers.append(data)
        if not args.json:
            _print_emitted(data, payload["topic"])
    if args.json:
        print_json(answers if events is not None else answers[0])
    return 0


def _print_emitted(data: Any, topic: str) -> None:
    endpoints = data.get("endpoints") or []
    if endpoints:
        print(
            f"Emitted {data.get('messageId')} ({topic}) to {len(endpoints)} endpoint(s): "
            f"{', '.join(endpoints)}",
            flush=True,
        )
    else:
        print(
            f"Emitted {data.get('messageId')} ({topic}); no enabled endpoint subscribes to it, "
            "so nothing is delivered.",
            flush=True,
        )


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
