"""Commands around the simulated service: ``sim serve|emit|endpoint|deliveries|deliver`` and ``trigger``.

``sim serve`` runs the simulator on its own; ``sim emit`` and ``sim endpoint`` drive it over its
control API; ``sim deliver`` runs one message through the service's full retry schedule against any
receiver; ``trigger`` signs and sends a single webhook.

This package registers the commands; each module runs one group: ``serve``, ``control``
(emit, endpoint, deliveries) and ``deliver`` (deliver, trigger), with ``checks`` shared.
"""

from __future__ import annotations

import argparse

from walletpass_tui.api.topics import TOPICS
from walletpass_tui.cli.common import bounded_float, bounded_int, topic_arg
from walletpass_tui.cli.secret_flags import add_secret_flags
from walletpass_tui.cli.sim_cmd.checks import DEFAULT_SIM_PORT, assignment_arg
from walletpass_tui.cli.sim_cmd.control import (
    cmd_sim_deliveries,
    cmd_sim_emit,
    cmd_sim_endpoint,
    cmd_sim_endpoint_list,
)
from walletpass_tui.cli.sim_cmd.deliver import cmd_sim_deliver, cmd_trigger
from walletpass_tui.cli.sim_cmd.serve import cmd_sim_serve
from walletpass_tui.config import ENV_API_KEY, ENV_BASE_URL
from walletpass_tui.sim.engine import ANSWER_DEADLINE_S
from walletpass_tui.sim.http_api import CONTROL_PREFIX

# The examples name one key for 'sim serve' and the commands that drive it, so they run as shown.
EXAMPLE_KEY = "sk_sim_local"
SIM_EXAMPLE_FLAGS = f"--sim http://127.0.0.1:{DEFAULT_SIM_PORT} --api-key {EXAMPLE_KEY}"


def register(sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    sim = sub.add_parser(
        "sim",
        parents=parents,
        help="run or drive the simulated Wallet Pass Service",
        description="A simulated Wallet Pass Service on your machine: the two API calls, events and "
        "deliveries on the service's retry schedule (time-scalable). Serve it, then point the "
        "client at it, register an endpoint and emit events.",
        epilog="examples (one key for the simulator and the commands that drive it):\n"
        f"  walletpass-tui sim serve --port {DEFAULT_SIM_PORT} --time-scale 0.001 --api-key {EXAMPLE_KEY}\n"
        f"  walletpass-tui sim emit pass.activated --sim http://127.0.0.1:{DEFAULT_SIM_PORT} "
        f"--api-key {EXAMPLE_KEY}",
    )
    sim_sub = sim.add_subparsers(dest="sim_command", metavar="ACTION", required=True)

    _register_serve(sim_sub, parents)
    _register_emit(sim_sub, parents)
    _register_endpoint(sim_sub, parents)
    _register_deliveries(sim_sub, parents)
    _register_deliver(sim_sub, parents)
    _register_trigger(sub, parents)


def _register_serve(
    sim_sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    serve = sim_sub.add_parser(
        "serve",
        parents=parents,
        help="run the simulated service until Ctrl-C",
        description="Serve GET /api/v0/passTemplates, POST /v0/webhookEndpoints and the control API "
        f"({CONTROL_PREFIX}) on one port, deliver emitted events to the registered endpoints and "
        "print every delivery attempt. Without --api-key a simulator key (sk_sim_...) is made up, "
        "or reused from WALLETPASS_API_KEY when that holds one.",
        epilog=f"example: walletpass-tui sim serve --port {DEFAULT_SIM_PORT} --time-scale 0.001 "
        f"--api-key {EXAMPLE_KEY}",
    )
    serve.add_argument(
        "--host", dest="sim_host", default="127.0.0.1", help="address (default 127.0.0.1)"
    )
    serve.add_argument(
        "--port",
        dest="sim_port",
        type=bounded_int(0, 65535),
        default=DEFAULT_SIM_PORT,
        help=f"port (default {DEFAULT_SIM_PORT}; 0 picks a free one)",
    )
    _add_time_scale(serve, "1")
    serve.set_defaults(handler=cmd_sim_serve)


def _register_emit(
    sim_sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    emit = sim_sub.add_parser(
        "emit",
        parents=parents,
        help="make the simulator emit an event (or a fixture's events, in order)",
        description="Emit an event: the simulator POSTs it to every enabled endpoint subscribed to "
        "the topic. Without --body-file the simulator's kind of body is made up; --set changes "
        "one of its fields. --fixture emits a file's list of events in order (see docs/simulator.md).",
        epilog="examples:\n"
        f"  walletpass-tui sim emit pass.activated {SIM_EXAMPLE_FLAGS}\n"
        f"  walletpass-tui sim emit activated --set data.passId=pass_1 {SIM_EXAMPLE_FLAGS}\n"
        f"  walletpass-tui sim emit --fixture events.json {SIM_EXAMPLE_FLAGS}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    emit.add_argument("topic", metavar="TOPIC", type=topic_arg, nargs="?", help=" or ".join(TOPICS))
    _add_sim_flag(emit)
    emit.add_argument(
        "--body-file", metavar="FILE", help="JSON file to send as the body ('-' for stdin)"
    )
    _add_body_edit_flags(emit)
    emit.add_argument("--json", action="store_true", help="print the simulator's answer as JSON")
    emit.set_defaults(handler=cmd_sim_emit)


def _register_endpoint(
    sim_sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    endpoint = sim_sub.add_parser(
        "endpoint",
        parents=parents,
        help="enable, disable, remove or list the simulator's endpoints",
        description="Change an endpoint in the simulator. Disabling or removing it stops its "
        "deliveries, retries already scheduled included.",
        epilog=f"example: walletpass-tui sim endpoint disable ep_abc123 {SIM_EXAMPLE_FLAGS}",
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
            epilog=f"example: walletpass-tui sim endpoint {action} ep_abc123 {SIM_EXAMPLE_FLAGS}",
        )
        p.add_argument("endpoint_id", metavar="ID", help="the endpoint's id (ep_...)")
        _add_sim_flag(p)
        p.set_defaults(handler=cmd_sim_endpoint, sim_action=action)
    lst = ep_sub.add_parser(
        "list",
        parents=parents,
        help="the simulator's endpoints (secrets masked)",
        epilog=f"example: walletpass-tui sim endpoint list {SIM_EXAMPLE_FLAGS} --json",
    )
    _add_sim_flag(lst)
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(handler=cmd_sim_endpoint_list)


def _register_deliveries(
    sim_sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    deliveries = sim_sub.add_parser(
        "deliveries",
        parents=parents,
        help="the simulator's delivery attempts",
        description="Every delivery attempt the simulator made: endpoint, message, attempt number, "
        "service-time offset, the receiver's answer and the wait before the next attempt.",
        epilog=f"example: walletpass-tui sim deliveries {SIM_EXAMPLE_FLAGS} --endpoint ep_abc123",
    )
    _add_sim_flag(deliveries)
    deliveries.add_argument("--endpoint", metavar="ID", help="only this endpoint's attempts")
    deliveries.add_argument("--message", metavar="ID", help="only this message's attempts")
    deliveries.add_argument("--json", action="store_true", help="print a JSON array")
    deliveries.set_defaults(handler=cmd_sim_deliveries)


def _register_deliver(
    sim_sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    deliver = sim_sub.add_parser(
        "deliver",
        parents=parents,
        help="send one message through the full retry schedule to any receiver",
        description="Deliver one message to --to as the service would: up to 8 attempts with waits "
        "of 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h, a 2xx within 15 s counting as success. "
        "Each attempt is printed with its offset in service time. --time-scale shortens the waits "
        "(0.001 turns 5 minutes into 0.3 s) and the 15-s deadline (never below 1 s).",
        epilog='example: WALLETPASS_SECRET="$WEBHOOK_SECRET" walletpass-tui sim deliver '
        "--to http://127.0.0.1:8787/webhooks --time-scale 0.001",
    )
    _add_target_flags(deliver)
    deliver.add_argument(
        "--topic", type=topic_arg, default=TOPICS[0], help="the event's topic (default %(default)s)"
    )
    _add_time_scale(deliver, "1")
    deliver.set_defaults(handler=cmd_sim_deliver)


def _register_trigger(
    sub: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
) -> None:
    trigger = sub.add_parser(
        "trigger",
        parents=parents,
        help="sign and send one webhook (or a fixture's, in order) to a receiver",
        description="Send one signed webhook (Standard Webhooks headers, as the service would) to "
        "--to, or to the receiver running on this home (listen, the dashboard), signed with its "
        "test secret, and print the receiver's answer and how long it took. Exit status 0 on a 2xx "
        "answer, 1 otherwise. Without --body-file a plausible event body is made up; --set "
        "changes one of its fields. --fixture sends a file's list of events in order, each with "
        "its own webhook-id (exit 1 if any got no 2xx; see docs/simulator.md).",
        epilog="examples:\n"
        "  walletpass-tui trigger activated     # to 'walletpass-tui listen' in another shell\n"
        '  WALLETPASS_SECRET="$WEBHOOK_SECRET" walletpass-tui trigger pass.activated '
        "--to http://127.0.0.1:8787/webhooks\n"
        '  WALLETPASS_SECRET="$WEBHOOK_SECRET" walletpass-tui trigger activated '
        "--to http://127.0.0.1:8787/webhooks --set data.passId=pass_1\n"
        '  WALLETPASS_SECRET="$WEBHOOK_SECRET" walletpass-tui trigger --fixture events.json '
        "--to http://127.0.0.1:8787/webhooks",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    trigger.add_argument(
        "topic", metavar="TOPIC", type=topic_arg, nargs="?", help=" or ".join(TOPICS)
    )
    _add_target_flags(trigger)
    _add_body_edit_flags(trigger)
    trigger.add_argument(
        "--timeout",
        type=bounded_float(0, 3600),
        default=ANSWER_DEADLINE_S,
        help="seconds to wait for the answer (default %(default)g, the service's deadline)",
    )
    trigger.set_defaults(handler=cmd_trigger)


def _add_body_edit_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        type=assignment_arg,
        metavar="PATH=VALUE",
        help="change one field of the body (repeatable): data.passId=pass_1, data.tags[0]=x; "
        'VALUE is JSON where it parses (3, true, null, "3"), else text; with --body-file the '
        "file must be JSON",
    )
    parser.add_argument(
        "--fixture",
        metavar="FILE",
        help="send a JSON list of events in order, each a full body or "
        '{"topic": ..., "set": {PATH: VALUE}} (see docs/simulator.md)',
    )


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
    parser.add_argument(
        "--to",
        metavar="URL",
        help="the receiver's URL (default: the one running on this home, signed with its test "
        "secret)",
    )
    add_secret_flags(parser, what="the endpoint's signing secret (whsec_...)", many=False)
    parser.add_argument(
        "--body-file",
        metavar="FILE",
        help="send this file's bytes as the body, unchanged ('-' for stdin)",
    )
    parser.add_argument(
        "--id", dest="message_id", metavar="MSG_ID", help="the webhook-id (default: msg_ + random)"
    )
