"""The local control channel of a running receiver: attached dashboards hear of new deliveries and
of the receiver's state, and ask it to pause acknowledgements or inject failures.

Transport: a Unix stream socket, ``<home>/run/control.sock`` (``instance.py``), mode 0600 inside
the 0700 run directory, so only this user can reach it; where the system tells (``SO_PEERCRED``,
Linux) each side checks the other's uid as well, and a peer of another uid is closed before it is
sent a byte.

Wire format: one JSON object per line, ASCII, at most ``MAX_MESSAGE`` bytes with its newline
and ``MAX_DEPTH`` levels of arrays and objects, both ways::

    receiver -> viewer
      {"type": "hello", "protocol": 1, "instance": {...}, "state": {...}, "upto": N}   at once
      {"type": "rows", "upto": N}        attempts up to id N are committed: read them from the
                                         history (the message never carries a delivery)
      {"type": "forward", ...}           a forward or replay was answered (ForwardNote)
      {"type": "state", "state": {...}}  paused, failures injected, relay link... (ReceiverStatus)
      {"type": "reply", "id": K, "ok": true} or {..., "ok": false, "reason": "..."}
      {"type": "error", "reason": "..."} and the connection is closed

    viewer -> receiver
      {"id": K, "op": "pause", "paused": true}
      {"id": K, "op": "fail_first", "attempts": 2}
      {"id": K, "op": "respond", "status": 503}     (null: answer normally)
      {"id": K, "op": "delay", "seconds": 1.5}

The receiver never waits for a viewer: a message is written to the viewer's socket buffer and
the loop moves on; a viewer that leaves more than ``MAX_UNREAD`` bytes unread is dropped (it
reconnects and reads what it missed from the history). Bounds on what viewers send: at most
``MAX_CLIENTS`` at once, ``MAX_MESSAGE`` bytes a message, a message begun must end within
``MESSAGE_TIMEOUT_S``, ``MAX_REQUESTS_PER_S`` requests a second each. A message that breaks a
rule is answered with an error saying which, and the connection closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from walletpass_tui.errors import WalletpassError

log = logging.getLogger(__name__)

PROTOCOL = 1
MAX_MESSAGE = 4096
MAX_CLIENTS = 64
MAX_UNREAD = 64 * 1024
MESSAGE_TIMEOUT_S = 5.0
MAX_REQUESTS_PER_S = 20
CONNECT_TIMEOUT_S = 5.0
REPLY_TIMEOUT_S = 5.0
OPS = ("pause", "fail_first", "respond", "delay")
MAX_TEXT = 300  # characters of any text field
MAX_DEPTH = 8  # arrays and objects inside one another in a message (the protocol's go 3 deep)
MAX_TARGETS = 16
_SUN_PATH = 100  # a socket's path must fit sockaddr_un (104 bytes on macOS, 108 on Linux)


class ControlError(WalletpassError):
    """The control channel cannot be used, or the receiver refused a request (why, in words)."""


# -- the wire ------------------------------------------------------------------------------------


def encode(message: Mapping[str, Any]) -> bytes:
    """One line: compact ASCII JSON (every other character escaped) and a newline."""
    line = json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"
    if len(line) > MAX_MESSAGE:
        raise ValueError(f"a control message of {len(line)} bytes (at most {MAX_MESSAGE})")
    return line


def decode(line: bytes) -> dict[str, Any]:
    """The JSON object in one line (without its newline); ValueError saying what is wrong. Both
    sides read through it: the receiver what a viewer sends, a viewer what the receiver sends."""
    if len(line) >= MAX_MESSAGE:
        raise ValueError(f"a message larger than {MAX_MESSAGE} bytes")
    if _nested_too_deep(line):  # before the parser, which would recurse once a level
        raise ValueError(f"a message nested deeper than {MAX_DEPTH} levels")
    try:
        message = json.loads(line.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("a message that is not ASCII JSON") from None
    if not isinstance(message, dict):
        raise ValueError("a message that is not a JSON object")
    return message


def _nested_too_deep(line: bytes) -> bool:
    """Whether arrays and objects nest more than MAX_DEPTH deep in ``line`` (brackets inside
    strings do not count); a line with few brackets is not scanned."""
    if line.count(b"[") + line.count(b"{") <= MAX_DEPTH:
        return False
    depth = 0
    in_string = escaped = False
    for byte in line:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # closing quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif byte in b"]}":
            depth -= 1
    return False


def _text(value: object, limit: int = MAX_TEXT) -> str | None:
    """A string field cut to ``limit`` characters; None for anything that is not a string."""
    return value[:limit] if isinstance(value, str) else None


@dataclass(frozen=True)
class ReceiverStatus:
    """What attached dashboards show about the receiver (its header), and which requests it takes."""

    paused: bool = False
    injection: str = ""  # the failures injected, in words ("" when none)
    forwarding: bool = False
    forward_targets: tuple[str, ...] = ()
    public_url: str | None = None
    relay: str | None = None  # the relay link's state in words (None: no relay)
    relay_up: bool = False
    tunnel: str | None = None  # the tunnel in words while it gives no public URL (None: up, none)
    history_problem: str | None = None  # the receiver cannot write the history: why
    controls: tuple[str, ...] = ()  # the requests it takes

    def to_wire(self) -> dict[str, Any]:
        return {
            "paused": self.paused,
            "injection": self.injection,
            "forwarding": self.forwarding,
            "forward_targets": list(self.forward_targets),
            "public_url": self.public_url,
            "relay": self.relay,
            "relay_up": self.relay_up,
            "tunnel": self.tunnel,
            "history_problem": self.history_problem,
            "controls": list(self.controls),
        }

    @classmethod
    def from_wire(cls, raw: object) -> ReceiverStatus:
        """Whatever the receiver sent, bounded: text cut, unknown controls and fields left out."""
        if not isinstance(raw, dict):
            raise ValueError("a state that is not a JSON object")
        targets = raw.get("forward_targets")
        controls = raw.get("controls")
        return cls(
            paused=raw.get("paused") is True,
            injection=_text(raw.get("injection")) or "",
            forwarding=raw.get("forwarding") is True,
            forward_targets=tuple(t for t in (_text(v) for v in (targets or [])[:MAX_TARGETS]) if t)
            if isinstance(targets, list)
            else (),
            public_url=_text(raw.get("public_url")),
            relay=_text(raw.get("relay")),
            relay_up=raw.get("relay_up") is True,
            tunnel=_text(raw.get("tunnel")),
            history_problem=_text(raw.get("history_problem")),
            controls=tuple(op for op in OPS if isinstance(controls, list) and op in controls),
        )


@dataclass(frozen=True)
class ForwardNote:
    """A forward (or replay) answered by the user's app, as attached dashboards hear of it."""

    id: int
    attempt_id: int
    webhook_id: str | None
    kind: str
    target: str
    status: int | None
    latency_ms: float
    error: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "forward",
            "id": self.id,
            "attempt_id": self.attempt_id,
            "webhook_id": _text(self.webhook_id),
            "kind": _text(self.kind, 20),
            "target": _text(self.target),
            "status": self.status,
            "latency_ms": round(self.latency_ms, 3),
            "error": _text(self.error),
        }

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> ForwardNote:
        ids = [raw.get("id"), raw.get("attempt_id")]
        if any(type(v) is not int or not 0 <= v < 2**63 for v in ids):
            raise ValueError("a forward without valid ids")
        status = raw.get("status")
        latency = raw.get("latency_ms")
        return cls(
            id=raw["id"],
            attempt_id=raw["attempt_id"],
            webhook_id=_text(raw.get("webhook_id")),
            kind=_text(raw.get("kind"), 20) or "",
            target=_text(raw.get("target")) or "",
            status=status if type(status) is int and 100 <= status <= 599 else None,
            latency_ms=float(latency)
            if isinstance(latency, int | float) and not isinstance(latency, bool)
            else 0.0,
            error=_text(raw.get("error")),
        )


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket, where the system says it
    (``SO_PEERCRED``); None where it does not."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", creds)
    return int(uid)


@contextlib.contextmanager
def reachable_path(path: Path) -> Iterator[str]:
    """A path to bind or connect ``path`` by: itself, or, when it is too long for a socket
    address (a deep home), the same file through a descriptor of its directory (Linux)."""
    text = os.fspath(path)
    if len(os.fsencode(text)) < _SUN_PATH:
        yield text
        return
    o_path = getattr(os, "O_PATH", None)
    if o_path is None or not os.path.isdir("/proc/self/fd"):
        raise ControlError(f"The control socket's path is too long for this system: {text}")
    fd = os.open(Path(text).parent, o_path | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield f"/proc/self/fd/{fd}/{Path(text).name}"
    finally:
        os.close(fd)


# -- the receiver's side -------------------------------------------------------------------------


class Handler(Protocol):
    """What the server asks of the receiver it serves."""

    def hello(self) -> dict[str, Any]:
        """``instance``, ``state`` and ``upto`` for a viewer that just connected."""
        ...

    def request(self, op: str, message: Mapping[str, Any]) -> None:
        """Do ``op``; ValueError or RuntimeError saying why it cannot be done."""
        ...


@dataclass
class ServerCounts:
    """What the server turned away, for tests and debug logs."""

    strangers: int = 0  # another uid
    over_limit: int = 0  # one viewer too many
    slow: int = 0  # left too much unread
    broke_rules: int = 0  # garbage, too large, too slow, too many requests


class ControlServer:
    """Serves viewers on a Unix socket at ``path``; ``broadcast`` never waits for any of them."""

    def __init__(
        self,
        path: Path,
        handler: Handler,
        *,
        max_clients: int | None = None,
        max_unread: int | None = None,
        message_timeout_s: float | None = None,
        max_requests_per_s: float | None = None,
    ) -> None:
        """Bounds not given are this module's (read now, so a test may lower them)."""
        self.path = Path(path)
        self.handler = handler
        self.max_clients = max_clients or MAX_CLIENTS
        self.max_unread = max_unread or MAX_UNREAD
        self.message_timeout_s = message_timeout_s or MESSAGE_TIMEOUT_S
        self.max_requests_per_s = max_requests_per_s or MAX_REQUESTS_PER_S
        self.counts = ServerCounts()
        self.viewers: set[_Viewer] = set()
        self._sock: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Bind (a socket left by a receiver that died is replaced: the caller holds the home)
        and accept viewers until ``stop()``."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with contextlib.suppress(FileNotFoundError):  # no socket left behind: nothing to remove
                os.unlink(self.path)
            with reachable_path(self.path) as where:
                sock.bind(where)
            os.chmod(self.path, 0o600)  # the 0700 directory already keeps others out
            sock.listen(128)  # a burst of connections waits here, never refused
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._accepting = asyncio.create_task(self._accept(sock), name="control accept")

    async def stop(self) -> None:
        """Stop accepting, close every viewer (they see the receiver go) and remove the socket."""
        task, self._accepting = self._accepting, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the stop asked for
                await task
        for viewer in list(self.viewers):
            viewer.transport.abort()
        self.viewers.clear()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
            with contextlib.suppress(FileNotFoundError):  # already gone
                os.unlink(self.path)

    def broadcast(self, message: Mapping[str, Any]) -> None:
        """Send ``message`` to every viewer now (into its socket buffer; never waits)."""
        if not self.viewers:
            return
        line = encode(message)
        for viewer in list(self.viewers):
            viewer.send(line)

    async def _accept(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(sock)
            except OSError as exc:  # out of descriptors, say: the receiver goes on regardless
                log.warning("control channel: accept failed (%s)", exc)
                await asyncio.sleep(0.1)
                continue
            conn.setblocking(False)
            if not self._admit(conn):
                conn.close()
                continue
            try:
                await loop.connect_accepted_socket(lambda: _Viewer(self), conn)
            except OSError as exc:
                log.debug("control channel: a viewer left at once (%s)", exc)
                conn.close()

    def _admit(self, conn: socket.socket) -> bool:
        try:
            uid = peer_uid(conn)
        except OSError:  # no peer credentials: refused
            return False
        if uid is not None and uid != os.geteuid():
            self.counts.strangers += 1
            log.warning("control channel: refused a process of uid %d", uid)
            return False
        if len(self.viewers) >= self.max_clients:
            self.counts.over_limit += 1
            reason = f"{self.max_clients} dashboards are attached already; close one first"
            with contextlib.suppress(OSError):  # the refused peer may be gone: refused anyway
                conn.send(encode({"type": "error", "reason": reason}))
            return False
        return True


class _Viewer(asyncio.Protocol):
    """One attached dashboard's connection, as the receiver sees it."""

    def __init__(self, server: ControlServer) -> None:
        self.server = server
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self._buffer = bytearray()
        self._timer: asyncio.TimerHandle | None = None
        self._tokens = float(server.max_requests_per_s)
        self._refilled = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        self.transport.set_write_buffer_limits(high=self.server.max_unread)
        self._refilled = asyncio.get_running_loop().time()
        self.server.viewers.add(self)
        try:
            hello = {"type": "hello", "protocol": PROTOCOL, **self.server.handler.hello()}
            self.send(encode(hello))
        except Exception:  # a bug of the receiver's side must not stop it
            log.exception("control channel: the hello could not be made")
            self.transport.abort()

    def send(self, line: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(line)

    def pause_writing(self) -> None:
        """More than ``max_unread`` bytes wait for this viewer: it is dropped, never waited for."""
        self.server.counts.slow += 1
        self.server.viewers.discard(self)  # sent nothing more from now on
        log.info("control channel: dropped a viewer that stopped reading")
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while not self.transport.is_closing():
            end = self._buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._handle(line)
        if self.transport.is_closing():
            return
        if len(self._buffer) >= MAX_MESSAGE:
            self._fail(f"a message larger than {MAX_MESSAGE} bytes")
        elif self._buffer and self._timer is None:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_later(self.server.message_timeout_s, self._too_slow)
        elif not self._buffer and self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _too_slow(self) -> None:
        self._timer = None
        self._fail(f"a message not finished within {self.server.message_timeout_s:g} s")

    def _handle(self, line: bytes) -> None:
        try:
            message = decode(line)
        except ValueError as exc:  # answered to the peer with its reason
            self._fail(str(exc))
            return
        if not self._take_token():
            self._fail(f"more than {self.server.max_requests_per_s:g} requests a second")
            return
        rid = message.get("id")
        if rid is not None and (type(rid) is not int or not 0 <= rid < 2**31):
            self._fail("a request id that is not a small whole number")
            return
        op = message.get("op")
        if op not in OPS:
            self._reply(rid, f"no such request ({', '.join(OPS)} are known)")
            return
        try:
            self.server.handler.request(str(op), message)
        except (ValueError, RuntimeError) as exc:  # answered to the peer with its reason
            self._reply(rid, str(exc)[:MAX_TEXT] or "refused")
        else:
            self._reply(rid, None)

    def _take_token(self) -> bool:
        now = asyncio.get_running_loop().time()
        rate = self.server.max_requests_per_s
        self._tokens = min(rate, self._tokens + (now - self._refilled) * rate)
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def _reply(self, rid: int | None, refused: str | None) -> None:
        reply: dict[str, Any] = {"type": "reply", "id": rid, "ok": refused is None}
        if refused is not None:
            reply["reason"] = refused
        self.send(encode(reply))

    def _fail(self, reason: str) -> None:
        """Say which rule was broken, then close (abort a moment later if it is not read)."""
        self.server.counts.broke_rules += 1
        self._buffer.clear()
        self.send(encode({"type": "error", "reason": reason}))
        self.transport.close()
        asyncio.get_running_loop().call_later(1.0, self.transport.abort)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.viewers.discard(self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


# -- the viewer's side ---------------------------------------------------------------------------


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
                reader, writer = await asyncio.open_unix_connection(where, limit=MAX_MESSAGE)
            try:
                sock = writer.get_extra_info("socket")
                uid = peer_uid(sock) if sock is not None else None
                if uid is not None and uid != os.geteuid():
                    raise ControlError(f"The control socket {path} is served by another user.")
                first = await _read_message(reader)
                if first is None:
                    raise ControlError("The receiver closed its control channel.")
                if first.get("type") == "error":
                    raise ControlError(_text(first.get("reason")) or "The receiver refused.")
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
                    why = _text(message.get("reason")) or "the receiver closed the channel"
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
            raise ControlError(_text(reply.get("reason")) or "The receiver refused.")

    def close(self) -> None:
        if not self.writer.is_closing():
            self.writer.close()


async def _read_message(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, None at the end; ControlError for one too large or not JSON."""
    try:
        line = await reader.readline()
    except ValueError:  # the line went past the reader's limit
        raise ControlError(
            f"The receiver sent a message larger than {MAX_MESSAGE} bytes."
        ) from None
    if not line:
        return None
    if not line.endswith(b"\n"):
        return None  # cut off by the end of the connection
    try:
        return decode(line[:-1])
    except ValueError as exc:
        raise ControlError(f"The receiver sent {exc}.") from None
