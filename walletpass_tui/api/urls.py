"""The one URL rule: settings, endpoint URLs, forward and replay targets, the tunnel's address.

Every URL a person types (a flag, a setting, a dashboard form) or that comes from a local tool (the
ngrok agent) goes through :func:`check_url`. It returns the URL stripped of surrounding spaces, or
raises :class:`UrlError` with one sentence saying what to fix, and never any other exception,
whatever the text. Refused everywhere: unparsable URLs (``http://[::1``), ports that are not a
number from 1 to 65535 (``http://host:99999``, ``http://host:1:5``), a user name or password (the
API key is the only credential, and a password in a URL ends up in shell history and logs), a
``#fragment`` (never sent to a server, so always a mistake), spaces and control characters, and
host names that are not plain DNS names or IP addresses.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

from walletpass_tui.errors import UsageError
from walletpass_tui.text import printable

if TYPE_CHECKING:
    from walletpass_tui.config import Settings

__all__ = [
    "ENDPOINT_SCHEMES",
    "TARGET_SCHEMES",
    "UrlError",
    "check_settings_urls",
    "check_url",
    "is_local_address",
    "target_url_problem",
    "url_problem",
]

TARGET_SCHEMES = ("http", "https")  # forward and replay targets, service base URLs
ENDPOINT_SCHEMES = ("https",)  # what the service delivers to

_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")
_SHOWN_CHARS = 120


class UrlError(UsageError, ValueError):
    """A URL that cannot be used; ``str()`` is one sentence saying what to fix."""


def _shown(url: str) -> str:
    return repr(printable(url, _SHOWN_CHARS))


def _plain_host(host: str) -> bool:
    """A DNS name (IDNA allowed) or an IP address, nothing else."""
    try:
        ipaddress.ip_address(host)
    except ValueError:  # not an IP address: checked as a DNS name below
        pass
    else:
        return True
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:  # not IDNA: not a host name, the caller says so
            return False
    labels = host.rstrip(".").split(".")
    return len(host) <= 253 and all(_LABEL.match(label) for label in labels)


def _split(url: str, what: str) -> SplitResult:
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError as exc:
        reason = str(exc)
        if "port" in reason.lower():
            raise UrlError(
                f"{what} {_shown(url)} has a port that is not a number from 1 to 65535."
            ) from None
        raise UrlError(
            f"{what} {_shown(url)} is not a valid URL ({printable(reason)}); "
            "use e.g. https://example.com/webhooks."
        ) from None
    return parts


def check_url(
    url: str,
    *,
    what: str = "The URL",
    schemes: tuple[str, ...] = TARGET_SCHEMES,
    allow_http: bool = False,
    https_because: str | None = None,
) -> str:
    """``url`` stripped, when it can be used; else :class:`UrlError` saying why.

    ``schemes`` are those accepted; ``allow_http`` adds ``http`` to them (a local simulated
    service). ``what`` names the URL in the message (``--base-url``, ``The endpoint URL``).
    ``https_because`` says why only https:// is taken where no flag changes that (a tunnel's
    address); an endpoint's URL says that ``--allow-http`` does.
    """
    if not isinstance(url, str):
        raise UrlError(f"{what} must be text, e.g. https://example.com/webhooks.")
    url = url.strip()
    if not url:
        raise UrlError(f"{what} is empty; give a URL like https://example.com/webhooks.")
    if not url.isprintable() or any(ch.isspace() for ch in url):
        raise UrlError(f"{what} {_shown(url)} contains spaces or control characters.")
    if allow_http and "http" not in schemes:
        schemes = (*schemes, "http")
    parts = _split(url, what)
    scheme = parts.scheme.lower()
    if scheme not in schemes:
        if https_because is not None:
            raise UrlError(f"{what} {_shown(url)} must start with https:// ({https_because}).")
        if schemes == ENDPOINT_SCHEMES:
            raise UrlError(
                f"{what} {_shown(url)} must start with https:// (the service only delivers to "
                "public HTTPS; --allow-http permits http:// for a local simulated service)."
            )
        wanted = " or ".join(f"{s}://" for s in schemes)
        raise UrlError(f"{what} {_shown(url)} must start with {wanted}.")
    if "@" in parts.netloc:
        # Not shown: the part before "@" may be a password.
        raise UrlError(
            f"{what} must not carry a user name or password (user:password@host): the API key "
            "is the only credential; give the URL without it."
        )
    if parts.fragment or url.endswith("#"):
        raise UrlError(
            f"{what} {_shown(url)} has a #fragment, which is never sent to a server; remove it."
        )
    host = parts.hostname
    if not host:
        raise UrlError(f"{what} {_shown(url)} must name a host, e.g. https://example.com/webhooks.")
    if not _plain_host(host):
        raise UrlError(f"{what} {_shown(url)} has a host that is not a DNS name or an IP address.")
    if parts.port == 0:
        raise UrlError(f"{what} {_shown(url)} has a port that is not a number from 1 to 65535.")
    return url


def url_problem(url: str, *, allow_http: bool = False) -> str | None:
    """Why ``url`` cannot be a webhook endpoint's URL, or None when it can (for forms)."""
    try:
        check_url(url, what="The URL", schemes=ENDPOINT_SCHEMES, allow_http=allow_http)
    except UrlError as exc:  # the reason is the form's answer
        return str(exc)
    return None


def target_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a forward or replay target (http or https), or None (for forms)."""
    try:
        check_url(url, what="The target URL")
    except UrlError as exc:  # the reason is the form's answer
        return str(exc)
    return None


def is_local_address(url: str) -> bool:
    """True when ``url``'s host is this machine or a private network, which the service cannot
    reach: ``localhost``, ``*.local``, loopback, private, link-local or unspecified addresses."""
    try:
        host = (urlsplit(url.strip()).hostname or "").rstrip(".").lower()
    except ValueError:  # not a URL: not local
        return False
    if host == "localhost" or host.endswith((".localhost", ".local", ".internal")):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # a name, not an address: not local
        return False
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_unspecified
        or address.is_reserved
    )


def check_settings_urls(settings: Settings) -> None:
    """UrlError when ``base_url``, ``registration_url``, ``public_url`` or ``tunnel_url`` is not
    usable; the message names the setting and where its value came from (flag, environment,
    file)."""
    for key in ("base_url", "registration_url", "public_url"):
        value = getattr(settings, key)
        if value:
            check_url(value, what=f"The setting {key} (from {settings.source_of(key)})")
    if settings.tunnel_url:  # a named tunnel's address: what the service will deliver to
        check_url(
            settings.tunnel_url,
            what=f"The setting tunnel_url (from {settings.source_of('tunnel_url')})",
            schemes=ENDPOINT_SCHEMES,
            https_because="a tunnel's public address is always https; --allow-http does not apply to it",
        )
