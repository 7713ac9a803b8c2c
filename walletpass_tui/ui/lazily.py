"""``Lazily``: a worker's work whose coroutine is made only when the worker starts it.

``run_worker(count(), exclusive=True)`` makes the coroutine at once. When the next call in the
same group cancels that worker before it has started, the coroutine is never awaited and Python
warns about it at exit. ``run_worker(Lazily(count), exclusive=True)`` makes nothing until the
worker awaits it. (Textual runs an async function given as it is too, but its types do not
accept one whose result is ``None``.)
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Lazily(Generic[T]):
    """Awaitable once: awaiting it makes the coroutine with ``make()`` and awaits that."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[], Coroutine[Any, Any, T]]) -> None:
        self._make = make

    def __await__(self) -> Generator[Any, None, T]:
        return self._make().__await__()
