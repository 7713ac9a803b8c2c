"""WalletPassClient: the two calls the service documents, with every failure made clear."""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC
from typing import Any, overload

import httpx

from walletpass_tui import __version__
from walletpass_tui.api.errors import ApiError, excerpt, hint_for_status
from walletpass_tui.api.http_failures import (
    Failure,
    NoAnswer,
    received,
    watched_transport,
    why_no_answer,
)
from walletpass_tui.api.models import (
    TemplateList,
    WebhookEndpoint,
    parse_template_list,
    validate_topics,
)
from walletpass_tui.api.urls import UrlError, check_url, url_problem
from walletpass_tui.config import ENV_API_KEY, Settings
from walletpass_tui.config.secrets import Secret
from walletpass_tui.text import format_duration, format_size, parse_ascii_int

USER_AGENT = f"walletpass-tui/{__version__} (+https://pypi.org/project/walletpass-tui/)"
GET_ATTEMPTS = 3
# The longest wait the client sits through before trying again, whatever the status and however
# Retry-After is written; a service that asks for longer gets an answer at once saying when.
RETRY_AFTER_CAP_S = 10.0
RETRY_AFTER_DIGITS = 9  # delta-seconds past 31 years are not a wait
ANSWER_LIMIT = 16 * 1024 * 1024  # bytes of one answer read, decoded; the service's are small JSON
# Failures worth another try of a GET: the service may be restarting or the network blinked.
_RETRIED = {
    Failure.TIMEOUT,
    Failure.REFUSED,
    Failure.UNREACHABLE,
    Failure.CLOSED,
    Failure.CUT,
    Failure.RESET,
    Failure.NOT_HTTP,
}


def retry_after_s(value: str | None, now_s: float) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds from ``now_s`` (epoch seconds), or
    None when there is none or it is neither form RFC 9110 allows: delta-seconds (ASCII digits)
    or an HTTP-date (one in the past asks for no wait). ``inf``, ``nan``, ``-5``, ``1.5`` and
    garbage are None: the caller then waits its own backoff, never the service's idea of forever.
    """
    if value is None:
        return None
    text = value.strip()
    seconds = parse_ascii_int(text, max_digits=RETRY_AFTER_DIGITS)
    if seconds is not None:
        return float(seconds)
    if not text[:1].isalpha() or len(text) > 64:  # an HTTP-date starts with the day's name
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        # not an HTTP date: no Retry-After, as if absent
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now_s)


class WalletPassClient:
    """An async client for the Wallet Pass Service.

    ``on_endpoint_created`` is called with each created endpoint the moment its answer is parsed,
    before anything else can fail, so its secret (returned only once) is stored at once.
    ``sleep`` and ``clock`` (epoch seconds) are how it waits between tries and reads an HTTP-date
    in ``Retry-After``.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        on_endpoint_created: Callable[[WebhookEndpoint], None] | None = None,
        retry_base_delay: float = 0.5,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self._on_created = on_endpoint_created
        self._retry_base_delay = retry_base_delay
        self._sleep = sleep
        self._clock = clock
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.timeout_s),
            # httpx's own transport, keeping the first bytes of an answer that is not HTTP.
            transport=transport or watched_transport(),
            headers={
                "Accept": "application/json",
                # Nothing compressed to inflate: what is counted against ANSWER_LIMIT is what
                # arrived.
                "Accept-Encoding": "identity",
                "User-Agent": USER_AGENT,
            },
            follow_redirects=False,
        )

    def __repr__(self) -> str:
        key = self.settings.api_key.masked if self.settings.api_key else "(no key)"
        return f"WalletPassClient(base_url={self.settings.base_url!r}, api_key={key!r})"

    async def __aenter__(self) -> WalletPassClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- the two documented calls -------------------------------------------------------------

    async def list_pass_templates(self) -> TemplateList:
        url = f"{self._require_url('base_url')}/api/v0/passTemplates"
        text = await self._send("GET", url, None)
        try:
            return parse_template_list(self._decode(text), text)
        except ApiError as exc:
            exc.body = self._scrub(exc.body)
            raise

    async def create_webhook_endpoint(
        self, url: str, topics: Sequence[str], enabled: bool = True
    ) -> WebhookEndpoint:
        topics = validate_topics(topics)
        problem = url_problem(url, allow_http=self.settings.allow_http)
        if problem:
            raise ApiError(problem, kind="invalid_request")
        if not isinstance(enabled, bool):
            raise ApiError("enabled must be true or false.", kind="invalid_request")
        target = f"{self._require_url('registration_url')}/v0/webhookEndpoints"
        body = {"enabledTopics": topics, "enabled": enabled, "url": url.strip()}
        text = await self._send("POST", target, body)
        try:
            endpoint = WebhookEndpoint.from_response(self._decode(text), text)
        except ApiError as exc:
            # The body stays whole: it may hold the endpoint's secret, returned only this once.
            exc.body = self._scrub(exc.body)
            raise
        if self._on_created is not None:
            self._on_created(endpoint)
        return endpoint

    # -- plumbing -------------------------------------------------------------------------------

    def _require_url(self, name: str) -> str:
        value = getattr(self.settings, name)
        if not value:
            env = "WALLETPASS_BASE_URL" if name == "base_url" else "WALLETPASS_REGISTRATION_URL"
            raise ApiError(
                f"No {name.replace('_', ' ')} is set; set {env} or {name} in the config file.",
                kind="invalid_request",
            )
        try:
            return check_url(value, what=f"The setting {name}")
        except UrlError as exc:
            raise ApiError(str(exc), kind="invalid_request") from None

    def _auth_header(self) -> str:
        key: Secret | None = self.settings.api_key
        if not key:
            raise ApiError(
                f"No API key is set; create one in your workspace settings and set {ENV_API_KEY} "
                "(or api_key in the config file).",
                kind="missing_key",
            )
        return f"Bearer {key.reveal()}"

    @overload
    def _scrub(self, text: str) -> str: ...
    @overload
    def _scrub(self, text: str | None) -> str | None: ...
    def _scrub(self, text: str | None) -> str | None:
        """``text`` with our API key masked, should the service echo it back in an error."""
        key = self.settings.api_key
        if text is None or not key:
            return text
        return text.replace(key.reveal(), key.masked)

    def _decode(self, text: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            # A cut-off answer fails at its very end, or inside a string still open at the end.
            truncated = bool(text.strip()) and (
                exc.pos >= len(text.rstrip()) or exc.msg.startswith("Unterminated string")
            )
            why = "truncated JSON" if truncated else "not JSON"
            raise ApiError(
                f"The service answered with {why} (at character {exc.pos}).",
                kind="bad_json",
                body=text,
                hint="Check the base and registration URLs point at the service's API.",
            ) from None

    async def _send(self, method: str, url: str, body: dict[str, Any] | None) -> str:
        headers = {"Authorization": self._auth_header()}
        content: bytes | None = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            content = json.dumps(body, separators=(", ", ": ")).encode()
        # POST is never retried: a retry could create a second endpoint.
        attempts = GET_ATTEMPTS if method == "GET" else 1
        started = time.monotonic()

        def tries(attempt: int) -> str:
            """(3 tries, 33 s)" when the call was retried, so a long wait is explained."""
            if attempt < 2:
                return ""
            return f" ({attempt} tries, {format_duration(time.monotonic() - started, fine=False)})"

        for attempt in range(1, attempts + 1):
            last = attempt == attempts
            try:
                with received() as first:
                    response, text = await self._exchange(method, url, headers, content)
            except (httpx.HTTPError, TimeoutError) as exc:
                failure = why_no_answer(exc, url, self.settings.timeout_s, bytes(first))
                if failure.kind in _RETRIED and not last:
                    await self._sleep(self._backoff_delay(attempt))
                    continue
                raise self._no_answer(failure, method, url, tries(attempt)) from None
            if 200 <= response.status_code < 300:
                return text
            asked = retry_after_s(response.headers.get("Retry-After"), self._clock())
            retryable = response.status_code >= 500 or (
                response.status_code == 429 and asked is not None
            )
            if asked is not None and asked > RETRY_AFTER_CAP_S:
                retryable = False  # told when to come back: say so now rather than wait
            if retryable and not last:
                await self._sleep(asked if asked is not None else self._backoff_delay(attempt))
                continue
            kind, hint = hint_for_status(response.status_code, asked)
            status_text = f"{response.status_code} {response.reason_phrase}".strip()
            raise ApiError(
                f"The service answered {status_text} to {method} {_path(url)}{tries(attempt)}.",
                kind=kind,
                status=response.status_code,
                body=excerpt(self._scrub(text)),
                hint=hint,
                retry_after=asked,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _exchange(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None
    ) -> tuple[httpx.Response, str]:
        """One request and its answer, read whole within the timeout and up to ANSWER_LIMIT
        bytes: a service that trickles or never ends its answer cannot hold the caller."""
        limit = ANSWER_LIMIT
        async with (
            asyncio.timeout(self.settings.timeout_s),
            self._http.stream(method, url, headers=headers, content=content) as response,
        ):
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > limit:
                    raise ApiError(
                        f"The service's answer to {method} {_path(url)} is larger than "
                        f"{format_size(limit)}; it was not read further.",
                        kind="too_large",
                        status=response.status_code,
                        hint="Check the base and registration URLs point at the service's API.",
                    )
                chunks.append(chunk)
        return response, _decode_text(b"".join(chunks), response.encoding)

    def _no_answer(self, failure: NoAnswer, method: str, url: str, tries: str) -> ApiError:
        """The ApiError for a request that got no answer, worded for the service."""
        host = _host(url)
        if failure.kind is Failure.TIMEOUT:
            hint = "Check your network, or raise timeout_s in the config file."
            if method == "POST":
                # The service may have acted on it; sending it again could create a duplicate.
                hint = (
                    "It may still have been carried out: check the service's web settings "
                    f"before trying again. {hint}"
                )
            return ApiError(
                f"The service did not answer within {self.settings.timeout_s:g} s{tries} ({url}).",
                kind="timeout",
                hint=hint,
            )
        if failure.kind.is_tls:
            return ApiError(
                f"{_sentence(failure.text)}.",
                kind="tls",
                hint="Check the URL's scheme and the server's certificate.",
            )
        if failure.kind is Failure.NO_SUCH_HOST:
            return ApiError(
                f"{_sentence(failure.text)}{tries}.",
                kind="connection",
                hint="Check the base and registration URLs for a typo, and your network.",
            )
        if failure.kind in (Failure.REFUSED, Failure.UNREACHABLE):
            why = "connection refused" if failure.kind is Failure.REFUSED else "no route to it"
            return ApiError(
                f"Could not connect to {host}{tries}: {why}.",
                kind="connection",
                hint="Check the URL and that the service is reachable.",
            )
        if failure.kind is Failure.NOT_HTTP:
            return ApiError(
                f"{_sentence(failure.text)}{tries}.",
                kind="connection",
                hint="Check the base and registration URLs point at the service's API.",
            )
        if failure.kind in (Failure.CLOSED, Failure.CUT, Failure.RESET):
            return ApiError(
                f"The connection to {host} closed before a full answer arrived{tries}.",
                kind="connection",
                hint="Try again; if it persists, the service may be down.",
            )
        return ApiError(
            f"The request to {host} failed ({failure.text}).",
            kind="connection",
            hint="Check the URL and your network.",
        )

    def _backoff_delay(self, attempt: int) -> float:
        return self._retry_base_delay * (2.0 ** (attempt - 1))


def _decode_text(data: bytes, encoding: str | None) -> str:
    try:
        return data.decode(encoding or "utf-8")
    except (LookupError, UnicodeDecodeError):
        # an unknown or wrong charset: shown with replacement characters
        return data.decode("utf-8", errors="replace")


def _sentence(text: str) -> str:
    """``text`` as the start of a sentence; a host name that begins it is left as it is."""
    return "The " + text[4:] if text.startswith("the ") else text


def _host(url: str) -> str:
    return httpx.URL(url).host or url


def _path(url: str) -> str:
    return httpx.URL(url).path
