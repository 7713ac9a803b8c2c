"""``relay follow``: hand each relayed delivery to a local receiver as the service would have.

Every delivery from the relay is POSTed to ``--to`` (``walletpass-tui listen``, the dashboard's
receiver, or your own app) with its raw body and its headers exactly as the relay received them,
so the receiver verifies the real signature with the real secret, stores and forwards as for a
direct POST. Two headers are added: ``X-Forwarded-For`` (the client the relay saw; a receiver on
loopback trusts it) and ``X-Walletpass-Relay`` (the channel and the relay cursor).

The cursor is saved (0600) after the receiver answered, so a restart resumes after the last
delivery handed over. A 2xx or a 4xx (a verdict: the receiver recorded it) advances it; a 5xx or
no answer is retried with capped backoff, as the service would retry. An event the relay sent
that cannot be read (not a delivery, or larger than one can be) is skipped, with a line saying
why (``on_skipped``), and its cursor saved: it does not block the ones after it. The cursor saved
is only ever one the subscriber accepted (increasing, near the relay's announced head), or the
relay's head when it went back below the cursor (its database restored from a backup): then
what it numbers after that head is handed over, not skipped.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from walletpass_tui.config import DEFAULT_MAX_BODY
from walletpass_tui.private_files import read_private_file, write_private_file
from walletpass_tui.relay.events import RelayedDelivery
from walletpass_tui.relay.link.subscriber import (
    BACKOFF_MAX_S,
    RelaySubscriber,
    SubscriberState,
    backoff_delay,
)
from walletpass_tui.text import parse_ascii_int, printable
from walletpass_tui.webhooks.relay_channel import relay_channel

CURSOR_DIGITS = 19  # a cursor is a 64-bit row id
RELAY_HEADER = "X-Walletpass-Relay"
# Hop-by-hop and framing headers are the local connection's own, never copied.
_NOT_COPIED = {
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "x-forwarded-for",
    RELAY_HEADER.lower(),
}


def cursor_path(home: Path, subscribe_url: str) -> Path:
    """Where the cursor of the channel a subscribe URL follows is kept, whatever way the URL is
    spelt (the channel is not secret). One saved by an older version under the URL's own name
    is taken over the first time."""
    folder = Path(home) / "relay-cursors"
    path = folder / f"{_digest(relay_channel(subscribe_url))}.cursor"
    older = folder / f"{_digest(subscribe_url.split('?', 1)[0])}.cursor"
    if older != path and not path.exists() and older.exists():
        with contextlib.suppress(OSError):  # not taken over: the channel starts over at 0
            older.rename(path)
    return path


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_cursor(path: Path) -> int:
    """The saved cursor; 0 (start over) when there is none or the file is not one we wrote."""
    try:
        # A regular file of a cursor and its newline; a FIFO, a device or a longer file is not one.
        data = read_private_file(path, CURSOR_DIGITS + 1)
    except OSError:  # no cursor file (yet), or not one we wrote: start from 0
        return 0
    return parse_ascii_int(data.removesuffix(b"\n"), max_digits=CURSOR_DIGITS) or 0


@dataclass(frozen=True)
class Skipped:
    """An event at ``cursor`` the relay sent that cannot be read, and why."""

    cursor: int
    why: str


@dataclass(frozen=True)
class Retrying:
    """A delivery the receiver did not take (no answer, or a 5xx): tried again in ``delay_s``."""

    delivery: RelayedDelivery
    why: str
    tries: int
    delay_s: float


@dataclass(frozen=True)
class Handed:
    """One delivery handed to the local receiver, and its answer."""

    delivery: RelayedDelivery
    status: int
    tries: int


class RelayFollower:
    def __init__(
        self,
        subscribe_url: str,
        token: str,
        target: str,
        cursor_file: Path,
        *,
        on_handed: Callable[[Handed], None] | None = None,
        on_skipped: Callable[[Skipped], None] | None = None,
        on_state: Callable[[SubscriberState], None] | None = None,
        on_retrying: Callable[[Retrying], None] | None = None,
        on_rewound: Callable[[int, int], None] | None = None,
        backoff_initial_s: float = 0.5,
        backoff_max_s: float = BACKOFF_MAX_S,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self.target = target
        self.cursor_file = cursor_file
        self._on_handed = on_handed
        self._on_skipped = on_skipped
        self._on_retrying = on_retrying
        self._on_rewound = on_rewound
        self._rng = random.Random()
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self._session: aiohttp.ClientSession | None = None
        self.subscriber = RelaySubscriber(
            subscribe_url,
            token,
            after=load_cursor(cursor_file),
            on_delivery=self._hand_over,
            on_unreadable=self._skip,
            on_rewound=self._rewound,
            on_state=on_state,
            backoff_initial_s=backoff_initial_s,
            backoff_max_s=backoff_max_s,
            max_body=max_body,
        )

    async def run(self) -> None:
        """Until cancelled; raises RelayClientError on a 401/404 from the relay."""
        async with aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=30), auto_decompress=False
        ) as session:
            self._session = session
            try:
                await self.subscriber.run()
            finally:
                self._session = None

    async def _hand_over(self, delivery: RelayedDelivery) -> None:
        assert self._session is not None
        headers: list[tuple[str, str]] = [
            (k, v) for k, v in delivery.headers if k.lower() not in _NOT_COPIED
        ]
        if delivery.client or delivery.source:
            headers.append(("X-Forwarded-For", delivery.client or delivery.source or ""))
        # The channel's name comes from the relay: escaped to ASCII, never a line of its own.
        channel = printable(delivery.channel, 80).encode("ascii", "backslashreplace").decode()
        headers.append((RELAY_HEADER, f"channel={channel}; cursor={delivery.cursor}"))
        tries = 0
        while True:
            tries += 1
            try:
                async with self._session.post(
                    self.target, data=delivery.body, headers=headers, allow_redirects=False
                ) as response:
                    await response.read()
                    status = response.status
                why = f"it answered {status}"
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                # no answer: status 0 says so to the caller
                status = 0
                why = _no_answer(exc)
            if 200 <= status < 500:
                break
            delay = backoff_delay(tries - 1, self.backoff_initial_s, self.backoff_max_s, self._rng)
            if self._on_retrying is not None:
                self._on_retrying(Retrying(delivery, why, tries, delay))
            await asyncio.sleep(delay)
        await self._save(delivery.cursor)
        if self._on_handed is not None:
            self._on_handed(Handed(delivery, status, tries))

    async def _skip(self, cursor: int, raw: bytes, why: str) -> None:
        await self._save(cursor)
        if self._on_skipped is not None:
            self._on_skipped(Skipped(cursor, why))

    async def _rewound(self, cursor: int, head: int) -> None:
        """The relay went back to ``head`` (its database restored): what it numbers after it is
        handed over, from this run and the next."""
        await self._save(head)
        if self._on_rewound is not None:
            self._on_rewound(cursor, head)

    async def _save(self, cursor: int) -> None:
        await asyncio.to_thread(write_private_file, self.cursor_file, f"{cursor}\n".encode())


def _no_answer(exc: BaseException) -> str:
    """Why the receiver gave no answer, in a few words."""
    if isinstance(exc, aiohttp.ClientConnectorError):
        cause = exc.os_error
        where = printable(f"{exc.host}:{exc.port}", 120)
        if isinstance(cause, ConnectionRefusedError):
            return f"nothing answers at {where} (connection refused): is it running?"
        return f"cannot connect to {where} ({printable(cause.strerror or str(cause), 120)})"
    if isinstance(exc, TimeoutError):
        return "no answer within 30 s"
    text = (str(exc) or type(exc).__name__).splitlines()[0]
    return f"no answer ({printable(text, 120)})"
