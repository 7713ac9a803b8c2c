"""The public URL a tunnel gives the receiver: discovered from a local ngrok agent when one runs.

ngrok's agent serves its state on 127.0.0.1:4040; ``GET /api/tunnels`` lists each tunnel with its
``public_url`` and the local address it forwards to (``config.addr``). Nothing else is contacted.
"""

from __future__ import annotations

from typing import Any

import httpx

NGROK_API = "http://127.0.0.1:4040"


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
        t
        for t in tunnels
        if isinstance(t, dict)
        and isinstance(t.get("public_url"), str)
        and t["public_url"].startswith("https://")
    ]
    if port is not None:
        matching = [t for t in https if _forwards_to_port(t, port)]
        if matching:
            return str(matching[0]["public_url"]).rstrip("/")
        if https:
            return None  # tunnels exist, but none reaches this receiver
    return str(https[0]["public_url"]).rstrip("/") if https else None


async def discover_ngrok(
    port: int | None = None, *, api: str = NGROK_API, timeout_s: float = 0.5
) -> str | None:
    """The ngrok agent's public HTTPS URL for ``port``, or None when no agent answers."""
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(f"{api.rstrip('/')}/api/tunnels")
            if response.status_code != 200:
                return None
            return pick_public_url(response.json(), port)
    except (httpx.HTTPError, ValueError):
        return None
