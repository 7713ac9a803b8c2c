"""The records of one delivery and its forwards, and the constants every layer shares.

Nothing here touches SQLite, the network or the screen: the receiver, the forwarder, the command
line and the dashboard all read these, and the store (``webhooks/store/``) writes and reads them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final, Literal, Protocol

from walletpass_tui.errors import WalletpassError

# The words stored in the history's columns, each a closed set (``reasons.Reason`` holds the
# reasons). The constants are the only spelling code uses.
StoredVerdict = Literal["verified", "rejected"]
VERIFIED: Final = "verified"
REJECTED: Final = "rejected"

# Forwards and replays: kind (what made it), mode (how it was signed) and state.
ForwardKind = Literal["forward", "replay"]
ForwardMode = Literal["original", "resign"]
ForwardState = Literal["pending", "done", "failed", "given up"]
FORWARD: Final = "forward"
REPLAY: Final = "replay"
CHECK_MODE: Final = "check"  # the mode of the replay rows recording the check's requests
ORIGINAL: Final = "original"
RESIGN: Final = "resign"
PENDING: Final = "pending"
DONE: Final = "done"
FAILED: Final = "failed"
GIVEN_UP: Final = "given up"

# Where an attempt came from: a sender (the service, or anyone posting to the receiver), or the
# ``check`` battery, which records each request it sends to the user's app with a note that
# starts with one of these (``check pass: <case> → <answer>``). When the app checked is this
# home's own receiver, the receiver keeps its copy of each request too, noted ``check copy:``
# (it knows them by CHECK_HEADER, see home_secret.check_token): not a delivery either.
Source = Literal["received", "check"]
RECEIVED: Final = "received"
CHECK: Final = "check"
CHECK_COPY = "check copy:"
CHECK_NOTE_PREFIXES = ("check pass:", "check fail:", "check warn:", CHECK_COPY)
CHECK_HEADER: Final = "Walletpass-Check"  # what check adds to the requests it sends here
# The SQL test of the same (a NULL note is not one), the prefixes as parameters.
CHECK_NOTE_SQL = "COALESCE(substr({note}, 1, 11) IN ({marks}), 0)".replace(
    "{marks}", ", ".join("?" * len(CHECK_NOTE_PREFIXES))
)
assert {len(p) for p in CHECK_NOTE_PREFIXES} == {11}


def check_copy_note(note: str | None) -> str:
    """The note of this receiver's copy of a request check sent it (what else it says kept)."""
    return f"{CHECK_COPY} {note or 'a request check sent to this receiver, not a delivery'}"


def is_check_note(note: str | None) -> bool:
    """Whether an attempt with this note is a request the check sent (not a delivery)."""
    return note is not None and note.startswith(CHECK_NOTE_PREFIXES)


# Limits on what is kept.
RESPONSE_BODY_LIMIT = 64 * 1024  # of a forward target's answer
REJECTED_BODY_LIMIT = 64 * 1024  # of a rejected attempt's body
DEFAULT_REJECTED_CAP = 10_000  # rejected attempts kept (the oldest are pruned)


class StoreError(WalletpassError):
    """The history database cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class Attempt:
    """One delivery attempt as received. ``id``, ``attempt_no`` and ``body_differs`` are set by
    the store: ``body_differs`` is true when an earlier attempt with the same webhook-id carried a
    different body (or topic), which a genuine retry never does. A delivery that came through a
    relay keeps the relay's subscribe URL and cursor (``remote_addr`` is then the address that
    posted to the relay)."""

    received_at_ms: int
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    verdict: StoredVerdict
    reason: str
    status: int
    webhook_id: str | None = None
    detail: str = ""
    endpoint_id: str | None = None
    remote_addr: str | None = None
    forwarded_for: str | None = None
    body_size: int | None = None
    processing_ms: float = 0.0
    topic: str | None = None
    pass_id: str | None = None
    note: str | None = None
    id: int = 0
    attempt_no: int = 0
    body_differs: bool = False
    relay_url: str | None = None  # came through this relay (its subscribe URL)...
    relay_cursor: int | None = None  # ... as the channel's delivery number

    @property
    def body_truncated(self) -> bool:
        return self.body_size is not None and self.body_size > len(self.body)

    @property
    def verified(self) -> bool:
        return self.verdict == VERIFIED

    def header(self, name: str) -> str | None:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), None)


_ATTEMPT_FIELDS = frozenset(f.name for f in fields(Attempt))


def evolve(a: Attempt, **changes: Any) -> Attempt:
    """``dataclasses.replace`` for an Attempt, at a fraction of its cost (it runs per delivery);
    a name that is not a field raises TypeError, as ``replace`` does."""
    if not _ATTEMPT_FIELDS.issuperset(changes):
        unknown = ", ".join(sorted(set(changes) - _ATTEMPT_FIELDS))
        raise TypeError(f"evolve() got unexpected Attempt field(s): {unknown}")
    new = object.__new__(Attempt)
    new.__dict__.update(a.__dict__)
    new.__dict__.update(changes)
    return new


@dataclass(frozen=True)
class LogRow:
    """The columns of one line of the event log (no body, no headers)."""

    id: int
    received_at_ms: int
    webhook_id: str | None
    topic: str | None
    pass_id: str | None
    verdict: StoredVerdict
    reason: str
    attempt_no: int
    endpoint_id: str | None
    status: int
    note: str | None
    body_differs: bool = False

    @classmethod
    def of(cls, attempt: Attempt) -> LogRow:
        """The log line of a stored attempt (its body and headers left behind)."""
        return cls(**{name: getattr(attempt, name) for name in _LOG_FIELDS})


# A log line holds these fields of its attempt, under the same names (a new column: a field here,
# then its cell in ui/view/log_columns.py; the history's query reads them by these names).
_LOG_FIELDS = tuple(field.name for field in fields(LogRow))


@dataclass(frozen=True)
class MessageRow:
    webhook_id: str
    topic: str | None
    pass_id: str | None
    verdict: StoredVerdict
    reason: str
    attempts: int
    first_received_at_ms: int
    last_received_at_ms: int
    endpoint_id: str | None
    last_status: int


@dataclass(frozen=True)
class Stats:
    received: int = 0
    verified: int = 0
    rejected: int = 0
    redeliveries: int = 0


@dataclass(frozen=True)
class ForwardResult:
    """The target's answer to one forward or replay (status None when there was no answer)."""

    status: int | None
    latency_ms: float
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    error: str | None = None
    note: str | None = None
    no_connection: bool = False  # no connection could be made: nothing reached the target

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True)
class ForwardRow:
    id: int
    attempt_id: int
    webhook_id: str | None
    kind: ForwardKind
    mode: ForwardMode
    target: str
    state: ForwardState
    tries: int
    next_try_at_ms: int
    created_at_ms: int
    finished_at_ms: int | None
    status: int | None
    latency_ms: float | None
    response_headers: tuple[tuple[str, str], ...]
    response_body: bytes
    error: str | None
    note: str | None
    request_body: bytes | None


@dataclass(frozen=True)
class RowDriver:
    """Rows a condition lists itself in id order, cheaper than a look at every row: ``source``
    joins ``attempts a`` to them, ``key`` is the id column to order by (the reader bounds it),
    ``clauses`` (with ``params``, in order) narrow them. A row may come more than once: the
    reader groups by ``key``."""

    source: str
    key: str
    clauses: tuple[str, ...]
    params: tuple[Any, ...]


class RowCondition(Protocol):
    """A condition on attempts beyond their columns, given by a layer above the store (the field
    queries of ``walletpass_tui.query``): SQL over the history (as ``a``) and an index file of
    its own next to it (attached as ``fx``), and the same test on one attempt in memory. Every
    value it compares travels as a parameter. Rows past the index's mark (``upto``; None: no
    index) are tested by its SQL functions, one by one, with the in-memory rules."""

    def index_file(self, history: Path) -> Path:
        """Where its index of the history at ``history`` is."""
        ...

    def index_mark(self) -> str:
        """A statement answering the last row id the attached index holds (NULL: the index is
        not of this history and is not used)."""
        ...

    def functions(self) -> Sequence[tuple[str, int, Callable[..., Any]]]:
        """The SQL functions its statements call: (name, argument count, function)."""
        ...

    def sql(self, params: list[Any], upto: int | None) -> str:
        """The condition on ``a`` as one SQL expression; its parameters appended to ``params``."""
        ...

    def driven(
        self, upto: int, *, counting: bool = False
    ) -> tuple[RowDriver, RowCondition | None] | None:
        """Rows up to ``upto`` listed by the index, and what is left to test on them (None:
        nothing); None when the index cannot list them (``counting``: for a count, where
        gathering every row it lists costs no more than testing each)."""
        ...

    def complement(self) -> RowCondition | None:
        """The condition this one negates, when counting its matches and taking them from the
        whole is cheaper than testing every row (None: it negates nothing)."""
        ...

    def matches(self, attempt: Attempt) -> bool:
        """The same test on one attempt (a live row)."""
        ...

    def text(self) -> str:
        """The condition as the user writes it."""
        ...


@dataclass(frozen=True)
class LogFilter:
    topic: str | None = None
    verdict: StoredVerdict | None = None
    text: str | None = None
    since_ms: int | None = None
    source: Source | None = None  # RECEIVED (what senders posted) | CHECK (the check's requests)
    until_ms: int | None = None  # received before this time
    where: RowCondition | None = None  # field queries and the rest beyond the columns above

    @property
    def empty(self) -> bool:
        return not (
            self.topic
            or self.verdict
            or (self.text and self.text.strip())
            or self.since_ms
            or self.until_ms
            or self.source
            or self.where is not None
        )


# Called on the event loop after each commit with the attempts it stored; it must not block.
Listener = Callable[[Sequence[Attempt]], None]
# Sees a numbered attempt (on the event loop, before it is written) and may change its answer.
Finalizer = Callable[[Attempt], Attempt]
# Called on the event loop with one sentence when the history cannot be written (None: it can again).
HealthListener = Callable[[str | None], None]


def now_ms() -> int:
    return int(time.time() * 1000)
