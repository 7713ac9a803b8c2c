"""A request's headers (aiohttp's case-insensitive multidict, read with one lookup each) and the
same headers as a plain mapping (scanned) give the same verdict, whatever case and extra or
missing headers a sender uses."""

from __future__ import annotations

from factories import SPEC_BODY, SPEC_ID, SPEC_NOW, SPEC_SECRET, SPEC_TS
from hypothesis import given
from hypothesis import strategies as st
from multidict import CIMultiDict, CIMultiDictProxy

from walletpass_tui.webhooks.reasons import Reason
from walletpass_tui.webhooks.verify import SigningKey, compute_signature, parse_secret, verify

KEY = SigningKey(parse_secret(SPEC_SECRET))
SIGNATURE = compute_signature(KEY.key, SPEC_ID, str(SPEC_TS), SPEC_BODY)
NAMES = ("webhook-id", "webhook-timestamp", "webhook-signature")
VALUES = {"webhook-id": SPEC_ID, "webhook-timestamp": str(SPEC_TS), "webhook-signature": SIGNATURE}


def cased(name: str, flips: list[bool]) -> str:
    return "".join(
        c.upper() if flip else c for c, flip in zip(name, flips + [False] * 20, strict=False)
    )


@given(
    present=st.lists(st.booleans(), min_size=3, max_size=3),
    flips=st.lists(st.lists(st.booleans(), max_size=20), min_size=3, max_size=3),
    blank=st.sampled_from([None, *NAMES]),
    extra=st.lists(st.tuples(st.sampled_from(["Host", "X-Other", "Content-Type"]), st.text())),
)
def test_a_request_and_a_plain_mapping_get_the_same_verdict(
    present: list[bool], flips: list[list[bool]], blank: str | None, extra: list[tuple[str, str]]
) -> None:
    pairs = list(extra)
    for name, there, flip in zip(NAMES, present, flips, strict=True):
        if there:
            pairs.append((cased(name, flip), "" if name == blank else VALUES[name]))
    request = CIMultiDictProxy(CIMultiDict(pairs))
    plain = dict(reversed(pairs))  # the first of a repeated name wins, as in the request
    got = verify(request, SPEC_BODY, [KEY], now=SPEC_NOW)
    assert got == verify(plain, SPEC_BODY, [KEY], now=SPEC_NOW)
    complete = all(present) and blank is None
    assert got.reason is (Reason.OK if complete else Reason.MISSING_HEADERS)
    if not complete:
        said = [n for n, there in zip(NAMES, present, strict=True) if not there or n == blank]
        assert got.detail == ", ".join(said)
