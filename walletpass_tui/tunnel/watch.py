"""The tunnel watched: started, said, restarted with backoff when it dies, stopped with the receiver.

::

    watcher = TunnelWatcher(Cloudflared())
    watcher.subscribe(print_state)          # one TunnelState per change
    watcher.start("http://127.0.0.1:8787")  # a task of its own; never raises
    first = await watcher.first_answer()    # up, down (retrying) or unavailable
    ...
    await watcher.stop()                    # the tunnel closed, its program gone

States, in order: ``starting`` -> ``up`` (its public URL) -> ``down`` (why, and when it is tried
again) -> ``starting`` ...; ``unavailable`` when trying again cannot help (one sentence saying
what to do; no more tries); ``stopped`` at the end. Retries wait ``Backoff``'s delays (1 s,
doubling, at most a minute), back at the first once a tunnel stayed up a minute. Nothing a
provider raises reaches the caller: the receiver goes on whatever the tunnel does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from walletpass_tui.listeners import Listeners
from walletpass_tui.text import printable
from walletpass_tui.tunnel.provider import OpenTunnel, Provider, TunnelFailed, TunnelUnavailable

log = logging.getLogger(__name__)

Phase = Literal["starting", "up", "down", "unavailable", "stopped"]


@dataclass(frozen=True)
class TunnelState:
    """Where the tunnel is. ``public_url``: ``https://host`` while up; ``detail``: why it is
    down or unavailable; ``retry_in_s``: when a down tunnel is tried again; ``starts``: tries
    so far."""

    provider: str
    phase: Phase = "starting"
    public_url: str | None = None
    detail: str | None = None
    retry_in_s: float | None = None
    starts: int = 0

    def headline(self) -> str | None:
        """The tunnel in a few words while it gives no public URL (None while up or stopped):
        for the dashboard's header."""
        detail = printable(self.detail or "", 200)
        if self.phase == "starting":
            return f"{self.provider} tunnel starting"
        if self.phase == "down":
            wait = f"{self.retry_in_s:.0f} s" if (self.retry_in_s or 0) >= 1 else "a moment"
            return f"{self.provider} tunnel down, again in {wait}: {detail}"
        if self.phase == "unavailable":
            return f"no tunnel: {detail}"
        return None

    @property
    def settled(self) -> bool:
        """Whether the first try has an answer (up, down, unavailable, stopped)."""
        return self.phase != "starting"


@dataclass(frozen=True)
class Backoff:
    first_s: float = 1.0
    cap_s: float = 60.0
    reset_after_s: float = 60.0  # up this long: the next failure waits first_s again

    def delay(self, failures: int) -> float:
        """The wait before the next try after ``failures`` failures in a row (1, 2, ...)."""
        return min(self.cap_s, self.first_s * 2 ** max(0, failures - 1))


class TunnelWatcher:
    """Runs one provider's tunnel for as long as the receiver runs."""

    def __init__(self, provider: Provider, *, backoff: Backoff | None = None) -> None:
        self.provider = provider
        self.backoff = backoff or Backoff()
        self._state = TunnelState(provider.name)
        self._listeners: Listeners[[TunnelState]] = Listeners(__name__, "tunnel state")
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._tunnel: OpenTunnel | None = None

    @property
    def state(self) -> TunnelState:
        return self._state

    def subscribe(self, listener: Callable[[TunnelState], None]) -> Callable[[], None]:
        return self._listeners.subscribe(listener)

    def _set(self, **changes: object) -> None:
        self._state = replace(self._state, **changes)  # type: ignore[arg-type]
        log.info(
            "tunnel %s: %s %s",
            self.provider.name,
            self._state.phase,
            self._state.public_url or printable(self._state.detail or "", 200),
        )
        self._changed.set()
        self._changed = asyncio.Event()
        self._listeners.notify(self._state)

    def start(self, local_url: str) -> None:
        """Start trying, on a task of its own, to open a tunnel to ``local_url``."""
        if self._task is None:
            self._task = asyncio.create_task(self._run(local_url), name="tunnel")

    async def first_answer(self) -> TunnelState:
        """The state once the first try has an answer."""
        while not self._state.settled:
            await self._changed.wait()
        return self._state

    async def changed(self) -> TunnelState:
        """The next state."""
        await self._changed.wait()
        return self._state

    async def stop(self) -> None:
        """Close the tunnel (its program stopped) and stop trying. Safe to call twice."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):  # the cancel asked for just above
                await task
        if self._state.phase != "stopped":
            self._set(phase="stopped", public_url=None, retry_in_s=None)

    async def _run(self, local_url: str) -> None:
        failures = 0
        while True:
            self._set(
                phase="starting",
                public_url=None,
                detail=None,
                retry_in_s=None,
                starts=self._state.starts + 1,
            )
            try:
                tunnel = await self.provider.open(local_url)
            except TunnelUnavailable as exc:  # told to listeners, never tried again
                self._set(phase="unavailable", detail=str(exc))
                return
            except TunnelFailed as exc:  # told to listeners below, tried again after a wait
                why = str(exc)
            except Exception as exc:  # a provider's bug must not stop the receiver: logged
                log.exception("The %s tunnel failed to start", self.provider.name)
                why = f"{self.provider.name} failed ({printable(str(exc) or type(exc).__name__, 120)})"
            else:
                why, lasted = await self._hold(tunnel)
                if lasted >= self.backoff.reset_after_s:
                    failures = 0
            failures += 1
            delay = self.backoff.delay(failures)
            self._set(phase="down", public_url=None, detail=why, retry_in_s=delay)
            await asyncio.sleep(delay)

    async def _hold(self, tunnel: OpenTunnel) -> tuple[str, float]:
        """Keep ``tunnel`` until it dies (or the watcher stops): (why, seconds it was up)."""
        self._tunnel = tunnel
        up_at = time.monotonic()
        self._set(phase="up", public_url=tunnel.public_url, detail=None)
        try:
            why = await tunnel.closed()
        except Exception as exc:  # a provider's bug: the tunnel counts as dead, logged
            log.exception("Watching the %s tunnel failed", self.provider.name)
            why = f"{self.provider.name} failed ({printable(str(exc) or type(exc).__name__, 120)})"
        finally:
            self._tunnel = None
            await tunnel.close()
        return why, time.monotonic() - up_at
