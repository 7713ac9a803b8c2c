"""How long the client waits when the service says ``Retry-After``: never past one cap, whatever
the status and however the header is written (seconds, an HTTP-date, garbage, negative, inf, nan,
huge). The service is an httpx.MockTransport playing its failure modes; the client's sleep is a
recorder, so no test waits and every wait is seen."""

from __future__ import annotations

import asyncio
import contextlib
import math
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from walletpass_tui.api.client import RETRY_AFTER_CAP_S, WalletPassClient, retry_after_s
from walletpass_tui.api.errors import ApiError
from walletpass_tui.config import Settings
from walletpass_tui.config.secrets import Secret

NOW = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
BASE_DELAY = 0.5  # the client's own backoff: 0.5 s, then 1 s


class Service:
    """Answers every request with the next of ``replies`` (the last repeats) and counts them."""

    def __init__(self, *replies: httpx.Response) -> None:
        self.replies = list(replies)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


class Sleeps:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def _client(service: Service, sleeps: Sleeps, tmp_path: Path) -> WalletPassClient:
    return WalletPassClient(
        Settings(
            base_url="https://api.example.test",
            registration_url="https://hooks.example.test",
            api_key=Secret("wp_live_4f9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c"),
            home=tmp_path / "home",
        ),
        transport=httpx.MockTransport(service),
        retry_base_delay=BASE_DELAY,
        sleep=sleeps,
        clock=NOW.timestamp,
    )


async def _list(service: Service, tmp_path: Path) -> tuple[Sleeps, ApiError | None]:
    sleeps = Sleeps()
    async with _client(service, sleeps, tmp_path) as client:
        try:
            await client.list_pass_templates()
        except ApiError as exc:
            return sleeps, exc
    return sleeps, None


def _answer(status: int, retry_after: str | None) -> httpx.Response:
    # As bytes: a service may send any octets, not only ASCII.
    headers = {} if retry_after is None else {"Retry-After": retry_after.encode()}
    return httpx.Response(status, headers=headers, json={"error": "busy"})


def _date(delta_s: float) -> str:
    return format_datetime(NOW + timedelta(seconds=delta_s), usegmt=True)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
@pytest.mark.parametrize("asked", ["3600", _date(3600), "99999999"])
async def test_a_wait_past_the_cap_is_not_slept_but_reported_at_once(
    status: int, asked: str, tmp_path: Path
) -> None:
    service = Service(_answer(status, asked))
    sleeps, error = await _list(service, tmp_path)
    assert sleeps.waits == []
    assert len(service.requests) == 1
    assert error is not None and error.status == status
    assert error.retry_after is not None and error.retry_after > RETRY_AFTER_CAP_S
    assert "Try again in" in str(error) or "tried again in" in str(error)


async def test_a_503_asking_for_an_hour_says_so(tmp_path: Path) -> None:
    _, error = await _list(Service(_answer(503, "3600")), tmp_path)
    assert error is not None
    assert "The service failed; it asks to be tried again in 1 h." in str(error)


@pytest.mark.parametrize("status", [429, 503])
@pytest.mark.parametrize(("asked", "wait"), [("3", 3.0), ("0", 0.0), (_date(5), 5.0)])
async def test_a_wait_within_the_cap_is_slept_as_asked(
    status: int, asked: str, wait: float, tmp_path: Path
) -> None:
    service = Service(_answer(status, asked), _answer(status, asked), httpx.Response(200, json=[]))
    sleeps, error = await _list(service, tmp_path)
    assert error is None
    assert sleeps.waits == [wait, wait]
    assert len(service.requests) == 3


UNREADABLE = [
    "inf",
    "-inf",
    "nan",
    "Infinity",
    "-5",
    "1.5",
    "1e3",
    "soon",
    "",
    "١٢٣",
    "²",
    "+5",
    "1_0",
    "9" * 100_000,
    "Fri, 99 Foo 2026 25:61:61 GMT",
    "Sun, 06 Nov 1994 08:49:37 GMT" + "x" * 100_000,
]


@pytest.mark.parametrize("asked", UNREADABLE, ids=lambda v: repr(v[:20]))
async def test_an_unreadable_retry_after_on_a_5xx_falls_back_to_the_clients_own_backoff(
    asked: str, tmp_path: Path
) -> None:
    service = Service(_answer(503, asked))
    sleeps, error = await _list(service, tmp_path)
    assert sleeps.waits == [BASE_DELAY, 2 * BASE_DELAY]
    assert len(service.requests) == 3
    assert error is not None and error.retry_after is None


@pytest.mark.parametrize("asked", UNREADABLE, ids=lambda v: repr(v[:20]))
async def test_an_unreadable_retry_after_on_a_429_is_not_waited_on(
    asked: str, tmp_path: Path
) -> None:
    service = Service(_answer(429, asked))
    sleeps, error = await _list(service, tmp_path)
    assert sleeps.waits == []
    assert len(service.requests) == 1
    assert error is not None and error.kind == "rate_limited" and error.retry_after is None


async def test_a_date_in_the_past_asks_for_no_wait(tmp_path: Path) -> None:
    service = Service(_answer(503, _date(-60)), httpx.Response(200, json=[]))
    sleeps, error = await _list(service, tmp_path)
    assert error is None and sleeps.waits == [0.0]


async def test_a_date_at_the_end_of_time_is_reported_not_slept(tmp_path: Path) -> None:
    service = Service(_answer(503, "Fri, 31 Dec 9999 23:59:59 GMT"))
    sleeps, error = await _list(service, tmp_path)
    assert sleeps.waits == [] and len(service.requests) == 1
    assert error is not None and error.retry_after is not None


async def test_a_post_is_never_retried_whatever_it_is_told(tmp_path: Path) -> None:
    service = Service(_answer(503, "1"))
    sleeps = Sleeps()
    async with _client(service, sleeps, tmp_path) as client:
        with pytest.raises(ApiError):
            await client.create_webhook_endpoint("https://example.com/wh", ["pass.activated"])
    assert sleeps.waits == [] and len(service.requests) == 1


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    status=st.sampled_from([429, 500, 502, 503, 504]),
    asked=st.one_of(
        st.text(max_size=40),
        st.integers(min_value=-(10**12), max_value=10**12).map(str),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)).map(
            lambda d: format_datetime(d.replace(tzinfo=UTC), usegmt=True)
        ),
    ),
)
def test_every_wait_is_finite_and_within_the_cap(status: int, asked: str) -> None:
    async def run() -> list[float]:
        service = Service(_answer(status, asked.replace("\n", " ").replace("\r", " ")))
        sleeps = Sleeps()
        async with _client(service, sleeps, Path("/nonexistent")) as client:
            with contextlib.suppress(ApiError):
                await client.list_pass_templates()
        return sleeps.waits

    waits = asyncio.run(run())
    assert all(math.isfinite(w) and 0 <= w <= RETRY_AFTER_CAP_S for w in waits), waits


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 7 ", 7.0),  # optional whitespace around a header value is not part of it
        (_date(30), 30.0),
        ("Wed, 04 Mar 2026 05:06:37 GMT", 30.0),
        (None, None),
        ("inf", None),
        ("nan", None),
        ("-1", None),
    ],
)
def test_retry_after_forms(value: str | None, expected: float | None) -> None:
    assert retry_after_s(value, NOW.timestamp()) == expected
