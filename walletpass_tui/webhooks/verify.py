"""Webhook signatures: verify a delivery and say precisely why it was rejected; sign for replay.

Pure functions over the ``standardwebhooks`` package, working around what it cannot do for us:

* ``Webhook.verify`` decodes the body as strict UTF-8, so a valid signature over non-UTF-8 bytes would
  fail there. We compute the HMAC over the raw bytes with the package's ``hmac_data``.
* Its tolerance is fixed at 300 s; ours is a parameter, checked into the past and the future.
* A malformed entry in ``webhook-signature`` makes it raise a bare ``ValueError``/``binascii.Error``
  and stop looking; we read a malformed ``v1`` entry as a ``v1`` signature that matches nothing, so
  it never hides a valid entry and ``v1,!!!`` alone is "no signature matches", not "no v1
  signature".
* Its ``sign`` treats a naive datetime as UTC and *replaces* the zone of an aware one; we always pass
  an aware UTC time.
* It decodes secrets leniently (bad base64 is accepted); ``parse_secret`` rejects them with a clear
  message, for secrets a user configures.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from multidict import CIMultiDict, CIMultiDictProxy
from standardwebhooks.webhooks import Webhook, hmac_data

from walletpass_tui.errors import WalletpassError
from walletpass_tui.text import parse_ascii_int
from walletpass_tui.webhooks.reasons import Reason

__all__ = [
    "SecretError",
    "SigningKey",
    "Verdict",
    "compute_signature",
    "parse_secret",
    "sign",
    "verify",
]

SECRET_PREFIX = "whsec_"
HEADER_ID = "webhook-id"
HEADER_TIMESTAMP = "webhook-timestamp"
HEADER_SIGNATURE = "webhook-signature"
REQUIRED_HEADERS = (HEADER_ID, HEADER_TIMESTAMP, HEADER_SIGNATURE)
_CASE_INSENSITIVE = (CIMultiDictProxy, CIMultiDict)


class SecretError(WalletpassError, ValueError):
    """A configured signing secret is not usable; the message says why."""


def parse_secret(secret: str) -> bytes:
    """The key bytes of a ``whsec_`` secret, strictly decoded.

    Spec section 5: drop the prefix up to and including the first underscore, base64-decode the rest.
    """
    text = secret.strip()
    stray = _stray_character(text)
    if stray is not None:
        raise SecretError(stray)
    if not text.startswith(SECRET_PREFIX):
        raise SecretError("A signing secret starts with whsec_ followed by base64 text.")
    body = text[len(SECRET_PREFIX) :]
    if not body:
        raise SecretError("The signing secret has nothing after whsec_.")
    padded = body + "=" * (-len(body) % 4)
    try:
        key = base64.b64decode(padded, validate=True)
    except (binascii.Error, ValueError):
        raise SecretError(
            "The signing secret is not valid base64 after whsec_; copy it again from where the "
            "endpoint was created."
        ) from None
    if not key:
        raise SecretError("The signing secret decodes to an empty key.")
    return key


def _stray_character(text: str) -> str | None:
    """A sentence naming the first character of ``text`` that no secret holds (anything but
    printable ASCII: a byte order mark, a zero-width or no-break space copied along), or None. The
    character is named by its code point: it may be invisible, and it is not part of the key."""
    for index, char in enumerate(text):
        if not (char.isascii() and char.isprintable()):
            import unicodedata

            name = unicodedata.name(char, "")
            if char == "\ufeff":
                name = "a byte order mark"
            elif unicodedata.category(char) == "Cc":
                name = "a control character"
            where = "starts with" if index == 0 else f"holds, at character {index + 1},"
            named = f"U+{ord(char):04X}" + (f" ({name.lower()})" if name else "")
            return (
                f"The signing secret {where} {named}, which is not part of any secret: remove it "
                "(copy the secret again as plain text)."
            )
    return None


@dataclass(frozen=True)
class SigningKey:
    """A secret to verify with, and the endpoint it belongs to (None for a bare ``--secret``)."""

    key: bytes = field(repr=False)  # the secret itself: never in a repr, a log or a traceback
    endpoint_id: str | None = None
    label: str = ""

    @classmethod
    def from_secret(cls, secret: str, endpoint_id: str | None = None) -> SigningKey:
        return cls(key=parse_secret(secret), endpoint_id=endpoint_id, label=endpoint_id or "")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: Reason
    detail: str = ""
    matched: SigningKey | None = None

    @property
    def status(self) -> int:
        return self.reason.status

    @property
    def text(self) -> str:
        return f"{self.reason.value}: {self.detail}" if self.detail else self.reason.value

    @property
    def endpoint_id(self) -> str | None:
        return self.matched.endpoint_id if self.matched else None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    if isinstance(headers, _CASE_INSENSITIVE):  # a request's headers: one lookup, no scan
        return headers.get(name)
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def signed_content(msg_id: str, timestamp: str, body: bytes) -> bytes:
    return f"{msg_id}.{timestamp}.".encode() + body


def compute_signature(key: bytes, msg_id: str, timestamp: str, body: bytes) -> str:
    """The ``v1,<base64>`` entry for this message."""
    digest = hmac_data(key, signed_content(msg_id, timestamp, body))
    return "v1," + base64.b64encode(digest).decode("ascii")


def _v1_signatures(header: str) -> tuple[int, list[bytes]]:
    """(how many ``v1`` entries there are, the decoded ones).

    Entries of other versions are skipped; a ``v1`` entry whose value is empty or not base64 counts
    as a ``v1`` entry that matches nothing.
    """
    entries = 0
    found: list[bytes] = []
    for entry in header.split(" "):
        version, _, value = entry.partition(",")
        if version != "v1":
            continue
        entries += 1
        if not value:
            continue
        try:
            found.append(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):  # not base64: not a signature, the next one is tried
            continue
    return entries, found


def verify(
    headers: Mapping[str, str],
    body: bytes,
    keys: Sequence[SigningKey],
    *,
    now: datetime,
    tolerance_s: float = 300,
) -> Verdict:
    """Check one delivery against every key; the first that matches is recorded.

    ``now`` must be aware: a naive datetime would be read as local time and shift the window.
    """
    if now.tzinfo is None:
        raise ValueError("verify() needs an aware datetime for now")
    msg_id = _header(headers, HEADER_ID) or ""
    ts_text = _header(headers, HEADER_TIMESTAMP) or ""
    sig_header = _header(headers, HEADER_SIGNATURE) or ""
    if not (msg_id and ts_text and sig_header):
        found = (msg_id, ts_text, sig_header)
        missing = [h for h, value in zip(REQUIRED_HEADERS, found, strict=True) if not value]
        return Verdict(False, Reason.MISSING_HEADERS, ", ".join(missing))
    ts_text = ts_text.strip()

    timestamp = parse_ascii_int(ts_text, max_digits=12)
    if timestamp is None:
        return Verdict(False, Reason.MALFORMED_TIMESTAMP, "expected whole seconds since the epoch")
    age = now.timestamp() - timestamp
    if age > tolerance_s:
        return Verdict(
            False, Reason.TIMESTAMP_TOO_OLD, f"{age:.0f} s old, tolerance {tolerance_s:g} s"
        )
    if -age > tolerance_s:
        return Verdict(
            False, Reason.TIMESTAMP_TOO_NEW, f"{-age:.0f} s ahead, tolerance {tolerance_s:g} s"
        )

    entries, candidates = _v1_signatures(sig_header)
    if not entries:
        return Verdict(False, Reason.NO_V1_SIGNATURE)
    if not keys:
        return Verdict(False, Reason.NO_SECRET, "add --secret or import the endpoint")
    content = signed_content(msg_id, ts_text, body)
    for key in keys:
        expected = hmac_data(key.key, content)
        # Compare against every candidate (no early exit on the first mismatch).
        if any(hmac.compare_digest(expected, sig) for sig in candidates):
            return Verdict(True, Reason.OK, matched=key)
    tried = len(keys)
    return Verdict(False, Reason.NO_MATCH, f"tried {tried} secret{'s' if tried != 1 else ''}")


def sign(secret: str, msg_id: str, body: bytes, when: datetime) -> dict[str, str]:
    """The three Standard Webhooks headers for ``body``, as the service would send them."""
    if when.tzinfo is None:
        raise ValueError("sign() needs an aware datetime")
    when = when.astimezone(UTC)
    key = parse_secret(secret)
    timestamp = str(int(when.timestamp()))
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:  # not UTF-8: signed as bytes
        signature = compute_signature(key, msg_id, timestamp, body)
    else:
        signature = Webhook(key).sign(msg_id, when, text)
    return {HEADER_ID: msg_id, HEADER_TIMESTAMP: timestamp, HEADER_SIGNATURE: signature}
