"""What goes to the user's own app besides the delivery: headers the user adds (the app's own
``Authorization``, say) and the certificates an https app may present.

Forwards (``listen --header``), replays and the check (``--header``) add headers the same
way, and trust certificates the same way (``--ca-bundle FILE``, ``--insecure``):

* An added header goes out after the request's own headers; one given twice goes out twice. A name
  must be an HTTP token; a value is ASCII and holds no CR, LF, NUL or other control character but
  the tab, which RFC 9110 allows inside a field value. The
  delivery's ``webhook-*`` headers (its signature covers them), its ``Content-Type`` and
  ``Content-Encoding``, and what the HTTP client writes from the URL and the body (``Host``,
  ``Content-Length``, ``Transfer-Encoding``, ``Connection`` and the other hop-by-hop headers) are
  refused: none of them is ever replaced. An added ``User-Agent`` replaces walletpass-tui's own.
* A value may hold a secret: it is shown only masked (:func:`shown`).
* ``--ca-bundle FILE`` is read once, at start (bounded, PEM certificates only); its certificates are
  trusted in addition to the usual public roots. ``--insecure`` verifies no certificate.

Light on purpose: the argument parsers check headers with it; ``ssl`` and httpx load only when a
client is built.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from walletpass_tui.config.secrets import mask_secret
from walletpass_tui.errors import UsageError, WalletpassError
from walletpass_tui.text import printable

if TYPE_CHECKING:
    import ssl

__all__ = [
    "ADDED_HEADERS_MAX",
    "CA_BUNDLE_MAX",
    "HEADER_NAME_MAX",
    "HEADER_VALUE_MAX",
    "HeaderError",
    "TargetOptions",
    "Trust",
    "added_headers",
    "ca_bundle_trust",
    "insecure_warning",
    "masked_value",
    "parse_header",
    "read_ca_bundle",
    "shown",
    "with_added",
]

ADDED_HEADERS_MAX = 32
HEADER_VALUE_MAX = 4096
HEADER_NAME_MAX = 256
CA_BUNDLE_MAX = 4 * 1024 * 1024  # a whole public root store is under half a MiB

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,19}")
_PEM_CERT = re.compile(
    rb"-----BEGIN CERTIFICATE-----\r?\n[A-Za-z0-9+/=\r\n\t ]*?-----END CERTIFICATE-----"
)
_CLIENT_WRITES = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "expect",
    }
)
_THE_BODYS_OWN = frozenset({"content-type", "content-encoding"})


class HeaderError(UsageError, ValueError):
    """A header that cannot be added; the message says why (the value is never in it)."""


def parse_header(text: str) -> tuple[str, str]:
    """``'Name: value'`` -> ``(name, value)``, the value without surrounding blanks; HeaderError
    when it cannot be sent as given."""
    name, sep, value = text.partition(":")
    if not sep:
        # No colon: the text may be the secret itself, so it is not repeated.
        raise HeaderError("a header is given as 'Name: value' (no ':' found).")
    name = name.strip(" \t")
    shown_name = printable(name, 60)
    if len(name) > HEADER_NAME_MAX:
        raise HeaderError(f"a header name is longer than {HEADER_NAME_MAX} characters.")
    if not name or not _TOKEN.fullmatch(name):
        raise HeaderError(
            f"{shown_name!r} is not a header name: use letters, digits and !#$%&'*+-.^_`|~ only."
        )
    lower = name.lower()
    if lower.startswith("webhook-"):
        raise HeaderError(
            f"{shown_name!r} is one of the delivery's own webhook-* headers, which its signature "
            "covers: they are sent as they are and never replaced or added to."
        )
    if lower in _CLIENT_WRITES:
        raise HeaderError(
            f"{shown_name!r} is written by the HTTP client from the URL and the body (Host, "
            "Content-Length, Transfer-Encoding, Connection and the other hop-by-hop headers "
            "cannot be given)."
        )
    if lower in _THE_BODYS_OWN:
        raise HeaderError(
            f"{shown_name!r} is the body's own header, sent as the delivery has it; it cannot be "
            "given."
        )
    value = value.strip(" \t")
    if any(ch in value for ch in "\r\n\x00"):
        raise HeaderError(
            f"the value of {shown_name!r} holds a CR, LF or NUL, which would end the header "
            "early or start another one; remove it."
        )
    if any((ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F for ch in value):
        raise HeaderError(f"the value of {shown_name!r} holds a control character; remove it.")
    if not value.isascii():
        raise HeaderError(
            f"the value of {shown_name!r} holds non-ASCII characters; give it in ASCII."
        )
    if len(value) > HEADER_VALUE_MAX:
        raise HeaderError(
            f"the value of {shown_name!r} is longer than {HEADER_VALUE_MAX} characters."
        )
    return name, value


def added_headers(
    texts: Iterable[str] | None, flag: str = "--header"
) -> tuple[tuple[str, str], ...]:
    """The headers ``texts`` (each 'Name: value') name, in order; UsageError past the limit."""
    headers = tuple(parse_header(t) for t in texts or ())
    if len(headers) > ADDED_HEADERS_MAX:
        raise UsageError(f"{flag} is given {len(headers)} times; at most {ADDED_HEADERS_MAX}.")
    return headers


def masked_value(value: str) -> str:
    """A header value as it may be shown: an auth scheme kept (``Bearer``), the rest masked."""
    scheme, sep, rest = value.partition(" ")
    if sep and rest.strip() and _SCHEME.fullmatch(scheme):
        return f"{scheme} {mask_secret(rest.strip())}"
    return mask_secret(value) if value else ""


def shown(headers: Sequence[tuple[str, str]]) -> str:
    """``Authorization: Bearer …cdef, X-Env: …``: the headers, every value masked."""
    return ", ".join(f"{printable(n, 60)}: {masked_value(v)}" for n, v in headers)


def with_added(
    headers: dict[str, str] | Sequence[tuple[str, str]], added: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The request's own headers, then the added ones; an added User-Agent replaces the own."""
    own = list(headers.items()) if isinstance(headers, dict) else list(headers)
    if any(name.lower() == "user-agent" for name, _ in added):
        own = [(n, v) for n, v in own if n.lower() != "user-agent"]
    return [*own, *added]


# -- certificates ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Trust:
    """Which certificates an https target may present: the usual public roots (the default),
    those plus the certificates of a CA bundle, or any (``insecure``)."""

    ca_pem: str | None = field(default=None, repr=False)  # the bundle's certificates, read at start
    ca_file: str | None = None  # where they were read from, to show
    insecure: bool = False

    def verify(self) -> ssl.SSLContext | bool:
        """httpx's ``verify``: True (the public roots), a context that adds the bundle, or False."""
        if self.insecure:
            return False
        if self.ca_pem is None:
            return True
        return _context(self.ca_pem)

    def describe(self) -> str | None:
        """How certificates are checked, when not the usual way."""
        if self.insecure:
            return "certificates not verified (--insecure)"
        if self.ca_file is not None:
            return f"trusting the CA in {printable(self.ca_file, 200)}"
        return None


def _context(pem: str) -> ssl.SSLContext:
    import httpx

    context = httpx.create_ssl_context(trust_env=False)  # the public roots httpx trusts
    context.load_verify_locations(cadata=pem)
    return context


def read_ca_bundle(path: str, flag: str = "--ca-bundle") -> Trust:
    """The PEM certificates of ``path``, read now (at most ``CA_BUNDLE_MAX`` bytes) and checked.

    UsageError (exit 2) for a file that is missing, too large or holds no certificate; a failure
    (exit 1) for one that exists but cannot be read.
    """
    where = printable(path, 200)
    try:
        with open(path, "rb") as fh:
            data = fh.read(CA_BUNDLE_MAX + 1)
    except (FileNotFoundError, NotADirectoryError):
        raise UsageError(
            f"{flag} {where}: no such file; give the PEM file of the CA that signed your app's "
            "certificate."
        ) from None
    except IsADirectoryError:
        raise UsageError(f"{flag} {where} is a directory; give a PEM file.") from None
    except OSError as exc:
        raise WalletpassError(f"Cannot read {flag} {where} ({exc.strerror or exc}).") from None
    if len(data) > CA_BUNDLE_MAX:
        raise UsageError(f"{flag} {where} is larger than {CA_BUNDLE_MAX // (1024 * 1024)} MiB.")
    return ca_bundle_trust(data, path, flag)


def ca_bundle_trust(data: bytes, path: str, flag: str = "--ca-bundle") -> Trust:
    """The PEM certificates in ``data`` (read from ``path``) as a Trust; UsageError for none, or
    one that cannot be read."""
    import ssl

    where = printable(path, 200)
    blocks = _PEM_CERT.findall(data)
    if not blocks:
        raise UsageError(
            f"{flag} {where} holds no PEM certificate (-----BEGIN CERTIFICATE-----); give your "
            "CA's certificate in PEM."
        )
    pem = b"\n".join(blocks).decode("ascii")
    try:
        _context(pem)
    except ssl.SSLError as exc:
        reason = printable(exc.reason or str(exc), 120)
        raise UsageError(
            f"{flag} {where} holds a certificate that cannot be read ({reason})."
        ) from None
    return Trust(ca_pem=pem, ca_file=path)


def insecure_warning(trust: Trust, targets: Iterable[str]) -> str | None:
    """The one warning ``--insecure`` prints, naming the https targets it applies to."""
    if not trust.insecure:
        return None
    https = [t for t in dict.fromkeys(targets) if t.lower().startswith("https:")]
    if not https:
        return None
    names = ", ".join(printable(t, 200) for t in https)
    return f"warning: --insecure: certificates are not verified for {names}"


@dataclass(frozen=True)
class TargetOptions:
    """What every request to one target carries beyond the delivery: added headers, and which
    certificates it may present."""

    headers: tuple[tuple[str, str], ...] = ()
    trust: Trust = Trust()

    def notes(self) -> list[str]:
        """``adding Authorization: Bearer …cdef`` (values masked), ``trusting the CA in ca.pem``:
        what differs from a plain request, for the lines that announce a target."""
        parts = [f"adding {shown(self.headers)}"] if self.headers else []
        trust = self.trust.describe()
        if trust:
            parts.append(trust)
        return parts

    def masked_headers(self) -> list[list[str]]:
        """The added headers for JSON, values masked."""
        return [[name, masked_value(value)] for name, value in self.headers]
