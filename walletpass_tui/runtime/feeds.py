"""The feeds a local runtime runs (``local.Feed``: deliveries reaching it another way than a
POST, such as a relay subscription built in ``relay/link/feed.py``), as tasks.

Each feed is started once, when the runtime serves, as a task of its own calling
``runtime.accept()`` for every delivery; all are cancelled when the runtime closes (a feed cut in
the middle of a delivery loses nothing: a delivery and its cursor are committed together or not
at all). The first feed that stops for good (a relay refusing the token) is told to whoever waits
on ``stopped()``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


class FeedTasks:
    """The running feeds of one runtime and why the first one stopped."""

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []
        self._stopped: asyncio.Future[BaseException] | None = None

    def prepare(self) -> None:
        """On the runtime's open, on its loop, when it has feeds: from now on ``stopped()`` can
        be told."""
        if self._stopped is None:
            self._stopped = asyncio.get_running_loop().create_future()

    def start(self, runs: list[Callable[[], Coroutine[Any, Any, None]]]) -> None:
        """Each feed's run as a task, once (again: nothing)."""
        if self._tasks:
            return
        for run in runs:
            task = asyncio.create_task(run())
            task.add_done_callback(self._done)
            self._tasks.append(task)

    async def stopped(self) -> BaseException:
        """Wait until a feed stops for good; returns why (waits forever without feeds)."""
        if self._stopped is None:
            await asyncio.Event().wait()
        assert self._stopped is not None
        return await asyncio.shield(self._stopped)

    async def cancel(self) -> None:
        """Every feed cancelled, and waited for."""
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    def _done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or self._stopped is None or self._stopped.done():
            return
        error = task.exception() or RuntimeError("The relay subscription ended.")
        self._stopped.set_result(error)
