"""The receiver's flags, shared by ``listen`` and the dashboard: where it listens, and how it
verifies, forwards, filters and fails deliveries. Argument definitions only, so the top-level
parser can offer them without importing the receiver; what they build is in
:mod:`walletpass_tui.cli.receiver_setup`."""

from __future__ import annotations

import argparse

from walletpass_tui.cli.common import bounded_float, bounded_int, forward_to_arg, url_arg
from walletpass_tui.cli.secret_flags import add_secret_flags
from walletpass_tui.cli.target_flags import HEADER_HELP, add_trust_flags, header_arg

MAX_BODY_LIMIT = 64 * 1024 * 1024  # the largest --max-body accepted
MAX_TOLERANCE_S = 7 * 86400


def add_receiver_flags(parser: argparse.ArgumentParser, *, suppress: bool = True) -> None:
    s = argparse.SUPPRESS
    group = parser.add_argument_group("receiver")
    group.add_argument("--host", default=s, help="address to listen on (default 127.0.0.1)")
    group.add_argument(
        "--port",
        type=bounded_int(0, 65535),
        default=s,
        help="port to listen on (default 8787; 0 picks a free one)",
    )
    group.add_argument("--path", default=s, help="path webhooks are posted to (default /webhooks)")
    group.add_argument(
        "--tunnel",
        choices=("cloudflared", "ngrok", "none"),
        default=s,
        help="a public HTTPS URL for the receiver: cloudflared (the program you installed) or "
        "ngrok (its agent SDK, the [ngrok] extra; NGROK_AUTHTOKEN); none: no tunnel, "
        "whatever [tunnel] provider says",
    )


def add_delivery_flags(parser: argparse.ArgumentParser) -> None:
    """Flags for verifying, forwarding, filtering and failing deliveries."""
    s = argparse.SUPPRESS
    ver = parser.add_argument_group("verification")
    add_secret_flags(
        ver,
        what="a signing secret to verify with, beside those of the endpoints known locally",
        many=True,
    )
    ver.add_argument(
        "--tolerance",
        type=bounded_int(0, MAX_TOLERANCE_S),
        default=s,
        metavar="SECONDS",
        help="timestamp tolerance (default 300)",
    )
    ver.add_argument(
        "--max-body",
        type=bounded_int(1, MAX_BODY_LIMIT),
        default=s,
        metavar="BYTES",
        help="largest body accepted (default 1 MiB)",
    )
    ver.add_argument(
        "--public-url",
        type=url_arg,
        default=s,
        metavar="URL",
        help="the tunnel's public URL, to show",
    )
    fwd = parser.add_argument_group("forwarding (to your app)")
    fwd.add_argument(
        "--forward-to",
        action="append",
        type=forward_to_arg,
        default=[],
        metavar="[TOPIC=]URL",
        help="forward each verified delivery, raw bytes and original signature, to URL "
        "(repeatable; TOPIC=URL forwards only that topic)",
    )
    fwd.add_argument(
        "--ack",
        choices=("stored", "target"),
        default="stored",
        help="stored (default): answer 200 once stored, forward after, queue while your app is "
        "down; target: answer with your app's status (within 10 s)",
    )
    fwd.add_argument(
        "-H",
        "--header",
        action="append",
        type=header_arg,
        default=[],
        metavar="'NAME: VALUE'",
        help='add this header to every forward, e.g. "Authorization: Bearer $APP_TOKEN" for '
        f"your app (repeatable; {HEADER_HELP})",
    )
    fwd.add_argument(  # the name it had: kept working, not shown
        "--forward-header",
        dest="header",
        action="append",
        type=header_arg,
        help=argparse.SUPPRESS,
    )
    add_trust_flags(fwd, "https --forward-to targets")
    src = parser.add_argument_group("sources")
    src.add_argument(
        "--allow-source",
        action="append",
        default=[],
        metavar="CIDR|service",
        help="accept only these client addresses ('service' = the service's published ones); "
        "others get 403",
    )
    src.add_argument(
        "--trust-proxy",
        action="append",
        default=None,
        metavar="CIDR",
        help="peers whose X-Forwarded-For is believed (default: loopback, where tunnels connect)",
    )
    relay = parser.add_argument_group("relay (deliveries through your own relay, no tunnel)")
    relay.add_argument(
        "--relay",
        type=url_arg,
        default=None,
        metavar="SUBSCRIBE_URL",
        help="also receive a relay channel's deliveries (from 'relay channel add'); verified, "
        "stored and forwarded as if posted here, resumed after the last one stored",
    )
    relay.add_argument(
        "--relay-token",
        default=None,
        metavar="TOKEN",
        help="the channel's subscriber token; prefer WALLETPASS_RELAY_TOKEN or relay_token in "
        "the config file (a flag shows in the process list)",
    )
    schemas = parser.add_argument_group("payload schemas")
    schemas.add_argument(
        "--no-schemas",
        action="store_true",
        help="do not learn each topic's payload schema nor look for drift (see 'walletpass-tui "
        "schema --help')",
    )
    inj = parser.add_argument_group("failure injection (to watch the sender's retries)")
    inj.add_argument(
        "--fail-first",
        type=bounded_int(0, 1000),
        default=0,
        metavar="N",
        help="answer 500 to the first N attempts of each message",
    )
    inj.add_argument(
        "--respond",
        type=bounded_int(200, 599),  # a final status; Injection holds the rule
        default=None,
        metavar="STATUS",
        help="answer every verified delivery with STATUS (200 to 599; 204, 205 and 304 without "
        "a body)",
    )
    inj.add_argument(
        "--delay",
        type=bounded_float(0, 60, low_inclusive=True),
        default=0.0,
        metavar="SECONDS",
        help="wait before answering",
    )
