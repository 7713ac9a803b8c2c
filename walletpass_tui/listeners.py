"""The one way a part of the program tells others what happened: a list of listeners.

::

    class Store:
        def __init__(self) -> None:
            self._committed: Listeners[[Sequence[Attempt]]] = Listeners(__name__, "commit")

        def subscribe(self, listener: Callable[[Sequence[Attempt]], None]) -> Callable[[], None]:
            return self._committed.subscribe(listener)

        def _after_commit(self, batch: Sequence[Attempt]) -> None:
            self._committed.notify(batch)

``subscribe`` returns the function that unsubscribes (calling it again does nothing).
``notify`` calls every listener in the order they subscribed; one that raises is logged with its
traceback on the owner's logger and the others are still called: a subscriber's bug never stops
the part that tells it. A listener unsubscribed while others are being told (by itself or by an
earlier one) is not called after that; one subscribed meanwhile hears from the next ``notify``.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Generic, ParamSpec

P = ParamSpec("P")


class Listeners(Generic[P]):
    """Listeners taking ``P``; ``owner`` names the logger a failing one is logged on (the
    owner's ``__name__``), ``what`` says in the log what they listen to."""

    def __init__(self, owner: str, what: str = "event") -> None:
        self._log = logging.getLogger(owner)
        self._what = what
        self._listeners: dict[int, Callable[P, object]] = {}
        self._keys = itertools.count()

    def subscribe(self, listener: Callable[P, object]) -> Callable[[], None]:
        """Call ``listener`` on each ``notify``; returns the function that unsubscribes."""
        key = next(self._keys)
        self._listeners[key] = listener

        def unsubscribe() -> None:
            self._listeners.pop(key, None)

        return unsubscribe

    def notify(self, *args: P.args, **kwargs: P.kwargs) -> None:
        """Call each listener with the arguments; one that raises is logged, not passed on."""
        for key, listener in list(self._listeners.items()):
            if key not in self._listeners:  # unsubscribed by an earlier listener of this round
                continue
            try:
                listener(*args, **kwargs)
            except Exception:
                self._log.exception("A %s listener failed: %r", self._what, listener)

    def __len__(self) -> int:
        return len(self._listeners)

    def __bool__(self) -> bool:
        return bool(self._listeners)
