"""The relayed-delivery wire format: whatever a sender posted comes out the same on the laptop."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from walletpass_tui.relay.events import RelayedDelivery, delivery_data, sse_event
from walletpass_tui.relay.link.sse import SSEMessage, SSEParser

_header_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)
# What an HTTP request can carry: a token for a name, a value without CR, LF or NUL.
_header_name = st.from_regex(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,40}", fullmatch=True)
_header_value = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\0"), max_size=60
)


@given(
    body=st.binary(max_size=4096),
    headers=st.lists(st.tuples(_header_name, _header_value), max_size=8),
    path=_header_text,
    cursor=st.integers(min_value=1, max_value=2**63 - 1),
    received_at_ms=st.integers(min_value=0, max_value=4_102_444_800_000),
)
def test_any_body_and_headers_survive_the_stream_exactly(
    body: bytes,
    headers: list[tuple[str, str]],
    path: str,
    cursor: int,
    received_at_ms: int,
) -> None:
    data = delivery_data(
        received_at_ms=received_at_ms,
        method="POST",
        path=path,
        headers=headers,
        body=body,
        source="203.0.113.7",
        forwarded_for=None,
        client="203.0.113.7",
        channel="team",
    )
    assert b"\n" not in data and b"\r" not in data  # one SSE data line, whatever was sent
    (message,) = SSEParser(max_event=1 << 20).feed(sse_event(cursor, data))
    assert isinstance(message, SSEMessage) and message.id == str(cursor)
    got = RelayedDelivery.parse(cursor, message.data)
    assert got.body == body
    assert got.headers == tuple(headers)
    assert got.path == path and got.received_at_ms == received_at_ms
    assert got.source == "203.0.113.7" and got.channel == "team"
