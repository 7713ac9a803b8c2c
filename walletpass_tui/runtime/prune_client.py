"""``events prune`` asking the receiver that runs on its home to prune (the ``prune`` request of
``control.py``): the receiver's own writer deletes between its commits, deliveries first, and
tells this side how far it got.

``prune_through`` returns how it ended: ``done``; ``stopped`` (``stop`` was set, Ctrl-C: the
receiver stops after the step under way and says how many it deleted); ``failed`` (a step could
not be written: why); ``left`` (the receiver went away or is stopping before the end: the
command goes on by itself); ``silent`` (the receiver said nothing for ``SILENT_S``, or did not
end its prune within ``STOP_WAIT_S`` of Ctrl-C: suspended, or hung; the command does not wait
for it any longer). ``NotTaken`` when the receiver cannot be asked (an older version,
which answers that it knows no such request, or a channel out of reach): the command prunes by itself, as
before. ``ControlError`` when the receiver refuses (a prune of another command runs).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from walletpass_tui.runtime.control import (
    PRUNE,
    PRUNE_STOP,
    PRUNE_STOPPED,
    ControlError,
    PruneNote,
)
from walletpass_tui.runtime.control_client import ControlClient

log = logging.getLogger(__name__)

STOP_WAIT_S = 5.0  # after Ctrl-C, how long the receiver's last step and its count are waited for
# A receiver pruning tells how far it got every 0.1 s and what it commits as it does: this long
# without a word, it is suspended (Ctrl-Z in its terminal) or hung.
SILENT_S = 15.0
UNKNOWN = "no such request"  # how a receiver begins its answer to a request it does not know

LEFT = "left"  # the receiver went before the prune ended
NOT_TAKEN = "not taken"  # the receiver cannot be asked (the reason says why): prune by yourself
SILENT = "silent"  # the receiver stopped talking mid-way: not waited for any longer


@dataclass(frozen=True)
class Pruned:
    """How a prune the receiver ran ended (one of ``control.PRUNE_ENDS``, LEFT or NOT_TAKEN),
    and how many it deleted (as far as it said)."""

    end: str
    deleted: int
    reason: str | None = None


async def prune_through(
    socket_path: Path,
    cutoff_ms: int,
    progress: Callable[[int], None],
    stop: asyncio.Event,
) -> Pruned:
    """Ask the receiver serving ``socket_path`` to delete every attempt received before
    ``cutoff_ms``; ``progress(deleted)`` as it tells how far it got."""
    try:
        client = await ControlClient.connect(socket_path)
    except (ControlError, OSError, TimeoutError) as exc:  # said: the command prunes by itself
        return Pruned(NOT_TAKEN, 0, f"its control channel cannot be reached ({exc})")
    loop = asyncio.get_running_loop()
    ended: asyncio.Future[PruneNote] = loop.create_future()
    told = 0
    heard_at = loop.time()

    def heard(message: dict[str, Any]) -> None:
        nonlocal told, heard_at
        heard_at = loop.time()
        if message.get("type") != "pruned":
            return  # rows committed, the receiver's state: not this command's business
        try:
            note = PruneNote.from_wire(message)
        except ValueError as exc:  # a receiver's bug: its count is not believed
            log.warning("the receiver told of its prune in a way not understood: %s", exc)
            return
        told = max(told, note.deleted)
        if note.end is None:
            progress(told)
        elif not ended.done():
            ended.set_result(note)

    reading = asyncio.ensure_future(client.run(heard))
    try:
        try:
            await client.request(PRUNE, before_ms=cutoff_ms)
        except ControlError as exc:
            if str(exc).startswith(UNKNOWN):
                return Pruned(NOT_TAKEN, 0, "it does not take prune requests (another version)")
            if reading.done():  # gone before it answered
                return Pruned(LEFT, told)
            raise
        heard_at = loop.time()
        asked_stop = asyncio.ensure_future(stop.wait())
        waits: set[asyncio.Future[Any]] = {ended, reading, asked_stop}
        try:
            while not any(w.done() for w in waits):
                quiet_s = loop.time() - heard_at
                if quiet_s >= SILENT_S:
                    return Pruned(SILENT, told, f"it said nothing for {SILENT_S:.0f} s")
                await asyncio.wait(
                    waits, timeout=SILENT_S - quiet_s, return_when=asyncio.FIRST_COMPLETED
                )
        finally:
            asked_stop.cancel()
        if not ended.done() and not reading.done():  # Ctrl-C: stop after the step under way
            with contextlib.suppress(TimeoutError):  # said below with what was told so far
                async with asyncio.timeout(STOP_WAIT_S):
                    with contextlib.suppress(ControlError):  # it ended: its end is on its way
                        await client.request(PRUNE_STOP)
                    await asyncio.wait(waits - {asked_stop}, return_when=asyncio.FIRST_COMPLETED)
            if not ended.done():
                return Pruned(SILENT, told, f"it did not end its prune within {STOP_WAIT_S:.0f} s")
        if not ended.done():
            return Pruned(LEFT, told)
        note = ended.result()
        if (
            note.end == PRUNE_STOPPED and not stop.is_set()
        ):  # the receiver is stopping, not asked to
            return Pruned(LEFT, note.deleted, note.reason)
        return Pruned(str(note.end), note.deleted, note.reason)
    finally:
        client.close()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):  # the reading stopped here
            await reading
