"""Reading a request's raw body within limits: the one rule for every door, through
``intake.IntakeRequest.read_body`` (the receiver's HTTP server and the relay's aiohttp alike).

Never more than one byte past the limit is read, a declared Content-Length over it is refused before
reading anything, and the whole body must arrive within the read timeout.
"""

from __future__ import annotations

import asyncio
from typing import Protocol


class Content(Protocol):
    """A body as it arrives (aiohttp's ``StreamReader``, or ``http_server.Body``)."""

    def is_eof(self) -> bool: ...
    def read_nowait(self) -> bytes: ...
    async def read(self, n: int) -> bytes: ...


class BodyRequest(Protocol):
    """What reading a body needs of a request (aiohttp's, or ``http_server.Request``)."""

    @property
    def content_length(self) -> int | None: ...
    @property
    def content(self) -> Content: ...


class BodyTooLarge(Exception):
    """A body over the limit: ``size`` is what its Content-Length declared, or what was read."""

    def __init__(self, size: int, *, declared: bool = False) -> None:
        super().__init__(f"{size} bytes")
        self.size = size
        self.declared = declared


async def read_body(request: BodyRequest, limit: int, timeout_s: float) -> bytes:
    """A request's raw body, never read past ``limit`` (BodyTooLarge) and within ``timeout_s``
    (TimeoutError). Every body a door reads from a socket is read through here."""
    declared = request.content_length
    if declared is not None and declared > limit:
        raise BodyTooLarge(declared, declared=True)
    if request.content.is_eof():  # the whole body came with the headers: no waiting
        body = request.content.read_nowait()
        if len(body) > limit:
            raise BodyTooLarge(len(body))
        return body
    chunks: list[bytes] = []
    total = 0
    async with asyncio.timeout(timeout_s):
        while True:
            # Never ask for more than one byte past the limit.
            chunk = await request.content.read(min(64 * 1024, limit + 1 - total))
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise BodyTooLarge(total)
            chunks.append(chunk)
    return b"".join(chunks)
