"""One request of the check, sent to the target and nowhere else.

The client ignores proxy settings from the environment (``trust_env=False``) and never follows a
redirect, so nothing leaves for an address the user did not name. The answer's body is read up to
the store's limit; the whole exchange, body upload included, must finish within the timeout.
Headers the user adds (``--header``) go after the case's own, in every case; which certificates an
https receiver may present is the client's (``--ca-bundle``, ``--insecure``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import httpx

from walletpass_tui import __version__
from walletpass_tui.check.cases import CaseRequest
from walletpass_tui.webhooks.forward import send, target_client
from walletpass_tui.webhooks.models import ForwardResult
from walletpass_tui.webhooks.target_options import Trust, masked_value, with_added

USER_AGENT = f"walletpass-tui/{__version__} (check)"


def new_client(trust: Trust | None = None) -> httpx.AsyncClient:
    """A client that talks only to the URL it is given: no proxies from the environment, no
    redirects followed, no cookies carried between cases (the forwards' own client)."""
    return target_client(trust)


def sent_headers(
    request: CaseRequest, added: Sequence[tuple[str, str]] = (), *, masked: bool = False
) -> tuple[tuple[str, str], ...]:
    """The headers as they go out (httpx adds only Host, Accept, Accept-Encoding, Connection),
    the ``added`` ones last; ``masked``: their values masked, as the history records them."""
    if masked:
        added = [(name, masked_value(value)) for name, value in added]
    own = [*request.headers, ("User-Agent", USER_AGENT)]
    return (*with_added(own, added), ("Content-Length", str(len(request.body))))


async def _pieces(body: bytes, pieces: int, spread_s: float) -> AsyncIterator[bytes]:
    size = -(-len(body) // pieces)
    pause = spread_s / max(1, pieces - 1)
    for index, start in enumerate(range(0, len(body), size)):
        if index:
            await asyncio.sleep(pause)
        yield body[start : start + size]


async def post(
    client: httpx.AsyncClient,
    url: str,
    request: CaseRequest,
    timeout_s: float,
    added: Sequence[tuple[str, str]] = (),
) -> ForwardResult:
    """POST ``request`` to ``url`` once, with the ``added`` headers; the answer, or why there
    was none."""
    headers = sent_headers(request, added)
    content: bytes | AsyncIterator[bytes] = request.body
    if request.pieces > 1 and request.body:
        content = _pieces(request.body, request.pieces, request.spread_s)
    return await send(client, url, content, headers, timeout_s)
