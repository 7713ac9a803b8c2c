"""A small TCP balancer on 127.0.0.1 for the tests: each connection goes to the next backend in
turn, or to the one after when that one refuses; bytes are copied both ways as they come (what a
load balancer in front of several relays does, Caddy's ``reverse_proxy`` with two upstreams)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools


class TcpProxy:
    def __init__(self, backends: list[tuple[str, int]]) -> None:
        self.backends = backends
        self.port = 0
        self.chosen: list[tuple[str, int]] = []  # the backend of each connection, in order
        self.accepted = 0  # connections accepted, whether a backend took them or not
        self._turn = itertools.count()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self.port

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        first = next(self._turn)
        for i in range(len(self.backends)):
            backend = self.backends[(first + i) % len(self.backends)]
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*backend), 5)
            except (OSError, TimeoutError):
                continue
            self.chosen.append(backend)
            break
        else:
            return  # no backend: the client sees the connection close
        try:
            await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
        finally:
            up_writer.close()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.IncompleteReadError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            if writer.can_write_eof():
                writer.write_eof()
        writer.close()  # one side ended: end the other (a dead relay ends its streams)
