"""The one listener list: a failing listener is logged and the others still hear."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from walletpass_tui.listeners import Listeners


def test_every_listener_is_called_in_order_with_the_arguments() -> None:
    heard: list[tuple[str, int, str]] = []
    listeners: Listeners[[int, str]] = Listeners("walletpass_tui.somewhere")
    listeners.subscribe(lambda n, s: heard.append(("first", n, s)))
    listeners.subscribe(lambda n, s: heard.append(("second", n, s)))
    listeners.notify(7, "x")
    assert heard == [("first", 7, "x"), ("second", 7, "x")]


def test_a_failing_listener_is_logged_with_its_traceback_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[int] = []

    def broken(n: int) -> None:
        raise ValueError("listener bug")

    listeners: Listeners[[int]] = Listeners("walletpass_tui.owner.module", "commit")
    listeners.subscribe(heard.append)
    listeners.subscribe(broken)
    listeners.subscribe(lambda n: heard.append(n * 10))
    with caplog.at_level(logging.DEBUG, logger="walletpass_tui"):
        listeners.notify(3)
    assert heard == [3, 30]
    [record] = caplog.records
    assert record.name == "walletpass_tui.owner.module"
    assert record.levelno == logging.ERROR
    assert "commit listener failed" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)
    assert "listener bug" in caplog.text  # the traceback is in the log


def test_unsubscribing_twice_is_harmless_and_leaves_the_others() -> None:
    heard: list[str] = []
    listeners: Listeners[[]] = Listeners(__name__)
    stop_a = listeners.subscribe(lambda: heard.append("a"))
    listeners.subscribe(lambda: heard.append("b"))
    stop_a()
    stop_a()
    listeners.notify()
    assert heard == ["b"]
    assert len(listeners) == 1


def test_the_same_function_subscribed_twice_is_two_subscriptions() -> None:
    heard: list[int] = []
    listeners: Listeners[[int]] = Listeners(__name__)
    first = listeners.subscribe(heard.append)
    listeners.subscribe(heard.append)
    listeners.notify(1)
    first()
    listeners.notify(2)
    assert heard == [1, 1, 2]


def test_a_listener_unsubscribing_itself_during_notify() -> None:
    heard: list[str] = []
    listeners: Listeners[[]] = Listeners(__name__)
    stops: list[Callable[[], None]] = []

    def once() -> None:
        heard.append("once")
        stops[0]()

    stops.append(listeners.subscribe(once))
    listeners.subscribe(lambda: heard.append("after"))
    listeners.notify()
    listeners.notify()
    assert heard == ["once", "after", "after"]


def test_a_listener_unsubscribed_by_an_earlier_one_is_not_called_in_that_round() -> None:
    heard: list[str] = []
    listeners: Listeners[[]] = Listeners(__name__)
    stops: dict[str, Callable[[], None]] = {}
    stops["first"] = listeners.subscribe(lambda: (heard.append("first"), stops["second"]()))
    stops["second"] = listeners.subscribe(lambda: heard.append("second"))
    listeners.notify()
    assert heard == ["first"]


def test_a_listener_subscribed_during_notify_hears_from_the_next_one() -> None:
    heard: list[str] = []
    listeners: Listeners[[]] = Listeners(__name__)

    def adds() -> None:
        heard.append("adds")
        if len(listeners) == 1:
            listeners.subscribe(lambda: heard.append("late"))

    listeners.subscribe(adds)
    listeners.notify()
    listeners.notify()
    assert heard == ["adds", "adds", "late"]
