"""What an attached dashboard heard of the receiver's ``--forward-to`` targets (``TargetNote``
in ``control.py``): the headers ``listen --header`` adds to them, ``--insecure``, and where
their ``--ca-bundle`` is, so that a replay or check the dashboard sends there carries the same.

What arrives is checked as ``listen`` checks its own flags (a header by ``parse_header``: a
token name, no ``webhook-*`` or hop-by-hop header, an ASCII value without control characters),
bounded in count (``MAX_TARGETS`` targets, ``ADDED_HEADERS_MAX`` headers each), every value kept
out of the debug log; anything else is left out, and said in the log. The CA bundle is read
when first needed, as a private file is (a regular file, at most ``CA_BUNDLE_MAX`` bytes, never
waited on).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from walletpass_tui import logs
from walletpass_tui.errors import WalletpassError
from walletpass_tui.private_files import read_private_file
from walletpass_tui.runtime.control import MAX_TARGETS, bounded_text
from walletpass_tui.webhooks.target_options import (
    ADDED_HEADERS_MAX,
    CA_BUNDLE_MAX,
    HeaderError,
    TargetOptions,
    Trust,
    ca_bundle_trust,
    parse_header,
)

log = logging.getLogger(__name__)

PATH_MAX = 4096  # a CA bundle's path


@dataclass
class _Heard:
    insecure: bool = False
    ca_file: str | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    trust: Trust | None = None  # read from ca_file when first asked


class TargetsHeard:
    """The forward targets' options told by one receiver; ``take`` each ``target`` and
    ``header`` message, ``options(target)`` when sending there."""

    def __init__(self) -> None:
        self._targets: dict[str, _Heard] = {}

    def clear(self) -> None:
        """Forget them (another receiver, or the same one started again, tells its own)."""
        self._targets.clear()

    def take(self, message: dict[str, Any]) -> None:
        target = bounded_text(message.get("target"))
        if not target:
            log.info("attached: a target message without a target, left out")
            return
        if message.get("type") == "target":
            if target not in self._targets and len(self._targets) >= MAX_TARGETS:
                log.info(
                    "attached: more than %d forward targets told, the rest left out", MAX_TARGETS
                )
                return
            path = message.get("ca_file")
            self._targets[target] = _Heard(
                insecure=message.get("insecure") is True,
                ca_file=path if isinstance(path, str) and 0 < len(path) <= PATH_MAX else None,
            )
            return
        heard = self._targets.get(target)
        name, value = message.get("name"), message.get("value")
        if heard is None or not isinstance(name, str) or not isinstance(value, str):
            log.info("attached: a header told for no known target, or not text, left out")
            return
        if len(heard.headers) >= ADDED_HEADERS_MAX:
            log.info("attached: more than %d headers told for one target", ADDED_HEADERS_MAX)
            return
        try:
            checked = parse_header(f"{name}: {value}")
        except HeaderError as exc:  # said in the log (the error never holds the value)
            log.info("attached: a header told by the receiver is left out: %s", exc)
            return
        logs.redact(checked[1])
        heard.headers.append(checked)

    def options(self, target: str) -> TargetOptions:
        """What a request to ``target`` carries: as listen's forwards there do, else nothing."""
        heard = self._targets.get(target)
        if heard is None:
            return TargetOptions()
        if heard.trust is None:
            heard.trust = self._trust(heard)
        return TargetOptions(headers=tuple(heard.headers), trust=heard.trust)

    @staticmethod
    def _trust(heard: _Heard) -> Trust:
        if heard.insecure:
            return Trust(insecure=True)
        if heard.ca_file is None:
            return Trust()
        try:
            data = read_private_file(heard.ca_file, CA_BUNDLE_MAX)
            return ca_bundle_trust(data, heard.ca_file)
        except (OSError, WalletpassError) as exc:
            # the usual roots then: an https app of a CA of its own fails the check, which says so
            log.warning("attached: the receiver's --ca-bundle cannot be read: %s", exc)
            return Trust()
