""" "Check my app": the battery of ``walletpass-tui check`` run from the dashboard against your app.

The target is prefilled from ``--forward-to`` (or the last replay), the secret is the first local
endpoint's unless you pick another or paste one. Cases fill in as they finish; the highlighted
case's verdict and your app's answer show below the table, and Enter opens exactly what was sent
(every case is recorded in the history like a replay). Your app's answers are untrusted: they are
shown only as ``Text`` built from escaped strings, never as markup.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, DataTable, Input, Label, Select, Static

from walletpass_tui.api.topics import TOPICS
from walletpass_tui.check.cases import Case, build_cases
from walletpass_tui.check.judge import Outcome
from walletpass_tui.check.report import got
from walletpass_tui.check.runner import (
    CaseResult,
    CheckError,
    CheckOptions,
    CheckReport,
    run_check,
    target_problem,
)
from walletpass_tui.text import body_text, one_line
from walletpass_tui.ui.screens.detail import DetailScreen
from walletpass_tui.ui.view.context import DashboardContext
from walletpass_tui.ui.widgets.key_line import KeyLine
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.target_options import TargetOptions
from walletpass_tui.webhooks.verify import SecretError, parse_secret

ANSWER_PREVIEW = 300  # characters of the app's answer shown under the table
COLUMNS = (("case", "case"), ("expected", "expected"), ("got", "got"), ("verdict", "verdict"))
VERDICT_STYLE = {
    Outcome.PASS: "bold green",
    Outcome.FAIL: "bold red",
    Outcome.WARN: "bold yellow",
}
MARK = {Outcome.PASS: "✓", Outcome.FAIL: "✗", Outcome.WARN: "!"}


SHORT_ROWS = 30  # below this height the form's fields lose their borders


class CheckScreen(Screen[None]):
    CSS_PATH = "check.tcss"
    BINDINGS = [
        Binding("escape", "close", "Back", id="check.close"),
        Binding("ctrl+r", "run", "Run the check", priority=True, id="check.run"),
        Binding("enter", "open_case", "What was sent", id="check.open_case"),
    ]

    def __init__(
        self,
        store: Store | None,
        registry: EndpointRegistry,
        *,
        target: str = "",
        options_for: Callable[[str], TargetOptions] | None = None,
        token_for: Callable[[str], str | None] | None = None,
    ) -> None:
        super().__init__(id="check")
        # The check token for a target that is this home's own receiver (read on a thread).
        self.token_for = token_for
        # The headers and certificates the dashboard's flags give a --forward-to target.
        self.options_for = options_for
        self.store = store
        self.registry = registry
        self.initial_target = target
        self.endpoints = [e for e in registry.load() if e.secret]
        self.results: dict[str, CaseResult] = {}
        self.cases: list[Case] = []
        self.running = False

    @classmethod
    def for_context(cls, context: DashboardContext) -> CheckScreen:
        """The screen as the dashboard opens it: your app's URL from ``--forward-to``, every case
        recorded in the dashboard's history. (``store`` None: nothing recorded.)"""
        return cls(
            context.store,
            context.registry,
            target=context.replay_target(),
            options_for=context.target_options,
            token_for=context.check_token,
        )

    # -- layout ----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(Text("Check my app  (esc: back)"), id="check-title")
        with Vertical(id="check-form"):
            with Horizontal(classes="check-row"):
                yield Label("Your app", classes="check-label")
                yield Input(
                    self.initial_target,
                    placeholder="http://localhost:3000/webhooks",
                    id="check-target",
                )
            with Horizontal(classes="check-row"):
                yield Label("Secret", classes="check-label")
                choices = [(f"{e.id}  {e.secret.masked}", e.id) for e in self.endpoints]
                if choices:
                    yield Select(choices, allow_blank=False, id="check-endpoint")
                else:
                    yield Select(
                        [], prompt="no endpoint known: paste a secret →", id="check-endpoint"
                    )
                yield Input(placeholder="or paste whsec_…", password=True, id="check-secret")
                yield Button("Run", id="check-run", variant="primary")
            yield Static(id="check-problem")
        table: DataTable[Text | str] = DataTable(
            id="check-table", cursor_type="row", zebra_stripes=True
        )
        yield table
        yield Static(id="check-answer")
        yield Static(id="check-summary")
        yield KeyLine(id="check-keys")

    def on_mount(self) -> None:
        table = self.table
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        self._summary(Text("Nothing sent yet. Ctrl+R runs the check against your app."))
        target = self.query_one("#check-target", Input)
        if target.value:
            table.focus()
        else:
            target.focus()

    def on_resize(self) -> None:
        """On a short terminal the form draws without borders, leaving the rows to the cases."""
        short = self.size.height < SHORT_ROWS
        self.set_class(short, "-short")
        for widget in self.query("#check-form Input, #check-form Select, #check-form Button"):
            widget.compact = short  # type: ignore[attr-defined]  # Input, Select, Button have it

    @property
    def table(self) -> DataTable[Text | str]:
        return self.query_one("#check-table", DataTable)

    # -- running ---------------------------------------------------------------------------------

    def options(self) -> CheckOptions:
        """What the form asks for; CheckError saying what to fix."""
        target = self.query_one("#check-target", Input).value.strip()
        problem = target_problem(target)
        if problem:
            raise CheckError(problem)
        pasted = self.query_one("#check-secret", Input).value.strip()
        chosen = self.query_one("#check-endpoint", Select).value
        endpoint = next((e for e in self.endpoints if e.id == chosen), None)
        if pasted:
            secret, endpoint_id, topics = pasted, None, TOPICS
        elif endpoint is not None:
            secret, endpoint_id = endpoint.secret.reveal(), endpoint.id
            topics = tuple(t for t in endpoint.topics if t in TOPICS) or TOPICS
        else:
            raise CheckError("Pick an endpoint or paste the secret your app verifies with.")
        try:
            parse_secret(secret)
        except SecretError as exc:
            raise CheckError(str(exc)) from None
        extra = self.options_for(target) if self.options_for else TargetOptions()
        return CheckOptions(
            target, secret, tuple(topics), endpoint_id=endpoint_id, target_options=extra
        )

    @on(Button.Pressed, "#check-run")
    @on(Input.Submitted)
    def action_run(self) -> None:
        if self.running:
            return
        try:
            options = self.options()
        except CheckError as exc:  # shown in the form
            self._problem(str(exc))
            return
        self._problem(None)
        self.start(options)

    def start(self, options: CheckOptions, cases: Sequence[Case] | None = None) -> None:
        """Run the battery in a worker; the table fills in as cases finish."""
        self.cases = (
            list(cases) if cases is not None else build_cases(options.secret, options.topics)
        )
        self.results.clear()
        self._rows(self.cases)
        self.running = True
        self.query_one("#check-run", Button).disabled = True
        self._summary(
            Text(
                f"Sending {len(self.cases)} cases to {one_line(options.target, 80)}, one at a time…"
            )
        )
        self.table.focus()
        self._run(options)

    @work(exclusive=True, group="check", exit_on_error=False)
    async def _run(self, options: CheckOptions) -> None:
        try:
            if self.token_for is not None and options.check_token is None:
                token = await asyncio.to_thread(self.token_for, options.target)
                options = replace(options, check_token=token)
            report = await run_check(
                options,
                store=self.store,
                cases=self.cases,
                on_start=self._case_started,
                on_result=self.case_done,
            )
        except Exception as exc:
            self._problem(f"The check stopped: {exc}")
            raise
        finally:
            self.running = False
            if self.is_attached:  # not when the screen was closed mid-run
                self.query_one("#check-run", Button).disabled = False
        self.show_summary(report)

    def _case_started(self, case: Case) -> None:
        self.table.update_cell(case.id, "got", Text("sending…", style="italic"))

    # -- showing -----------------------------------------------------------------------------

    def _rows(self, cases: Sequence[Case]) -> None:
        table = self.table
        table.clear()
        for case in cases:
            table.add_row(
                Text(case.title),
                Text(case.expected),
                Text("waiting", style="dim"),
                Text(""),
                key=case.id,
            )

    def case_done(self, result: CaseResult) -> None:
        """One case finished: its row filled in (also used to show fixed results)."""
        self.results[result.case.id] = result
        outcome = result.outcome
        table = self.table
        # The columns widen to the answer: they were laid out for "waiting" and "sending…".
        table.update_cell(result.case.id, "got", Text(got(result)), update_width=True)
        table.update_cell(
            result.case.id,
            "verdict",
            Text(f"{MARK[outcome]} {outcome.value}", style=VERDICT_STYLE[outcome]),
            update_width=True,
        )
        row = table.cursor_row
        if 0 <= row < len(self.cases) and self.cases[row].id == result.case.id:
            self._show_answer(result)

    def show_results(self, cases: Sequence[Case], results: Sequence[CaseResult]) -> None:
        """Fill the table with finished results (screenshots, tests)."""
        self.cases = list(cases)
        self._rows(self.cases)
        for result in results:
            self.case_done(result)

    def show_summary(self, report: CheckReport) -> None:
        for case in self.cases[len(report.results) :]:  # the check stopped: no connection
            self.table.update_cell(case.id, "got", Text("not sent", style="dim"))
        if report.never_connected:
            why = report.results[0].answer.error or "no answer"
            self._summary(
                Text(f"Nothing answered ({one_line(why, 80)}). Start your app and run it again.")
            )
            return
        passed, failed, warned = (report.count(o) for o in Outcome)
        text = Text()
        text.append(f"{passed} passed", style="green")
        text.append(", ")
        text.append(f"{failed} failed", style="bold red" if failed else "")
        text.append(", ")
        text.append(
            f"{warned} warning{'s' if warned != 1 else ''}", style="yellow" if warned else ""
        )
        if report.unreachable:
            first = report.results[0].answer.error or "no answer"
            text.append(
                f": nothing answered ({one_line(first, 80)}). Start your app and run it again."
            )
        elif report.passed:
            text.append(": every must-pass case passed.")
        else:
            text.append(": your app needs fixing before it meets the service.")
        if report.stopped is not None:
            text.append(f" It stopped answering; {report.not_sent} not sent.")
        text.append("  Enter: what was sent.", style="dim")
        self._summary(text)

    @on(DataTable.RowHighlighted, "#check-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value if event.row_key is not None else None
        result = self.results.get(key or "")
        if result is not None:
            self._show_answer(result)
        else:
            case = next((c for c in self.cases if c.id == key), None)
            why = f"{case.title}: {case.why}" if case else ""
            self.query_one("#check-answer", Static).update(Text(why, style="dim"))

    def _show_answer(self, result: CaseResult) -> None:
        outcome = result.outcome
        text = Text()
        text.append(f"{MARK[outcome]} {outcome.value}: ", style=VERDICT_STYLE[outcome])
        text.append(one_line(result.judgement.reason, 300))
        if outcome is Outcome.PASS:
            text.append(f"\nWhy it matters: {result.case.why}", style="dim")
        answer = result.answer
        if answer.body:
            shown, _ = body_text(answer.body, ANSWER_PREVIEW)
            text.append("\nyour app answered: ", style="bold")
            text.append(one_line(shown, ANSWER_PREVIEW))  # untrusted: plain text, escaped
        elif answer.error:
            text.append(f"\n{one_line(answer.error, 200)}", style="dim")
        self.query_one("#check-answer", Static).update(text)

    @on(DataTable.RowSelected, "#check-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        self.open_case(event.row_key.value or "")

    def action_open_case(self) -> None:
        row = self.table.cursor_row
        if 0 <= row < len(self.cases):
            self.open_case(self.cases[row].id)

    def open_case(self, case_id: str) -> None:
        """What was sent for this case, and the answer, as the history holds them."""
        result = self.results.get(case_id)
        if result is None:
            self.notify("This case has not been sent yet.", markup=False)
            return
        if self.store is None or result.attempt_id is None:
            self.notify("This case was not recorded in the history.", markup=False)
            return
        self.app.push_screen(DetailScreen(self.store, result.attempt_id))

    def _summary(self, text: Text) -> None:
        self.query_one("#check-summary", Static).update(text)

    def _problem(self, problem: str | None) -> None:
        widget = self.query_one("#check-problem", Static)
        widget.update(Text(f"✗ {problem}") if problem else Text(""))
        widget.display = bool(problem)

    def action_close(self) -> None:
        if self.running:
            self.notify("The check is still running; it stops when you leave.", markup=False)
            self.workers.cancel_group(self, "check")
        self.dismiss(None)
