"""The laptop side's client: follow a relay channel, resume after the last cursor, reconnect.

``RelaySubscriber(url, token, after=N, on_delivery=...)``: ``run()`` streams the channel's
Server-Sent Events and awaits ``on_delivery`` for each delivery in order; the cursor advances only
after it returns (the caller stores first), so a reconnect or restart resumes after the last
delivery handled and never hands one over twice. Network failures reconnect with capped,
jittered exponential backoff; a 401 (wrong or revoked token) or a 404 (not a subscribe URL) stops
with ``RelayAuthError``/``RelayUrlError``, whose message says what to do.
"""

from __future__ import annotations

import asyncio
import random
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import aiohttp

from walletpass_tui.errors import WalletpassError
from walletpass_tui.relay.events import EVENT_NAME, EventError, RelayedDelivery
from walletpass_tui.text import parse_ascii_int

MAX_LINE = 8 * 1024 * 1024  # an event line: a 1 MiB body in base64 with headers fits easily
DEFAULT_IDLE_TIMEOUT_S = 45.0  # three missed heartbeats: the connection is dead
BACKOFF_INITIAL_S = 0.5
BACKOFF_MAX_S = 30.0
CURSOR_DIGITS = 19  # a cursor is a 64-bit row id
# An event id is read up to twice that, so a number past what can be stored reaches the caller,
# which stops (this is not a relay); longer ones are not cursors at all and are skipped.
ID_DIGITS = 2 * CURSOR_DIGITS
RETRY_DIGITS = 9  # an SSE retry hint in milliseconds: under 12 days


class RelayClientError(WalletpassError):
    """The relay cannot be followed; the message says what to do."""


class RelayAuthError(RelayClientError):
    pass


class RelayUrlError(RelayClientError):
    pass


class _HandlerFailed(Exception):
    """``on_delivery`` raised: not a network problem, so not retried."""

    def __init__(self, original: Exception) -> None:
        super().__init__(str(original))
        self.original = original


# -- Server-Sent Events --------------------------------------------------------------------------


@dataclass(frozen=True)
class SSEMessage:
    event: str
    data: str
    id: str | None  # the last event id in force when it was dispatched


@dataclass(frozen=True)
class SSEComment:
    text: str


class SSEParser:
    """Incremental parser (the WHATWG rules): feed bytes in any pieces, get messages and comments."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self.max_line = max_line
        self._buffer = b""
        self._pending_cr = False
        self._event = ""
        self._data: list[str] = []
        self._has_data = False
        self.last_id: str | None = None
        self.retry_ms: int | None = None

    def feed(self, chunk: bytes) -> list[SSEMessage | SSEComment]:
        out: list[SSEMessage | SSEComment] = []
        if self._pending_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the \n of a \r\n split across pieces
        self._pending_cr = False
        data = self._buffer + chunk
        start = 0
        size = len(data)
        while start < size:
            cr = data.find(b"\r", start)
            lf = data.find(b"\n", start)
            ends = [i for i in (cr, lf) if i >= 0]
            if not ends:
                break
            end = min(ends)
            line = data[start:end]
            if data[end : end + 1] == b"\r":
                if end + 1 < size and data[end + 1 : end + 2] == b"\n":
                    start = end + 2
                else:
                    start = end + 1
                    if start == size:
                        self._pending_cr = True
            else:
                start = end + 1
            self._line(line.decode("utf-8", "replace"), out)
        self._buffer = data[start:]
        if len(self._buffer) > self.max_line:
            raise RelayClientError(
                f"The relay sent a line longer than {self.max_line} bytes; this is not a relay."
            )
        return out

    def _line(self, line: str, out: list[SSEMessage | SSEComment]) -> None:
        if not line:
            if self._has_data:
                out.append(
                    SSEMessage(self._event or "message", "\n".join(self._data), self.last_id)
                )
            self._event, self._data, self._has_data = "", [], False
            return
        if line.startswith(":"):
            out.append(SSEComment(line[1:].lstrip(" ")))
            return
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
            self._has_data = True
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        elif name == "retry":
            retry_ms = parse_ascii_int(value, max_digits=RETRY_DIGITS)
            if retry_ms is not None:
                self.retry_ms = retry_ms


# -- the client ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SubscriberState:
    connected: bool = False
    cursor: int = 0
    head: int = 0  # the newest cursor the relay mentioned
    error: str | None = None  # why the last connection ended
    attempts: int = 0  # connections tried

    @property
    def behind(self) -> int:
        return max(0, self.head - self.cursor)


def backoff_delay(failures: int, initial: float, cap: float, rng: random.Random) -> float:
    """Exponential from ``initial``, at most ``cap``, with jitter (50-100 %)."""
    base = min(cap, initial * (2 ** min(failures, 30)))
    return base * (0.5 + rng.random() / 2)


class RelaySubscriber:
    def __init__(
        self,
        url: str,
        token: str,
        *,
        on_delivery: Callable[[RelayedDelivery], Awaitable[None]],
        after: int = 0,
        on_state: Callable[[SubscriberState], None] | None = None,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.url = url.split("?", 1)[0]
        self._token = token
        self._on_delivery = on_delivery
        self._on_state = on_state
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.idle_timeout_s = idle_timeout_s
        self._ssl = ssl_context
        self._rng = random.Random()
        self.state = SubscriberState(cursor=after)

    def __repr__(self) -> str:  # the token never appears
        return f"RelaySubscriber({self.url!r}, cursor={self.state.cursor})"

    @property
    def cursor(self) -> int:
        return self.state.cursor

    def _set(self, **changes: object) -> None:
        new = replace(self.state, **changes)  # type: ignore[arg-type]
        if new != self.state:
            self.state = new
            if self._on_state is not None:
                self._on_state(new)

    async def run(self) -> None:
        """Follow the channel until cancelled; raises RelayClientError on a 401 or 404."""
        failures = 0
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.idle_timeout_s, sock_read=self.idle_timeout_s
        )
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                try:
                    received = await self._follow(session)
                except RelayClientError as exc:
                    self._set(connected=False, error=str(exc))
                    raise
                except _HandlerFailed as failed:  # the caller's own error: theirs to see
                    self._set(connected=False, error="stopped: the delivery handler failed")
                    raise failed.original from None
                except (aiohttp.ClientError, TimeoutError, OSError, EventError) as exc:
                    received = False
                    self._set(connected=False, error=_describe(exc))
                if received:
                    failures = 0
                await asyncio.sleep(
                    backoff_delay(failures, self.backoff_initial_s, self.backoff_max_s, self._rng)
                )
                failures += 1

    async def _follow(self, session: aiohttp.ClientSession) -> bool:
        """One connection; True if the relay answered with a stream (the backoff starts over)."""
        self._set(attempts=self.state.attempts + 1)
        headers = {
            "Authorization": f"Bearer {self._token}",
            "Accept": "text/event-stream",
            "Last-Event-ID": str(self.state.cursor),
        }
        async with session.get(self.url, headers=headers, ssl=self._ssl) as response:
            if response.status == 401:
                raise RelayAuthError(
                    "The relay refused the token (401: wrong or revoked); get a new one with "
                    "'walletpass-tui relay channel token NAME' on the relay and pass it with "
                    "--relay-token."
                )
            if response.status == 404:
                raise RelayUrlError(
                    f"{self.url} is not a relay subscribe URL (404); copy it from "
                    "'walletpass-tui relay channel add'."
                )
            if response.status != 200:
                self._set(connected=False, error=f"the relay answered {response.status}")
                return False
            # Connected once the relay's first line is read (its ": connected head=N" comment):
            # the state then says at once how far behind this subscriber starts.
            parser = SSEParser()
            async for chunk in response.content.iter_any():
                for item in parser.feed(chunk):
                    await self._handle(item)
        self._set(connected=False, error="the relay closed the stream")
        return True

    async def _handle(self, item: SSEMessage | SSEComment) -> None:
        if isinstance(item, SSEComment):
            head = _head(item.text)
            if head is not None:
                self._set(head=max(head, self.state.cursor), connected=True, error=None)
            elif not self.state.connected:
                self._set(connected=True, error=None)
            return
        if not self.state.connected:
            self._set(connected=True, error=None)
        cursor = None if item.id is None else parse_ascii_int(item.id, max_digits=ID_DIGITS)
        if item.event != EVENT_NAME or cursor is None:
            return
        if cursor <= self.state.cursor:
            return  # already handled (a relay replaying after a restart, say)
        delivery = RelayedDelivery.parse(cursor, item.data)
        try:
            await self._on_delivery(delivery)
        except Exception as exc:
            raise _HandlerFailed(exc) from exc
        # The cursor moves without a notice: ``on_state`` tells of the connection and of the
        # relay's head as it announces it, so its listeners do no work for every delivery.
        state = self.state
        self.state = SubscriberState(
            state.connected, cursor, max(state.head, cursor), state.error, state.attempts
        )


def _head(text: str) -> int | None:
    for word in text.split():
        name, _, value = word.partition("=")
        if name == "head":
            return parse_ascii_int(value, max_digits=ID_DIGITS)
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "no data from the relay in time"
    text = str(exc) or type(exc).__name__
    return f"cannot reach the relay ({text})"
