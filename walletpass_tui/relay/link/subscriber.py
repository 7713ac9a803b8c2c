"""The laptop side's client: follow a relay channel, resume after the last cursor, reconnect.

``RelaySubscriber(url, token, after=N, on_delivery=...)``: ``run()`` streams the channel's
Server-Sent Events and awaits ``on_delivery`` for each delivery in order; the cursor advances only
after it returns (the caller stores first), so a reconnect or restart resumes after the last
delivery handled and never hands one over twice. Network failures reconnect with capped,
jittered exponential backoff; a 401 (wrong or revoked token) or a 404 (not a subscribe URL) stops
with ``RelayAuthError``/``RelayUrlError``, whose message says what to do.

The relay is not trusted. What it sends is bounded (``sse.SSEParser``: an event by the size a
delivery of ``max_body`` bytes makes, every other line, the lines of an event) and so is its
pace: no bytes for ``idle_timeout_s`` (three missed heartbeats) or no complete line for
``line_timeout_s`` drops the connection. Cursors must increase, one at a time or by gaps: an
event whose ``id:`` is not a cursor, is not above the last one handled, or lies more than
``MAX_CURSOR_JUMP`` past the newest cursor the relay announced (``: connected head=N``,
``: heartbeat head=N``) is *refused*: the connection is dropped and resumed after the last cursor
handled, so nothing after it is skipped. An event with a good cursor that cannot be read (not the
JSON of a delivery, or too large) is handed to ``on_unreadable`` (which records it) and passed: it
does not block the ones after it. After ``MISBEHAVING_AFTER`` identical refusals in a row the
state says the relay is misbehaving; the subscriber keeps retrying with backoff.

A relay whose head (``: connected head=N``, ``: heartbeat head=N``) is below the last cursor
handled has gone back: its database was restored from a backup, and it will number new
deliveries with cursors this side has already passed. The subscriber then awaits
``on_rewound(cursor, head)`` (the caller lets go of the cursors above the head), says so in its
state (``rewound``) and resumes at once after the head, so what the relay numbers from there on
is handed over, not skipped.
"""

from __future__ import annotations

import asyncio
import logging
import random
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import aiohttp

from walletpass_tui.config import DEFAULT_MAX_BODY
from walletpass_tui.relay.events import EVENT_NAME, EventError, RelayedDelivery
from walletpass_tui.relay.link.failures import (
    RelayClientError,
    RelayRefused,
    check_answer,
    describe_failure,
)
from walletpass_tui.relay.link.sse import SSEBroken, SSEComment, SSEItem, SSEMessage, SSEParser
from walletpass_tui.text import parse_ascii_int, printable

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT_S = 45.0  # three missed heartbeats: the connection is dead
BACKOFF_INITIAL_S = 0.5
BACKOFF_MAX_S = 30.0
MAX_CURSOR = 2**63 - 1  # what SQLite (and the relay) can store
MAX_CURSOR_JUMP = 1_000_000  # past the newest cursor the relay announced
MISBEHAVING_AFTER = 3  # identical refusals in a row
# The head of a delivery's event beside its body: its headers (64 KiB of them, escaped as JSON
# at most six bytes a character), its path, times and addresses.
EVENT_HEAD_ALLOWANCE = 1024 * 1024
FEED_BYTES = 64 * 1024  # handed to the parser at once


def event_limit(max_body: int) -> int:
    """The largest event a delivery of at most ``max_body`` bytes makes: the body in base64 and
    an allowance for the rest."""
    return 4 * ((max_body + 2) // 3) + EVENT_HEAD_ALLOWANCE


class _Rewound(Exception):
    """The relay's head went below the last cursor handled: resume after it at once."""


class _HandlerFailed(Exception):
    """``on_delivery`` raised: not a network problem, so not retried."""

    def __init__(self, original: Exception) -> None:
        super().__init__(str(original))
        self.original = original


@dataclass(frozen=True)
class SubscriberState:
    connected: bool = False
    cursor: int = 0
    head: int = 0  # the newest cursor the relay mentioned
    error: str | None = None  # why the last connection ended
    attempts: int = 0  # connections tried
    refusals: int = 0  # identical refusals in a row (0 once the relay makes progress)
    # How many deliveries the relay said were waiting after the cursor when it connected (None:
    # it did not say). Only shown, never trusted: the cursors rule what is taken.
    pending: int | None = None
    retry_in: float | None = None  # seconds until the next try, once a connection ended
    stopped: bool = False  # refused for good (401, 404): no next try
    # The relay's head went back below the cursor (from, to): its database was restored. The
    # last time it did; the cursor follows the relay's numbering from there on.
    rewound: tuple[int, int] | None = None

    @property
    def behind(self) -> int:
        return max(0, self.head - self.cursor)

    @property
    def misbehaving(self) -> bool:
        return self.refusals >= MISBEHAVING_AFTER


def backoff_delay(failures: int, initial: float, cap: float, rng: random.Random) -> float:
    """Exponential from ``initial``, at most ``cap``, with jitter (50-100 %)."""
    base = min(cap, initial * (2.0 ** min(failures, 30)))
    return base * (0.5 + rng.random() / 2)


Unreadable = Callable[[int, bytes, str], Awaitable[None]]
Rewound = Callable[[int, int], Awaitable[None]]


class RelaySubscriber:
    def __init__(
        self,
        url: str,
        token: str,
        *,
        on_delivery: Callable[[RelayedDelivery], Awaitable[None]],
        on_unreadable: Unreadable | None = None,
        on_rewound: Rewound | None = None,
        after: int = 0,
        on_state: Callable[[SubscriberState], None] | None = None,
        backoff_initial_s: float = BACKOFF_INITIAL_S,
        backoff_max_s: float = BACKOFF_MAX_S,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        line_timeout_s: float | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``on_unreadable(cursor, raw, why)``: an event at ``cursor`` that cannot be read, its
        data (at most the first 64 KiB when it was refused for its size) and why; the cursor
        moves past it once it returns. ``line_timeout_s`` (default: twice ``idle_timeout_s``):
        a line must end within it, however slowly its bytes come. ``on_rewound(cursor, head)``:
        the relay's head went back below ``cursor``; the subscriber resumes after ``head`` once it
        returns."""
        self.url = url.split("?", 1)[0]
        self._token = token
        self._on_delivery = on_delivery
        self._on_unreadable = on_unreadable
        self._on_rewound = on_rewound
        self._on_state = on_state
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.idle_timeout_s = idle_timeout_s
        self.line_timeout_s = line_timeout_s or 2 * idle_timeout_s
        self.max_event = event_limit(max_body)
        # aiohttp's default (True) verifies against the system's certificates.
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._rng = random.Random()
        self.state = SubscriberState(cursor=after, head=after)
        self._announced = after  # the newest head the relay announced
        self._progressed = False  # this connection moved the cursor or sent a heartbeat
        self._refusal: tuple[str, int] | None = None  # the last refusal, and where
        self._refusal_count = 0

    def __repr__(self) -> str:  # the token never appears
        return f"RelaySubscriber({self.url!r}, cursor={self.state.cursor})"

    @property
    def cursor(self) -> int:
        return self.state.cursor

    def _set(self, **changes: object) -> None:
        # Fields by name, from this class only; replace() checks the names when it runs.
        new = replace(self.state, **changes)  # type: ignore[arg-type]
        if new != self.state:
            self.state = new
            if self._on_state is not None:
                self._on_state(new)

    async def run(self) -> None:
        """Follow the channel until cancelled; raises RelayClientError on a 401 or 404."""
        failures = 0
        rewinds = 0  # connections in a row that ended with the relay going back
        timeout = aiohttp.ClientTimeout(
            total=None, connect=self.idle_timeout_s, sock_read=self.idle_timeout_s
        )
        # Compressed streams are refused, not inflated: a few kilobytes could inflate to gigabytes.
        async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as session:
            while True:
                self._progressed = False
                refused: str | None = None
                try:
                    ended = await self._follow(session)
                except RelayClientError as exc:
                    self._set(connected=False, error=str(exc), retry_in=None, stopped=True)
                    raise
                except _HandlerFailed as failed:  # the caller's own error: theirs to see
                    self._set(connected=False, error="stopped: the delivery handler failed")
                    raise failed.original from None
                except _Rewound:  # resumed after the relay's head: at once the first time
                    if self._progressed:
                        failures = 0
                    rewinds = 1 if self._progressed else rewinds + 1
                    if rewinds > 1:  # went back again with nothing in between: not hammered
                        await asyncio.sleep(
                            backoff_delay(
                                failures, self.backoff_initial_s, self.backoff_max_s, self._rng
                            )
                        )
                        failures += 1
                    continue
                except RelayRefused as exc:
                    log.info("The relay %s refused: %s", self.url, exc)
                    ended = refused = str(exc)
                except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                    ended = describe_failure(exc, self.idle_timeout_s)
                    log.info("The relay %s is not reached (%s); trying again", self.url, ended)
                if self._progressed:
                    failures = rewinds = 0
                delay = backoff_delay(
                    failures, self.backoff_initial_s, self.backoff_max_s, self._rng
                )
                if refused is not None:
                    self._refused(refused, delay)
                else:
                    self._set(connected=False, error=ended, retry_in=delay)
                await asyncio.sleep(delay)
                failures += 1

    def _refused(self, why: str, delay: float) -> None:
        where = (why, self.state.cursor)
        self._refusal_count = self._refusal_count + 1 if where == self._refusal else 1
        self._refusal = where
        self._set(connected=False, error=why, refusals=self._refusal_count, retry_in=delay)

    async def _follow(self, session: aiohttp.ClientSession) -> str:
        """One connection, until it ends (returns why) or fails (raises)."""
        self._set(attempts=self.state.attempts + 1)
        headers = {
            "Authorization": f"Bearer {self._token}",
            "Accept": "text/event-stream",
            "Accept-Encoding": "identity",
            "Last-Event-ID": str(self.state.cursor),
        }
        # Redirects are not followed: the token would go wherever the answer points.
        async with session.get(
            self.url, headers=headers, ssl=self._ssl, allow_redirects=False
        ) as response:
            check_answer(response, self.url)
            if response.status != 200:
                return f"the relay answered {response.status}"
            await self._read(response)
        return "the relay closed the stream"

    async def _read(self, response: aiohttp.ClientResponse) -> None:
        """Parse and handle the stream until it ends; a line must end within line_timeout_s."""
        parser = SSEParser(self.max_event)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.line_timeout_s
        lines = 0
        while True:
            waiting = asyncio.timeout_at(deadline)
            try:
                async with waiting:
                    chunk = await response.content.readany()
            except TimeoutError:
                if waiting.expired():
                    raise RelayRefused(
                        f"the relay sent no complete line in {self.line_timeout_s:g} s"
                    ) from None
                raise
            if not chunk:
                return
            for offset in range(0, len(chunk), FEED_BYTES):
                for item in parser.feed(chunk[offset : offset + FEED_BYTES]):
                    await self._handle(item)
            if parser.lines != lines:
                lines = parser.lines
                deadline = loop.time() + self.line_timeout_s

    async def _handle(self, item: SSEItem) -> None:
        if isinstance(item, SSEComment):
            await self._check_head(item.text)
        if not self.state.connected:
            # Connected, with what the relay's first comment says (its head, how many wait):
            # one change, so nothing reads "up to date" before the backlog is known.
            head, pending = self._announced_in(item)
            self._set(
                connected=True,
                error=None,
                retry_in=None,
                head=max(self.state.head, head if head is not None else 0),
                pending=pending,
            )
        if isinstance(item, SSEComment):
            self._comment(item.text)
        elif isinstance(item, SSEMessage):
            await self._message(item)
        else:
            await self._broken(item)

    def _announced_in(self, item: SSEItem) -> tuple[int | None, int | None]:
        """The head and the count of waiting deliveries a ``connected`` comment announces."""
        if not isinstance(item, SSEComment):
            return None, None
        word, _, rest = item.text.partition(" ")
        if word != "connected":
            return None, None
        fields = _fields(rest)
        return fields.get("head"), fields.get("pending")

    async def _check_head(self, text: str) -> None:
        """A head announced below the last cursor handled: the relay went back (a restore)."""
        word, _, rest = text.partition(" ")
        if word not in ("connected", "heartbeat"):
            return
        head = _fields(rest).get("head")
        cursor = self.state.cursor
        if head is None or head >= cursor:
            return
        log.info("The relay %s went back from cursor %d to %d", self.url, cursor, head)
        if self._on_rewound is not None:
            try:
                await self._on_rewound(cursor, head)
            except Exception as exc:
                raise _HandlerFailed(exc) from exc
        self._announced = head
        self._refusal, self._refusal_count = None, 0
        self._set(
            cursor=head,
            head=head,
            rewound=(cursor, head),
            connected=False,
            error=None,
            refusals=0,
            pending=None,
        )
        raise _Rewound

    def _comment(self, text: str) -> None:
        word, _, rest = text.partition(" ")
        if word not in ("connected", "heartbeat"):
            return
        head = _fields(rest).get("head")
        if head is not None:
            self._announced = max(self._announced, head)
            self._set(head=max(head, self.state.cursor))
        if word == "heartbeat":
            # Sent only when the relay has nothing more to send: what came before was read.
            self._progressed = True
            if self.state.refusals:
                self._set(refusals=0)

    async def _message(self, item: SSEMessage) -> None:
        if item.event != EVENT_NAME:
            return  # another kind of event: not for this client
        cursor = self._checked_cursor(item.id)
        try:
            delivery = RelayedDelivery.parse(cursor, item.raw)
        except EventError as exc:  # kept and shown as unreadable, with its reason
            await self._pass_unreadable(cursor, item.raw, str(exc))
            return
        try:
            await self._on_delivery(delivery)
        except Exception as exc:
            raise _HandlerFailed(exc) from exc
        self._advance(cursor)

    async def _broken(self, item: SSEBroken) -> None:
        """Past a bound: a delivery whose cursor came first is recorded and passed; the
        connection is dropped either way (the rest of the event is not read)."""
        why = f"the relay sent {item.reason}"
        if item.event == EVENT_NAME and item.id is not None:
            cursor = self._checked_cursor(item.id)
            await self._pass_unreadable(cursor, item.head, f"it is {item.reason}")
            why += f" (delivery {cursor}, recorded as rejected)"
        raise RelayRefused(why)

    def _checked_cursor(self, text: str | None) -> int:
        """The event's cursor, or RelayRefused: it must increase, and not run past the relay's
        announced head by more than MAX_CURSOR_JUMP."""
        last = self.state.cursor
        if text is None:
            raise RelayRefused(f"the relay sent a delivery without an id after {last}")
        cursor = _cursor_value(text)
        if cursor is None:
            raise RelayRefused(
                f"the relay sent a delivery whose id {printable(text, 40)!r} is not a cursor "
                f"(a whole number from 1 to {MAX_CURSOR})"
            )
        if cursor <= last:
            raise RelayRefused(
                f"the relay sent delivery {cursor} after {last}: cursors must increase"
            )
        head = max(self._announced, last)
        if cursor - head > MAX_CURSOR_JUMP:
            raise RelayRefused(
                f"the relay sent delivery {cursor}, more than {MAX_CURSOR_JUMP:,} past the newest "
                f"it announced ({head})"
            )
        return cursor

    async def _pass_unreadable(self, cursor: int, raw: bytes, why: str) -> None:
        if self._on_unreadable is not None:
            try:
                await self._on_unreadable(cursor, raw, why)
            except Exception as exc:
                raise _HandlerFailed(exc) from exc
        self._advance(cursor)

    def _advance(self, cursor: int) -> None:
        self._progressed = True
        state = self.state
        if state.refusals or self._refusal is not None:
            self._refusal, self._refusal_count = None, 0
            self._set(cursor=cursor, head=max(state.head, cursor), refusals=0)
            return
        # The cursor moves without a notice: ``on_state`` tells of the connection and of the
        # relay's head as it announces it, so its listeners do no work for every delivery.
        self.state = replace(state, cursor=cursor, head=max(state.head, cursor), refusals=0)


def _fields(text: str) -> dict[str, int]:
    """``name=N`` parts of a comment whose N is a number a cursor may be (others left out)."""
    found: dict[str, int] = {}
    for part in text.split()[:8]:
        name, _, value = part.partition("=")
        number = _cursor_value(value, lowest=0)
        if number is not None and name in ("head", "pending"):
            found[name] = number
    return found


def _cursor_value(text: str, lowest: int = 1) -> int | None:
    """A cursor written as the relay writes it (ASCII digits), from ``lowest`` to MAX_CURSOR;
    else None."""
    value = parse_ascii_int(text, max_digits=19)
    return value if value is not None and lowest <= value <= MAX_CURSOR else None
