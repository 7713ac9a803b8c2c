"""What the forms that send something in a worker share: one submit button that reads busy while
the worker runs, a notice for problems, and an unexpected worker failure shown in the form."""

from __future__ import annotations

from typing import ClassVar, TypeVar

from textual.screen import ModalScreen
from textual.widgets import Button

from walletpass_tui.ui.widgets.notice import Notice, NoticeText
from walletpass_tui.ui.worker_errors import ReportsWorkerErrors, failure_text

ResultT = TypeVar("ResultT")


class WorkerForm(ReportsWorkerErrors, ModalScreen[ResultT]):
    """Subclasses name their submit button, its labels, their notice and their worker group."""

    SUBMIT_ID: ClassVar[str]
    SUBMIT_LABEL: ClassVar[str]
    BUSY_LABEL: ClassVar[str]
    NOTICE_ID: ClassVar[str]
    WORKER_GROUP: ClassVar[str]  # the form's one worker: its failure is shown in the form
    FAILURE: ClassVar[str]  # "Creating the endpoint failed", ...

    busy = False

    def worker_failed(self, group: str, error: BaseException | None) -> None:
        self._set_busy(False)
        self._notice(
            NoticeText(f"{self.FAILURE} unexpectedly.", hint=failure_text(error), error=True)
        )

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        button = self.query_one(f"#{self.SUBMIT_ID}", Button)
        button.disabled = busy
        button.label = self.BUSY_LABEL if busy else self.SUBMIT_LABEL

    def _notice(self, notice: NoticeText | None) -> None:
        self.query_one(f"#{self.NOTICE_ID}", Notice).show(notice)
