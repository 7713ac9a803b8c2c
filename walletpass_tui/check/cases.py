"""The battery: every case a receiver is put through, what a correct one does, and why it matters.

Each case builds its request at the moment it is sent (``make(now)``), so a timestamp that must be
fresh is fresh even when earlier cases waited for their timeout. Bodies are the simulator's invented
event shape (the service does not document one); signatures follow spec section 5 exactly.
"""

from __future__ import annotations

import base64
import random
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from walletpass_tui.check import bodies
from walletpass_tui.sim.events import message_id, new_secret
from walletpass_tui.webhooks.verify import (
    HEADER_SIGNATURE,
    HEADER_TIMESTAMP,
    compute_signature,
    parse_secret,
    sign,
)

SKEW = timedelta(minutes=10)  # how far off the "old" and "ahead" timestamps are
SLOW_PIECES = 10
SLOW_SPREAD_S = 1.0  # the slow-network case sends its body over about this long


class Expect(StrEnum):
    ACCEPT = "accept"  # answered 2xx within the timeout
    REFUSE = "refuse"  # answered anything but 2xx


@dataclass(frozen=True)
class CaseRequest:
    """What one case sends: headers in order and the exact body bytes."""

    headers: tuple[tuple[str, str], ...]
    body: bytes
    pieces: int = 1  # > 1: the body goes out in this many pieces
    spread_s: float = 0.0  # ... over about this many seconds

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


@dataclass(frozen=True)
class Case:
    id: str  # short and stable, for --json and scripts: "valid-pass.activated", "wrong-secret"
    title: str  # for people: "valid delivery (pass.activated)"
    expect: Expect
    must_pass: bool  # False: a wrong answer is a warning, not a failure
    why: str  # one line on why it matters
    topic: str
    webhook_id: str
    make: Callable[[datetime], CaseRequest] = field(repr=False, compare=False)

    @property
    def expected(self) -> str:
        """What a correct receiver does, in a few words."""
        if self.expect is Expect.ACCEPT:
            return "2xx"
        return "refused" if self.must_pass else "refused (warn)"


CONTENT_TYPE = ("Content-Type", "application/json")


def _signed(secret: str, msg_id: str, body: bytes, when: datetime) -> list[tuple[str, str]]:
    return [*sign(secret, msg_id, body, when).items(), CONTENT_TYPE]


def _with_signature(
    headers: list[tuple[str, str]], value: str | None
) -> tuple[tuple[str, str], ...]:
    """``headers`` with webhook-signature replaced by ``value`` (None: removed)."""
    out = [(k, v) for k, v in headers if k.lower() != HEADER_SIGNATURE]
    if value is not None:
        out.insert(2, (HEADER_SIGNATURE, value))
    return tuple(out)


def _pass_id(doc: dict[str, object]) -> str | None:
    data = doc.get("data")
    value = data.get("passId") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def build_cases(
    secret: str, topics: Sequence[str], *, rng: random.Random | None = None
) -> list[Case]:
    """Every case, in the order they are sent. ``secret`` must be a valid ``whsec_`` secret."""
    parse_secret(secret)  # a SecretError now rather than in the middle of the run
    if not topics:
        raise ValueError("build_cases needs at least one topic")
    rng = rng or random.Random()
    key = parse_secret(secret)
    other_secret = new_secret(len(key))
    while parse_secret(other_secret) == key:  # a short key is drawn again by chance (1 in 256)
        other_secret = new_secret(len(key))
    cases: list[Case] = []

    def add(
        id_: str,
        title: str,
        expect: Expect,
        why: str,
        topic: str,
        make: Callable[[str], Callable[[datetime], CaseRequest]],
        *,
        must_pass: bool = True,
        webhook_id: str | None = None,
    ) -> None:
        msg_id = webhook_id or message_id()
        cases.append(Case(id_, title, expect, must_pass, why, topic, msg_id, make(msg_id)))

    def plain(
        body: bytes, *, pieces: int = 1, spread_s: float = 0.0
    ) -> Callable[[str], Callable[[datetime], CaseRequest]]:
        def bind(msg_id: str) -> Callable[[datetime], CaseRequest]:
            return lambda now: CaseRequest(
                tuple(_signed(secret, msg_id, body, now)), body, pieces, spread_s
            )

        return bind

    # 1. A valid delivery of each topic.
    first_body = b""
    first_id = ""
    for topic in topics:
        body = bodies.compact(bodies.event_document(topic, rng))
        msg_id = message_id()
        if not first_id:
            first_body, first_id = body, msg_id
        add(
            f"valid-{topic}",
            f"valid delivery ({topic})",
            Expect.ACCEPT,
            "The service counts anything but a 2xx within 15 s as a failure and retries it.",
            topic,
            plain(body),
            webhook_id=msg_id,
        )
    main = topics[0]

    # 2. The same delivery again, as the service's retry sends it.
    add(
        "duplicate",
        "the same delivery again (retry)",
        Expect.ACCEPT,
        "Delivery is at least once: answer a repeated webhook-id with 2xx (and skip the work), "
        "or the service keeps retrying it.",
        main,
        plain(first_body),
        webhook_id=first_id,
    )

    # 3. Forgeries: each must be refused.
    def fresh(topic: str = main) -> tuple[dict[str, object], bytes]:
        doc = bodies.event_document(topic, rng)
        return doc, bodies.compact(doc)

    _, forged = fresh()
    add(
        "wrong-secret",
        "signed with a wrong secret",
        Expect.REFUSE,
        "A 2xx here means anyone can post fake pass events to your app.",
        main,
        lambda msg_id: (
            lambda now: CaseRequest(tuple(_signed(other_secret, msg_id, forged, now)), forged)
        ),
    )
    doc, original = fresh()
    tampered = bodies.change_one_byte(original, _pass_id(doc))
    add(
        "changed-byte",
        "one byte of the body changed",
        Expect.REFUSE,
        "A 2xx here means a captured delivery can be altered and still accepted.",
        main,
        lambda msg_id: (
            lambda now: CaseRequest(tuple(_signed(secret, msg_id, original, now)), tampered)
        ),
    )
    _, unsigned = fresh()
    add(
        "missing-header",
        "no webhook-signature header",
        Expect.REFUSE,
        "A 2xx here means unsigned posts are accepted: anyone can send you events.",
        main,
        lambda msg_id: (
            lambda now: CaseRequest(
                _with_signature(_signed(secret, msg_id, unsigned, now), None), unsigned
            )
        ),
    )
    _, empty = fresh()
    add(
        "empty-signature",
        "an empty signature list",
        Expect.REFUSE,
        "A 2xx here means a post without a single signature is accepted.",
        main,
        lambda msg_id: (
            lambda now: CaseRequest(_with_signature(_signed(secret, msg_id, empty, now), ""), empty)
        ),
    )

    # 4. Stale and future timestamps (a warning: the spec only says receivers *should* check).
    _, old = fresh()
    add(
        "old-timestamp",
        "timestamp 10 min old",
        Expect.REFUSE,
        "Accepting old timestamps lets anyone who captured a delivery replay it later.",
        main,
        lambda msg_id: (
            lambda now: CaseRequest(tuple(_signed(secret, msg_id, old, now - SKEW)), old)
        ),
        must_pass=False,
    )
    _, ahead = fresh()
    add(
        "future-timestamp",
        "timestamp 10 min ahead",
        Expect.REFUSE,
        "A timestamp far ahead stays 'fresh' for a replay long after it was captured.",
        main,
        lambda msg_id: (
            lambda now: CaseRequest(tuple(_signed(secret, msg_id, ahead, now + SKEW)), ahead)
        ),
        must_pass=False,
    )

    # 5. Signature lists a correct receiver must read in full.
    _, v2_body = fresh()
    v2_entry = "v2," + base64.b64encode(secrets.token_bytes(32)).decode("ascii")

    def v2_first(msg_id: str) -> Callable[[datetime], CaseRequest]:
        def make(now: datetime) -> CaseRequest:
            headers = _signed(secret, msg_id, v2_body, now)
            valid = dict(headers)[HEADER_SIGNATURE]
            return CaseRequest(_with_signature(headers, f"{v2_entry} {valid}"), v2_body)

        return make

    add(
        "other-version-first",
        "v2,… then v1,<valid>",
        Expect.ACCEPT,
        "Entries of other versions may come first; skip them and compare every v1 entry.",
        main,
        v2_first,
    )
    _, rotated_body = fresh()

    def rotated(msg_id: str) -> Callable[[datetime], CaseRequest]:
        def make(now: datetime) -> CaseRequest:
            headers = _signed(secret, msg_id, rotated_body, now)
            valid = dict(headers)[HEADER_SIGNATURE]
            ts = dict(headers)[HEADER_TIMESTAMP]
            wrong = compute_signature(parse_secret(other_secret), msg_id, ts, rotated_body)
            return CaseRequest(_with_signature(headers, f"{wrong} {valid}"), rotated_body)

        return make

    add(
        "rotated-secret",
        "v1,<wrong> then v1,<valid>",
        Expect.ACCEPT,
        "While a secret is rotated the header holds several v1 entries: any match is enough.",
        main,
        rotated,
    )

    # 6. Bodies that only a receiver verifying the raw bytes accepts.
    doc, _ = fresh()
    add(
        "non-ascii",
        "non-ASCII UTF-8 in the body",
        Expect.ACCEPT,
        "Verify the raw bytes: decoding and re-encoding the text changes them.",
        main,
        plain(bodies.non_ascii(doc)),
    )
    doc, _ = fresh()
    add(
        "unusual-json",
        "unusual whitespace and key order",
        Expect.ACCEPT,
        "Verify the raw bytes: re-serialized JSON no longer matches the signature.",
        main,
        plain(bodies.unusual_spelling(doc)),
    )
    doc, _ = fresh()
    add(
        "large-body",
        "a 256 KiB body",
        Expect.ACCEPT,
        "A body limit under 256 KiB (some frameworks default to 100 KB) refuses big deliveries.",
        main,
        plain(bodies.large(doc)),
    )

    # 7. A slow network.
    _, slow = fresh()
    add(
        "slow-network",
        "body sent in pieces over 1 s",
        Expect.ACCEPT,
        "On a slow network the body arrives in pieces: read all of it before verifying.",
        main,
        plain(slow, pieces=SLOW_PIECES, spread_s=SLOW_SPREAD_S),
    )
    return cases
