"""One request of the check, sent to the target and nowhere else.

The client ignores proxy settings from the environment (``trust_env=False``) and never follows a
redirect, so nothing leaves for an address the user did not name. The answer's body is read up to
the store's limit; the whole exchange, body upload included, must finish within the timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx

from walletpass_tui import __version__
from walletpass_tui.check.cases import Request
from walletpass_tui.webhooks.store import RESPONSE_BODY_LIMIT, ForwardResult

USER_AGENT = f"walletpass-tui/{__version__} (check)"


def new_client() -> httpx.AsyncClient:
    """A client that talks only to the URL it is given: no proxies from the environment, no
    redirects followed, no cookies carried between cases."""
    return httpx.AsyncClient(trust_env=False, follow_redirects=False)


def sent_headers(request: Request) -> tuple[tuple[str, str], ...]:
    """The headers as they go out (httpx adds only Host, Accept, Accept-Encoding, Connection)."""
    return (
        *request.headers,
        ("User-Agent", USER_AGENT),
        ("Content-Length", str(len(request.body))),
    )


async def _pieces(body: bytes, pieces: int, spread_s: float) -> AsyncIterator[bytes]:
    size = -(-len(body) // pieces)
    pause = spread_s / max(1, pieces - 1)
    for index, start in enumerate(range(0, len(body), size)):
        if index:
            await asyncio.sleep(pause)
        yield body[start : start + size]


async def post(
    client: httpx.AsyncClient, url: str, request: Request, timeout_s: float
) -> ForwardResult:
    """POST ``request`` to ``url`` once; the answer, or why there was none."""
    headers = dict(sent_headers(request))
    content: bytes | AsyncIterator[bytes] = request.body
    if request.pieces > 1 and request.body:
        content = _pieces(request.body, request.pieces, request.spread_s)
    started = time.perf_counter()
    try:
        async with (
            asyncio.timeout(timeout_s),
            client.stream(
                "POST", url, content=content, headers=headers, timeout=timeout_s
            ) as answer,
        ):
            chunks: list[bytes] = []
            size = 0
            async for chunk in answer.aiter_raw():
                chunks.append(chunk)
                size += len(chunk)
                if size >= RESPONSE_BODY_LIMIT:
                    break
            return ForwardResult(
                status=answer.status_code,
                latency_ms=(time.perf_counter() - started) * 1000,
                headers=tuple(answer.headers.items()),
                body=b"".join(chunks)[:RESPONSE_BODY_LIMIT],
            )
    except (httpx.TimeoutException, TimeoutError):
        error = f"no answer within {timeout_s:g} s"
    except httpx.ConnectError:
        error = "could not connect (is your app running at that address?)"
    except httpx.RemoteProtocolError:
        error = "the connection was closed without an answer"
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:300]
    return ForwardResult(
        status=None, latency_ms=(time.perf_counter() - started) * 1000, error=error
    )
