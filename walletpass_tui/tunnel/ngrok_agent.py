"""A public URL found from an ngrok agent the user runs in another shell (no ``--tunnel``).

ngrok's agent serves its state on 127.0.0.1:4040; ``GET /api/tunnels`` lists each tunnel with its
``public_url`` and the local address it forwards to (``config.addr``). Nothing else is contacted.

The answer is untrusted: any local user can bind 127.0.0.1:4040 before ngrok does. Only a URL
that passes :func:`~walletpass_tui.tunnel.public_url.plain_https_url` is taken; anything else is
ignored. The answer is read up to ``MAX_ANSWER`` bytes within ``timeout_s``. Callers say where
the URL came from, and that any local user can answer there (``FOUND_FROM_AGENT``), on the line
that offers it for registration.
"""

from __future__ import annotations

import json
from typing import Any

from walletpass_tui.tunnel.public_url import plain_https_url

NGROK_API = "http://127.0.0.1:4040"
# Said wherever a URL found this way is offered for registration.
FOUND_FROM_AGENT = (
    "found from the ngrok agent on 127.0.0.1:4040, which any user of this machine can answer: "
    "check it is your ngrok before you register it"
)
MAX_ANSWER = 256 * 1024  # bytes of /api/tunnels read at most


def _forwards_to_port(tunnel: dict[str, Any], port: int) -> bool:
    config = tunnel.get("config")
    addr = str(config.get("addr", "")) if isinstance(config, dict) else ""
    tail = addr.rsplit(":", 1)[-1].rstrip("/")
    return tail == str(port)


def pick_public_url(payload: Any, port: int | None = None) -> str | None:
    """The best HTTPS public URL in an ``/api/tunnels`` answer, preferring one that reaches ``port``."""
    tunnels = payload.get("tunnels") if isinstance(payload, dict) else None
    if not isinstance(tunnels, list):
        return None
    https = [
        (t, url)
        for t in tunnels
        if isinstance(t, dict) and (url := plain_https_url(t.get("public_url"))) is not None
    ]
    if port is not None:
        matching = [url for t, url in https if _forwards_to_port(t, port)]
        if matching:
            return matching[0]
        if https:
            return None  # tunnels exist, but none reaches this receiver
    return https[0][1] if https else None


async def discover_ngrok(
    port: int | None = None, *, api: str = NGROK_API, timeout_s: float = 0.5
) -> str | None:
    """The ngrok agent's public HTTPS URL for ``port``, or None when no agent answers."""
    import httpx

    try:
        async with (
            httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client,
            client.stream("GET", f"{api.rstrip('/')}/api/tunnels") as response,
        ):
            if response.status_code != 200:
                return None
            body = b""
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_ANSWER:
                    return None  # not an agent's answer
            return pick_public_url(json.loads(body), port)
    except (httpx.HTTPError, ValueError, RecursionError):
        # no agent or not its answer: no public URL
        return None
