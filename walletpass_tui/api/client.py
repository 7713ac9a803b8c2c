"""WalletPassClient: the two calls the service documents, with every failure made clear."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from walletpass_tui import __version__
from walletpass_tui.api.errors import ApiError, excerpt, hint_for_status
from walletpass_tui.api.models import (
    TemplateList,
    WebhookEndpoint,
    parse_template_list,
    validate_topics,
)
from walletpass_tui.api.urls import UrlError, check_url, url_problem
from walletpass_tui.config import ENV_API_KEY, Secret, Settings
from walletpass_tui.text import format_duration

USER_AGENT = f"walletpass-tui/{__version__} (+https://pypi.org/project/walletpass-tui/)"
GET_ATTEMPTS = 3
RETRY_AFTER_CAP_S = 10.0


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


class WalletPassClient:
    """An async client for the Wallet Pass Service.

    ``on_endpoint_created`` is called with each created endpoint the moment its answer is parsed,
    before anything else can fail, so its secret (returned only once) is stored at once.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        on_endpoint_created: Callable[[WebhookEndpoint], None] | None = None,
        retry_base_delay: float = 0.5,
    ) -> None:
        self.settings = settings
        self._on_created = on_endpoint_created
        self._retry_base_delay = retry_base_delay
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(settings.timeout_s),
            transport=transport,
            headers={"Accept": "application/json", "User-Agent": USER_AGENT},
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
                response = await self._http.request(method, url, headers=headers, content=content)
            except httpx.TimeoutException:
                if not last:
                    await self._backoff(attempt)
                    continue
                hint = "Check your network, or raise timeout_s in the config file."
                if method == "POST":
                    # The service may have acted on it; sending it again could create a duplicate.
                    hint = (
                        "It may still have been carried out: check the service's web settings "
                        f"before trying again. {hint}"
                    )
                raise ApiError(
                    f"The service did not answer within {self.settings.timeout_s:g} s{tries(attempt)} "
                    f"({url}).",
                    kind="timeout",
                    hint=hint,
                ) from None
            except httpx.ConnectError as exc:
                if _is_tls_error(exc):
                    raise ApiError(
                        f"The TLS handshake with {_host(url)} failed.",
                        kind="tls",
                        hint="Check the URL's scheme and the server's certificate.",
                    ) from None
                if not last:
                    await self._backoff(attempt)
                    continue
                raise ApiError(
                    f"Could not connect to {_host(url)}{tries(attempt)}.",
                    kind="connection",
                    hint="Check the URL and that the service is reachable.",
                ) from None
            except httpx.RemoteProtocolError:
                if not last:
                    await self._backoff(attempt)
                    continue
                raise ApiError(
                    f"The connection to {_host(url)} closed before a full answer arrived"
                    f"{tries(attempt)}.",
                    kind="connection",
                    hint="Try again; if it persists, the service may be down.",
                ) from None
            except httpx.HTTPError as exc:
                raise ApiError(
                    f"The request to {_host(url)} failed ({type(exc).__name__}).",
                    kind="connection",
                    hint="Check the URL and your network.",
                ) from None
            text = await _read_text(response)
            if 200 <= response.status_code < 300:
                return text
            retry_after = _retry_after(response)
            retryable = response.status_code >= 500 or (
                response.status_code == 429
                and retry_after is not None
                and retry_after <= RETRY_AFTER_CAP_S
            )
            if retryable and not last:
                await asyncio.sleep(retry_after if retry_after is not None else 0)
                await self._backoff(attempt)
                continue
            kind, hint = hint_for_status(response.status_code, retry_after)
            status_text = f"{response.status_code} {response.reason_phrase}".strip()
            raise ApiError(
                f"The service answered {status_text} to {method} {_path(url)}{tries(attempt)}.",
                kind=kind,
                status=response.status_code,
                body=excerpt(self._scrub(text)),
                hint=hint,
                retry_after=retry_after,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    async def _backoff(self, attempt: int) -> None:
        await asyncio.sleep(self._retry_base_delay * (2 ** (attempt - 1)))


async def _read_text(response: httpx.Response) -> str:
    try:
        return response.text
    except UnicodeDecodeError:
        return response.content.decode("utf-8", errors="replace")


def _is_tls_error(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return "SSL" in str(exc) or "CERTIFICATE" in str(exc).upper()


def _host(url: str) -> str:
    return httpx.URL(url).host or url


def _path(url: str) -> str:
    return httpx.URL(url).path
