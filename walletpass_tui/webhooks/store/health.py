"""Whether the history can be written right now, said loudly.

Every failed write prints one line on stderr naming the file and the fix (the dashboard's Textual
app captures stderr, so it never scribbles over the screen), and the same sentence is kept in
``problem`` and handed to every subscriber (the dashboard shows it in its header). The next write
that succeeds clears it and tells the subscribers ``None``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable

from walletpass_tui.listeners import Listeners
from walletpass_tui.webhooks.models import HealthListener

PREFIX = "walletpass-tui: "


class Health:
    def __init__(self) -> None:
        self.problem: str | None = None
        self.failures = 0  # failed writes since the store was opened
        self._listeners: Listeners[[str | None]] = Listeners(__name__, "store health")

    def subscribe(self, listener: HealthListener) -> Callable[[], None]:
        """Call ``listener(sentence)`` when writing starts failing and ``listener(None)`` when it
        works again; returns a function that unsubscribes."""
        return self._listeners.subscribe(listener)

    def failed(self, sentence: str) -> None:
        """A write failed: one line on stderr, every time; subscribers hear of a change."""
        self.failures += 1
        with contextlib.suppress(Exception):  # a closed or broken stderr must not stop the writer
            print(PREFIX + sentence, file=sys.stderr, flush=True)
        if sentence != self.problem:
            self.problem = sentence
            self._tell(sentence)

    def ok(self) -> None:
        if self.problem is not None:
            self.problem = None
            self._tell(None)

    def _tell(self, sentence: str | None) -> None:
        self._listeners.notify(sentence)  # a subscriber's bug is logged, never stops the writer
