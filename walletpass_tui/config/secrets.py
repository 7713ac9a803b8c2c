"""How a secret is held and shown: ``Secret`` (never itself in ``str``, ``repr`` or f-strings)
and ``mask_secret`` (a label-like prefix and the last 4 characters at most)."""

from __future__ import annotations

import re

_LABEL_PREFIX = re.compile(r"^([A-Za-z]{1,8}_){1,3}")
_LABEL_MAX = 12


def mask_secret(value: str | None) -> str:
    """Show at most a label-like prefix (``wp_live_``, ``whsec_``) and the last 4 characters."""
    if not value:
        return "(not set)"
    prefix_match = _LABEL_PREFIX.match(value)
    prefix = prefix_match.group(0) if prefix_match else ""
    if len(prefix) > _LABEL_MAX:
        prefix = ""  # too long to be a label: it may be part of the secret
    rest = value[len(prefix) :]
    if len(rest) < 12:
        # Too short to reveal anything of it safely; the label too unless most of it stays hidden.
        return f"{prefix}…" if len(rest) >= max(8, len(prefix)) else "…"
    return f"{prefix}…{rest[-4:]}"


class Secret:
    """A string that never shows itself in ``str``, ``repr`` or f-strings."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    @property
    def masked(self) -> str:
        return mask_secret(self._value)

    def __repr__(self) -> str:
        return f"Secret({self.masked!r})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)
