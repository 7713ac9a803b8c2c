"""A worker cancelled before it starts (the next one of its exclusive group came first) leaves no
coroutine behind that was never awaited: with ``Lazily`` none is made until the worker runs."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from textual.app import App

from walletpass_tui.ui.lazily import Lazily


async def test_the_second_of_an_exclusive_group_cancels_the_first_before_it_makes_anything() -> (
    None
):
    made: list[int] = []
    ran: list[int] = []

    def work(n: int) -> Callable[[], Coroutine[Any, Any, None]]:
        async def run() -> None:
            ran.append(n)

        def make() -> Coroutine[Any, Any, None]:
            made.append(n)
            return run()

        return make

    app: App[None] = App()
    async with app.run_test():
        workers = [app.run_worker(Lazily(work(n)), group="g", exclusive=True) for n in (1, 2)]
        await workers[1].wait()
    assert workers[0].is_cancelled
    assert ran == [2]
    assert made == [2]  # nothing made for the worker that never ran: nothing left unawaited
