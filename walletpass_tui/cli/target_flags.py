"""The flags of the commands that send to the user's own app (``events replay``, ``check``, and
``listen``/the dashboard's forwarding): headers to add, and which certificates an https app may
present; and the :class:`TargetOptions` they build.

A header that cannot be sent as given is refused while the arguments are parsed (exit 2, with the
reason and never the value). The CA bundle is read when the command starts: a missing file or one
without a PEM certificate is a usage error (exit 2), one that cannot be read a failure (exit 1).
``--insecure`` warns once, on stderr, naming the https targets whose certificates go unverified.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import TextIO

from walletpass_tui.errors import UsageError
from walletpass_tui.webhooks.target_options import (
    HeaderError,
    TargetOptions,
    Trust,
    added_headers,
    insecure_warning,
    parse_header,
    read_ca_bundle,
)

__all__ = ["add_target_flags", "add_trust_flags", "header_arg", "target_options"]

HEADER_HELP = (
    "given twice, sent twice; webhook-*, Host, Content-Length, Transfer-Encoding, Connection and "
    "Content-Type cannot be given; the value is only ever shown masked"
)


def header_arg(text: str) -> str:
    """``'Name: value'``, checked now (refused with the reason, never the value)."""
    try:
        parse_header(text)
    except HeaderError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def add_trust_flags(group: argparse._ArgumentGroup, what: str) -> None:
    """``--ca-bundle FILE`` or ``--insecure`` (one of them), for the https ``what``."""
    either = group.add_mutually_exclusive_group()
    either.add_argument(
        "--ca-bundle",
        metavar="FILE",
        default=None,
        help=f"trust the CA certificates in FILE (PEM) for {what}, besides the usual public "
        "roots: your local app's own CA (mkcert -CAROOT shows where mkcert keeps it)",
    )
    either.add_argument(
        "--insecure",
        action="store_true",
        default=False,
        help=f"do not verify the certificates of {what} (a warning on stderr says so)",
    )


def add_target_flags(parser: argparse.ArgumentParser, what: str = "URL") -> None:
    """``--header`` (repeatable), ``--ca-bundle``, ``--insecure``: for ``events replay`` and
    ``check``."""
    group = parser.add_argument_group("your app (headers, certificates)")
    group.add_argument(
        "-H",
        "--header",
        action="append",
        type=header_arg,
        default=[],
        metavar="'NAME: VALUE'",
        help=f'add this header to what is sent to {what}, e.g. "Authorization: Bearer '
        f'$APP_TOKEN" for your app (repeatable; {HEADER_HELP})',
    )
    add_trust_flags(group, f"an https {what}")


def target_options(
    args: argparse.Namespace,
    targets: Iterable[str],
    *,
    header_flag: str = "--header",
    err: TextIO | None = None,
) -> TargetOptions:
    """What ``args`` add to the requests to ``targets``: the headers (of ``header_flag``) and
    the certificates to trust, the CA bundle read now. Prints the ``--insecure`` warning (once:
    call this once per command)."""
    texts = getattr(args, header_flag.lstrip("-").replace("-", "_"), None) or []
    headers = added_headers(texts, header_flag)
    ca_bundle = getattr(args, "ca_bundle", None)
    insecure = bool(getattr(args, "insecure", False))
    if ca_bundle and insecure:
        raise UsageError("Give --ca-bundle or --insecure, not both.")
    trust = read_ca_bundle(ca_bundle) if ca_bundle else Trust(insecure=insecure)
    warning = insecure_warning(trust, targets)
    if warning:
        print(warning, file=err or sys.stderr, flush=True)
    return TargetOptions(headers=headers, trust=trust)
