"""One way to report a worker that failed: in the pane (or screen, or app) that ran it.

Workers run with ``exit_on_error=False`` so a failure never takes the dashboard down; without a
handler it would vanish, leaving a pane stuck on "loading". Every class that runs workers mixes in
``ReportsWorkerErrors``: its one ``on_worker_state_changed`` handler turns a failed worker of any
group into a call of ``worker_failed(group, error)``, which shows it where it belongs (a notice in
the pane, by default a notification). Failures that a worker expects (an API error) it handles
itself; what reaches this handler is the rest.
"""

from __future__ import annotations

from textual.worker import Worker, WorkerState

from walletpass_tui.webhooks.models import StoreError


def failure_text(error: BaseException | None) -> str:
    """One sentence for a person: the store's own explanation, or the kind of error and its text."""
    if error is None:
        return "It stopped unexpectedly."
    if isinstance(error, StoreError):
        return str(error)
    detail = str(error).strip()
    name = type(error).__name__
    return f"{name}: {detail}" if detail else name


class ReportsWorkerErrors:
    """Mixin for a DOM node that runs workers (put it before the Textual base class)."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # The message goes to the node that ran the worker and does not bubble.
        if event.state == WorkerState.ERROR:
            self.worker_failed(event.worker.group, event.worker.error)

    def worker_failed(self, group: str, error: BaseException | None) -> None:
        """Show the failure; override to show it inside the pane."""
        # A mixin: the widget or app it is mixed into has notify().
        self.notify(  # type: ignore[attr-defined]
            failure_text(error), title="Something went wrong", severity="error", markup=False
        )
