"""``until``: wait, on the running loop, for a condition another task or process makes true.

The deadline only says "it never happened" (a busy CI machine can take seconds for what takes
milliseconds here); no test asserts on how long it took."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

DEADLINE_S = 60.0


async def until(check: Callable[[], object], deadline_s: float = DEADLINE_S) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    while not check():
        assert loop.time() < deadline, "the condition never became true"
        await asyncio.sleep(0.005)
