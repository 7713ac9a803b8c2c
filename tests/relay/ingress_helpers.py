"""Raw-socket helpers for the relay ingress tests: one request written as bytes, the whole answer read."""

from __future__ import annotations

import asyncio
import contextlib

from walletpass_tui.relay.server.serve import RelayServer


async def exchange(
    server: RelayServer, raw: bytes, *, then: bytes = b"", closes: bool = False
) -> tuple[bytes, bool]:
    """Send ``raw`` (and later ``then``); the whole answer and, asked with ``closes``, whether
    the relay then closed the connection."""
    assert server.bound is not None
    reader, w = await asyncio.open_connection("127.0.0.1", server.bound[1])
    try:
        w.write(raw)
        if then:
            await asyncio.sleep(0.05)
            w.write(then)
        async with asyncio.timeout(30):  # "did not hang"
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            body = await reader.readexactly(length)
            closed = False
            if closes:
                with contextlib.suppress(ConnectionError):
                    closed = await reader.read(1) == b""
        return head + body, closed
    finally:
        w.close()


def post_head(path: str, headers: dict[str, str], extra: bytes = b"") -> bytes:
    lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{lines}".encode() + extra + b"\r\n"
