"""What a dashboard (or a command) may ask of a receiver, wherever it runs.

Two runtimes implement ``Runtime``: ``DeliveryRuntime`` (``local.py``), a receiver running in this
process, and ``AttachedRuntime`` (``attached.py``), a dashboard on the receiver another process
runs. Whoever holds one asks it these questions and never which class it is; where the two
differ, the answer says so (``describe()``, ``learning``, what ``request()`` answers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    import asyncio

    from walletpass_tui.config import Settings
    from walletpass_tui.runtime.control import ReceiverStatus
    from walletpass_tui.schemas.records import DriftRecord
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
    from walletpass_tui.webhooks.forward import SecretLookup
    from walletpass_tui.webhooks.models import Attempt, ForwardResult, ForwardRow
    from walletpass_tui.webhooks.store import Store
    from walletpass_tui.webhooks.target_options import TargetOptions

# Where the payload schemas are learned: by this process's runtime (drift and progress told through
# ``subscribe``), by the receiver in another process (read from the schema file beside the
# history), or nowhere (``--no-schemas``).
Learning = Literal["here", "elsewhere", "off"]

DeliveryListener = Callable[[Sequence["Attempt"]], None]
ForwardListener = Callable[["ForwardRow", "ForwardResult"], None]
# (the attempt's row id, the drift it showed first): called once per delivery that drifted
DriftListener = Callable[[int, Sequence["DriftRecord"]], None]
# the last row id the schema learner has looked at (the drift of every row up to it was told)
LearnedListener = Callable[[int], None]
# how many rows were skipped (far behind, the history replaced) or pruned: read the history again
GapListener = Callable[[int], None]


@runtime_checkable
class StatusFeed(Protocol):
    """A feed that says how it is doing (the relay link): ``state.headline``, ``state.healthy``."""

    url: str
    state: Any

    def subscribe(self, state: Callable[[Any], None] | None = None) -> Callable[[], None]: ...


class Target(Protocol):
    """Where verified deliveries are forwarded (a ``--forward-to`` route, or as another process's
    receiver reports it)."""

    @property
    def target(self) -> str: ...

    @property
    def topic(self) -> str | None:
        """The one topic it forwards (None: every topic)."""
        ...


class Runtime(Protocol):
    """A receiver as a dashboard sees it: its history, its endpoints, what it is doing, what it
    takes, and the deliveries it stores, as they are committed."""

    # -- lifecycle: opened by whoever made it (the dashboard only when handed an opener) ------------

    async def open(self) -> None: ...

    async def serve(self) -> None:
        """Start taking deliveries (the dashboard calls it once its first frame is drawn)."""

    async def close(self) -> None: ...

    # -- what it holds -----------------------------------------------------------------------------

    @property
    def settings(self) -> Settings: ...

    @property
    def registry(self) -> EndpointRegistry: ...

    @property
    def store(self) -> Store:
        """The history (RuntimeError when the runtime is not open)."""

    @property
    def secret_for(self) -> SecretLookup:
        """The secret a replay is re-signed with."""

    @property
    def feeds(self) -> Sequence[object]:
        """Deliveries reaching this process another way than a POST (a relay link)."""

    # -- the receiver ----------------------------------------------------------------------------

    @property
    def url(self) -> str | None:
        """The receiver's URL (None: no receiver)."""

    @property
    def bound(self) -> tuple[str, int] | None:
        """(host, port) the receiver listens on (None: no receiver)."""

    @property
    def serving(self) -> bool: ...

    @property
    def paused(self) -> bool:
        """Whether verified deliveries are answered 503 (stored all the same)."""

    @property
    def routes(self) -> Sequence[Target]: ...

    @property
    def forwarding(self) -> bool: ...

    @property
    def status(self) -> ReceiverStatus:
        """What the receiver says of itself: injected failures, forwarding, its relay link, a
        history it cannot write, the requests it takes."""

    @property
    def gone(self) -> bool:
        """The receiver in another process this runtime followed has stopped (never here)."""

    @property
    def learning(self) -> Learning: ...

    def describe(self) -> str | None:
        """``listen, pid 4242`` when another process runs the receiver, else None."""

    def target_options(self, target: str) -> TargetOptions:
        """What the receiver's flags add to a request to ``target`` (a replay, the check)."""

    # -- asking it -----------------------------------------------------------------------------------

    def can(self, op: str) -> bool:
        """Whether ``op`` (one of ``control.OPS``) can be asked now: False while the receiver in
        another process is out of reach or does not take it."""

    def request(self, op: str, **args: Any) -> asyncio.Future[None]:
        """Ask for ``op`` at once; the future is the answer (ControlError saying why it cannot
        be done). A receiver in this process has done it when this returns."""

    async def learn_templates(self, templates: Sequence[Any]) -> list[DriftRecord]:
        """Learn the templates ``GET passTemplates`` listed; returns the drift they showed."""

    # -- listening -------------------------------------------------------------------------------

    def subscribe(
        self,
        deliveries: DeliveryListener | None = None,
        forwards: ForwardListener | None = None,
        *,
        drift: DriftListener | None = None,
        learned: LearnedListener | None = None,
        gaps: GapListener | None = None,
    ) -> Callable[[], None]:
        """Call, on the event loop, ``deliveries(batch)`` after each commit, ``forwards(row,
        result)`` after each forward is answered, ``drift`` and ``learned`` as the schema learner
        goes (only when ``learning == "here"``) and ``gaps(count)`` when the history changed in a way
        the deliveries told do not show: new rows skipped (only when another process runs the
        receiver) or rows pruned; whoever shows counts or rows reads them again. Returns a
        function that unsubscribes."""

    def watch(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener()`` when what was asked of the receiver changes (pause, injected
        failures) or, in another process, whether it runs or what it reports; returns a
        function that stops it."""


RuntimeOpener = Callable[[], Awaitable[Runtime]]
