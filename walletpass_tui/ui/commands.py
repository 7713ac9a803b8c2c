"""Every dashboard action in the command palette (ctrl+p), by name.

An entry runs the action of the screen the palette was opened over when that screen has it
(filtering the log is the main screen's, replaying is the main and detail screens'), else the
app's (pause, theme, keys, quit); an entry neither has is not offered there.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.dom import DOMNode


@dataclass(frozen=True)
class PaletteCommand:
    title: str
    help: str
    action: str  # an action of the screen the palette is over, or of the app

    @property
    def name(self) -> str:
        return self.action.split("(")[0]


COMMANDS: tuple[PaletteCommand, ...] = (
    PaletteCommand(
        "New webhook endpoint",
        "Register an endpoint at the service; its secret is shown once and kept locally",
        "new_endpoint",
    ),
    PaletteCommand(
        "Import endpoint",
        "Record an endpoint created elsewhere, with its secret, to verify its deliveries",
        "import_endpoint",
    ),
    PaletteCommand("Refresh templates", "Fetch the pass templates again", "refresh_templates"),
    PaletteCommand(
        "Filter the event log",
        "Words in bodies and ids, topic:activated, verdict:rejected",
        "filter_log",
    ),
    PaletteCommand("Clear the log filter", "Show every delivery again", "clear_filter"),
    PaletteCommand(
        "Show only rejected deliveries", "Filter the log on verdict:rejected", "only('rejected')"
    ),
    PaletteCommand(
        "Show only verified deliveries", "Filter the log on verdict:verified", "only('verified')"
    ),
    PaletteCommand(
        "Hide check requests",
        "Only what senders posted: the requests Check my app sent are left out (source:received)",
        "only_source('received')",
    ),
    PaletteCommand(
        "Show only check requests",
        "The requests Check my app sent to your app, with its verdicts (source:check)",
        "only_source('check')",
    ),
    PaletteCommand("Follow new deliveries", "Jump to the newest delivery and stay there", "follow"),
    PaletteCommand(
        "Open the selected delivery", "Its verdict, attempts, headers and body", "open_detail"
    ),
    PaletteCommand(
        "Replay the selected delivery",
        "Send it to your app again: re-signed or as stored, the body editable",
        "replay",
    ),
    PaletteCommand(
        "Copy the selected delivery as curl",
        "A curl command that sends the same bytes and headers (as events export --format curl)",
        "copy('curl')",
    ),
    PaletteCommand("Copy the selected delivery's body", "The body as received", "copy('body')"),
    PaletteCommand(
        "Copy the selected delivery's headers", "Every header, one per line", "copy('headers')"
    ),
    PaletteCommand(
        "Check my app", "Test your own receiver as the service and an attacker would", "check_app"
    ),
    PaletteCommand(
        "Give up pending forwards",
        "Stop retrying the forwards waiting for your app (they stay in the history)",
        "give_up_forwards",
    ),
    PaletteCommand(
        "Pause or resume acknowledgements",
        "While paused, verified deliveries are stored but answered 503, so the service retries",
        "toggle_pause",
    ),
    PaletteCommand("Toggle dark and light theme", "Switch between the two", "toggle_theme"),
    PaletteCommand(
        "Show the Templates pane", "Jump to the pass templates", "show_pane('templates')"
    ),
    PaletteCommand("Show the Endpoints pane", "Jump to the endpoints", "show_pane('endpoints')"),
    PaletteCommand("Show the Events pane", "Jump to the event log", "show_pane('events')"),
    PaletteCommand(
        "Stats: the last hour",
        "Deliveries per minute by topic, rejections, redeliveries and your app's answer times",
        "stats",
    ),
    PaletteCommand(
        "Schema: learned payload fields and drift",
        "Each topic's fields with their types and presence, and what drifted from them",
        "schema",
    ),
    PaletteCommand(
        "Schema of the pass templates",
        "The template fields learned from the templates listed, and what drifted",
        "schema('templates')",
    ),
    PaletteCommand("Keys", "Every key of the dashboard", "help"),
    PaletteCommand("Quit", "Stop the receiver and leave", "quit"),
)


def action_target(command: PaletteCommand, screen: DOMNode, app: DOMNode) -> DOMNode | None:
    """Who runs ``command``: the screen if it has the action, else the app, else nobody."""
    for node in (screen, app):
        if callable(getattr(node, f"action_{command.name}", None)):
            return node
    return None


class DashboardCommands(Provider):
    def _available(self) -> list[tuple[PaletteCommand, DOMNode]]:
        found = []
        for command in COMMANDS:
            target = action_target(command, self.screen, self.app)
            if target is not None:
                found.append((command, target))
        return found

    async def discover(self) -> Hits:
        for command, target in self._available():
            yield DiscoveryHit(
                command.title,
                partial(self.app.run_action, command.action, target),
                help=command.help,
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command, target in self._available():
            score = matcher.match(command.title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(command.title),
                    partial(self.app.run_action, command.action, target),
                    text=command.title,
                    help=command.help,
                )
