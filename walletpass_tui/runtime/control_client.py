"""A viewer's side of the control channel (``control.py`` says what goes over it): one
connection to a receiver, read with the same bounds the receiver keeps."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from walletpass_tui.runtime.control import (
    MAX_TOLD,
    PROTOCOL,
    ControlError,
    ReceiverStatus,
    bounded_text,
    decode,
    encode,
    peer_uid,
    reachable_path,
)

CONNECT_TIMEOUT_S = 5.0
REPLY_TIMEOUT_S = 5.0


MessageListener = Callable[[dict[str, Any]], None]


@dataclass
class Hello:
    """What the receiver said on connecting."""

    instance: dict[str, Any]
    state: ReceiverStatus
    upto: int


@dataclass
class ControlClient:
    """One connection to a receiver's control channel (``connect``), read by ``run``."""

    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    hello: Hello
    _next_id: int = 0
    _waiting: dict[int, asyncio.Future[dict[str, Any]]] = field(default_factory=dict)

    @classmethod
    async def connect(cls, path: Path, *, timeout: float = CONNECT_TIMEOUT_S) -> ControlClient:
        """Connect and read the hello; ControlError (or OSError) when that cannot be done."""
        async with asyncio.timeout(timeout):
            with reachable_path(path) as where:
                reader, writer = await asyncio.open_unix_connection(where, limit=MAX_TOLD)
            try:
                sock = writer.get_extra_info("socket")
                uid = peer_uid(sock) if sock is not None else None
                if uid is not None and uid != os.geteuid():
                    raise ControlError(f"The control socket {path} is served by another user.")
                first = await _read_message(reader)
                if first is None:
                    raise ControlError("The receiver closed its control channel.")
                if first.get("type") == "error":
                    raise ControlError(bounded_text(first.get("reason")) or "The receiver refused.")
                if first.get("type") != "hello" or first.get("protocol") != PROTOCOL:
                    raise ControlError(
                        "The receiver speaks another version of the control channel; "
                        "run the same walletpass-tui for both."
                    )
                upto = first.get("upto")
                instance = first.get("instance")
                hello = Hello(
                    instance=instance if isinstance(instance, dict) else {},
                    state=ReceiverStatus.from_wire(first.get("state")),
                    upto=upto if type(upto) is int and upto >= 0 else 0,
                )
            except BaseException:
                writer.close()
                raise
        return cls(reader, writer, hello)

    async def run(self, listener: MessageListener) -> str | None:
        """Read messages until the receiver goes: replies answer ``request()``, the others go to
        ``listener``. Returns why it ended (None: the receiver closed the channel)."""
        why: str | None = None
        try:
            while True:
                try:
                    message = await _read_message(self.reader)
                except (ControlError, OSError) as exc:
                    # the receiver went away: returned as the reason
                    why = str(exc)
                    return why
                if message is None:
                    return None
                kind = message.get("type")
                if kind == "reply":
                    future = self._waiting.pop(message.get("id"), None)  # type: ignore[arg-type]
                    if future is not None and not future.done():
                        future.set_result(message)
                elif kind == "error":
                    why = bounded_text(message.get("reason")) or "the receiver closed the channel"
                    return why
                else:
                    listener(message)
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ControlError("The receiver went away."))
            self._waiting.clear()
            self.close()

    async def request(self, op: str, **args: Any) -> None:
        """Ask for ``op``; ControlError with the receiver's reason when it refuses or is gone."""
        self._next_id += 1
        rid = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[rid] = future
        try:
            self.writer.write(encode({"id": rid, "op": op, **args}))
            async with asyncio.timeout(REPLY_TIMEOUT_S):
                reply = await future
        except TimeoutError:
            raise ControlError("The receiver did not answer.") from None
        except OSError:
            raise ControlError("The receiver went away.") from None
        finally:
            self._waiting.pop(rid, None)
        if reply.get("ok") is not True:
            raise ControlError(bounded_text(reply.get("reason")) or "The receiver refused.")

    def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()


async def _read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, None at the end; ControlError for one too large or not JSON."""
    try:
        line = await reader.readline()
    except ValueError:  # the line went past the reader's limit
        raise ControlError(f"The receiver sent a message larger than {MAX_TOLD} bytes.") from None
    if not line:
        return None
    if not line.endswith(b"\n"):
        return None  # cut off by the end of the connection
    try:
        return decode(line[:-1], MAX_TOLD)
    except ValueError as exc:
        raise ControlError(f"The receiver sent {exc}.") from None
