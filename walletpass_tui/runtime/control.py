"""The local control channel of a running receiver: attached dashboards hear of new deliveries and
of the receiver's state, and ask it to pause acknowledgements or inject failures. This module is
what goes over it (messages, their bounds, the socket's path and peer); the receiver's side is
``control_server.py``, a viewer's ``control_client.py``.

Transport: a Unix stream socket, ``<home>/run/control.sock`` (``instance.py``), mode 0600 inside
the 0700 run directory, so only this user can reach it; where the system tells (``SO_PEERCRED``,
Linux) each side checks the other's uid as well, and a peer of another uid is closed before it is
sent a byte.

Wire format: one JSON object per line, ASCII, at most ``MAX_MESSAGE`` bytes with its newline
and ``MAX_DEPTH`` levels of arrays and objects, both ways (what the receiver sends, at most
``MAX_TOLD``: one header of ``listen --header`` takes up to 4,096 characters)::

    receiver -> viewer
      {"type": "hello", "protocol": 1, "instance": {...}, "state": {...}, "upto": N}   at once
      {"type": "rows", "upto": N}        attempts up to id N are committed: read them from the
                                         history (the message never carries a delivery)
      {"type": "forward", ...}           a forward or replay was answered (ForwardNote)
      {"type": "state", "state": {...}}  paused, failures injected, relay link... (ReceiverStatus)
      {"type": "target", "target": URL, "insecure": false, "ca_file": PATH}   after the hello, one
      {"type": "header", "target": URL, "name": N, "value": V}               per --forward-to
                                         target and one per header listen adds to it (TargetNote):
                                         an attached dashboard's replays and checks to that target
                                         carry them too; values never shown but masked
      {"type": "reply", "id": K, "ok": true} or {..., "ok": false, "reason": "..."}
      {"type": "error", "reason": "..."} and the connection is closed
      {"type": "removed", "deleted": N}  a prune took N more attempts out of the history (at most
                                         twice a second, and once when it ends; to every viewer):
                                         read the counts and rows shown from the history again
      {"type": "pruned", "deleted": N}   to the viewer that asked for a prune only: how many
                                         attempts it deleted so far (at most ten a second)
      {"type": "pruned", "deleted": N, "end": "done"|"stopped"|"failed", "reason": "..."}
                                         once, when it ended (reason: why it stopped or failed)

    viewer -> receiver
      {"id": K, "op": "pause", "paused": true}
      {"id": K, "op": "fail_first", "attempts": 2}
      {"id": K, "op": "respond", "status": 503}     (null: answer normally)
      {"id": K, "op": "delay", "seconds": 1.5}
      {"id": K, "op": "prune", "before_ms": T}  delete the attempts received before T (ms since
                                         1970, not after the receiver's clock) on the receiver's
                                         own writer, between its commits (``events prune``); one
                                         prune at a time; it stops when the viewer leaves
      {"id": K, "op": "prune_stop"}       stop the viewer's prune after the step under way

The receiver never waits for a viewer: a message is written to the viewer's socket buffer and
the loop moves on; a viewer that leaves more than ``MAX_UNREAD`` bytes unread is dropped (it
reconnects and reads what it missed from the history). Bounds on what viewers send: at most
``MAX_CLIENTS`` at once, ``MAX_MESSAGE`` bytes a message, a message begun must end within
``MESSAGE_TIMEOUT_S``, ``MAX_REQUESTS_PER_S`` requests a second each. A message that breaks a
rule is answered with an error saying which, and the connection closed (the server's bounds live
in ``control_server.py``, the client's timeouts in ``control_client.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import struct
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from walletpass_tui.errors import WalletpassError
from walletpass_tui.webhooks.injection import RESPOND_RANGE

log = logging.getLogger(__name__)

PROTOCOL = 1
MAX_MESSAGE = 4096  # a message a viewer sends
MAX_TOLD = 16 * 1024  # a message the receiver sends: room for one header value, escaped
OPS = ("pause", "fail_first", "respond", "delay")  # what the failures injected are changed by
PRUNE = "prune"
PRUNE_STOP = "prune_stop"
PRUNE_OPS = (PRUNE, PRUNE_STOP)
REQUESTS = OPS + PRUNE_OPS  # every request a receiver of this version takes
# How a prune ends, as webhooks/store/prune_job.py says it.
PRUNE_DONE = "done"
PRUNE_STOPPED = "stopped"
PRUNE_FAILED = "failed"
PRUNE_ENDS = (PRUNE_DONE, PRUNE_STOPPED, PRUNE_FAILED)
CLOCK_SLACK_MS = 60_000  # a prune's cutoff may be this far past the receiver's clock, no further
# The field of the receiver's Injection each request changes (webhooks/injection.py).
CHANGES = {
    "pause": "paused",
    "fail_first": "fail_first",
    "respond": "respond_status",
    "delay": "delay_s",
}
MAX_TEXT = 300  # characters of any text field
MAX_DEPTH = 8  # arrays and objects inside one another in a message (the protocol's go 3 deep)
MAX_TARGETS = 16
_SUN_PATH = 100  # a socket's path must fit sockaddr_un (104 bytes on macOS, 108 on Linux)


class ControlError(WalletpassError):
    """The control channel cannot be used, or the receiver refused a request (why, in words)."""


# -- the wire ------------------------------------------------------------------------------------


def encode(message: Mapping[str, Any], limit: int = MAX_MESSAGE) -> bytes:
    """One line: compact ASCII JSON (every other character escaped) and a newline."""
    line = json.dumps(message, separators=(",", ":"), ensure_ascii=True).encode() + b"\n"
    if len(line) > limit:
        raise ValueError(f"a control message of {len(line)} bytes (at most {limit})")
    return line


def decode(line: bytes, limit: int = MAX_MESSAGE) -> dict[str, Any]:
    """The JSON object in one line (without its newline); ValueError saying what is wrong. Both
    sides read through it: the receiver what a viewer sends (``MAX_MESSAGE``), a viewer what the
    receiver sends (``MAX_TOLD``)."""
    if len(line) >= limit:
        raise ValueError(f"a message larger than {limit} bytes")
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


def bounded_text(value: object, limit: int = MAX_TEXT) -> str | None:
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
            injection=bounded_text(raw.get("injection")) or "",
            forwarding=raw.get("forwarding") is True,
            forward_targets=tuple(
                t for t in (bounded_text(v) for v in (targets or [])[:MAX_TARGETS]) if t
            )
            if isinstance(targets, list)
            else (),
            public_url=bounded_text(raw.get("public_url")),
            relay=bounded_text(raw.get("relay")),
            relay_up=raw.get("relay_up") is True,
            tunnel=bounded_text(raw.get("tunnel")),
            history_problem=bounded_text(raw.get("history_problem")),
            controls=tuple(op for op in REQUESTS if isinstance(controls, list) and op in controls),
        )


@dataclass(frozen=True)
class TargetNote:
    """What listen adds to the requests to one ``--forward-to`` target (its ``--header``s,
    ``--insecure``, where its ``--ca-bundle`` is), told to attached dashboards so that a replay
    or check they send there carries the same, as the plain dashboard's does. Only a viewer of
    this user hears it (the socket is 0600, its peer's uid checked)."""

    target: str
    headers: tuple[tuple[str, str], ...] = ()
    insecure: bool = False
    ca_file: str | None = None

    def to_wire(self) -> list[dict[str, Any]]:
        """The ``target`` message, then one ``header`` message each."""
        target = bounded_text(self.target)  # as the state's forward_targets are cut
        told: list[dict[str, Any]] = [
            {"type": "target", "target": target, "insecure": self.insecure}
            | ({"ca_file": self.ca_file} if self.ca_file else {})
        ]
        told.extend(
            {"type": "header", "target": target, "name": name, "value": value}
            for name, value in self.headers
        )
        return told


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
            "webhook_id": bounded_text(self.webhook_id),
            "kind": bounded_text(self.kind, 20),
            "target": bounded_text(self.target),
            "status": self.status,
            "latency_ms": round(self.latency_ms, 3),
            "error": bounded_text(self.error),
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
            webhook_id=bounded_text(raw.get("webhook_id")),
            kind=bounded_text(raw.get("kind"), 20) or "",
            target=bounded_text(raw.get("target")) or "",
            status=status if type(status) is int and 100 <= status <= 599 else None,
            latency_ms=float(latency)
            if isinstance(latency, int | float) and not isinstance(latency, bool)
            else 0.0,
            error=bounded_text(raw.get("error")),
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


def bind_private(path: Path, backlog: int) -> socket.socket:
    """A Unix socket listening at ``path`` (one left there before is replaced: the caller holds
    the home), mode 0600, non-blocking."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with contextlib.suppress(FileNotFoundError):  # none left behind: nothing to remove
            os.unlink(path)
        with reachable_path(path) as where:
            sock.bind(where)
        os.chmod(path, 0o600)  # the 0700 directory already keeps others out
        sock.listen(backlog)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


async def accept_each(
    sock: socket.socket, what: str, serve: Callable[[socket.socket], Awaitable[None]]
) -> None:
    """``serve`` each connection ``sock`` accepts (non-blocking), one after another, until
    cancelled; a failed accept (out of descriptors, say) is said in the log and tried again."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            conn, _ = await loop.sock_accept(sock)
        except OSError as exc:  # the receiver goes on regardless
            log.warning("%s: accept failed (%s)", what, exc)
            await asyncio.sleep(0.1)
            continue
        conn.setblocking(False)
        await serve(conn)


def prune_cutoff(message: Mapping[str, Any], now_ms: int) -> int:
    """The cutoff of a ``prune`` request: a whole number of milliseconds since 1970, not
    negative and not past ``now_ms`` (the receiver's clock) by more than ``CLOCK_SLACK_MS``
    (a later one would delete the deliveries that arrive while it runs); ValueError saying so."""
    before = message.get("before_ms")
    if type(before) is not int or not 0 <= before <= now_ms + CLOCK_SLACK_MS:
        raise ValueError(
            "prune takes before_ms: a whole number of milliseconds since 1970, not in the future"
        )
    return before


@dataclass(frozen=True)
class PruneNote:
    """How far a prune the receiver runs got, as the viewer that asked hears it."""

    deleted: int
    end: str | None = None  # one of PRUNE_ENDS once it has ended
    reason: str | None = None

    def to_wire(self) -> dict[str, Any]:
        told: dict[str, Any] = {"type": "pruned", "deleted": self.deleted}
        if self.end is not None:
            told["end"] = self.end
            told["reason"] = bounded_text(self.reason)
        return told

    @classmethod
    def from_wire(cls, raw: Mapping[str, Any]) -> PruneNote:
        deleted = raw.get("deleted")
        if type(deleted) is not int or not 0 <= deleted < 2**63:
            raise ValueError("a prune's progress without a valid count")
        end = raw.get("end")
        if end is not None and end not in PRUNE_ENDS:
            raise ValueError("a prune's end that is not one of " + ", ".join(PRUNE_ENDS))
        return cls(deleted=deleted, end=end, reason=bounded_text(raw.get("reason")))


class Controlled(Protocol):
    """What the requests of ``OPS`` change in a receiver (``DeliveryRuntime``)."""

    def pause_acks(self, paused: bool) -> None: ...

    def fail_first(self, attempts: int) -> None: ...

    def respond(self, status: int | None) -> None: ...

    def delay(self, seconds: float) -> None: ...


def apply_request(receiver: Controlled, op: str, message: Mapping[str, Any]) -> None:
    """Do request ``op`` with ``message``'s fields, each checked first: ValueError naming the
    rule a field broke (answered to a viewer as it is)."""
    if op == "pause":
        paused = message.get("paused")
        if type(paused) is not bool:
            raise ValueError("pause takes paused: true or false")
        receiver.pause_acks(paused)
    elif op == "fail_first":
        attempts = message.get("attempts")
        if type(attempts) is not int or not 0 <= attempts <= 1000:
            raise ValueError("fail_first takes attempts from 0 to 1000")
        receiver.fail_first(attempts)
    elif op == "respond":
        status = message.get("status")
        if status is not None and type(status) is not int:
            raise ValueError(f"respond takes a final HTTP status {RESPOND_RANGE}, or null")
        receiver.respond(status)  # a ValueError with the rule when it cannot be an answer
    elif op == "delay":
        seconds = message.get("seconds")
        if not isinstance(seconds, int | float) or isinstance(seconds, bool):
            raise ValueError("delay takes seconds from 0 to 60")
        if not 0 <= seconds <= 60:
            raise ValueError("delay takes seconds from 0 to 60")
        receiver.delay(float(seconds))
    else:
        raise ValueError(f"no such request: {op}")
