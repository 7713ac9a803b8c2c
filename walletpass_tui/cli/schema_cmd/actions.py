"""What the ``schema`` actions do (their arguments are in ``schema_cmd.py``).

Reading opens the schema file read only and never creates it: a home without a history says
"No history yet", one whose schemas were not learned yet says so (``[]`` with ``--json``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from walletpass_tui.api.topics import TOPICS
from walletpass_tui.cli.common import CommandError, print_json, print_table, settings_from_args
from walletpass_tui.cli.progress import Progress
from walletpass_tui.config import Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.schemas.catalog import MAX_GROUPS
from walletpass_tui.schemas.drift import DRIFT_AFTER
from walletpass_tui.text import format_ms, printable

if TYPE_CHECKING:
    from walletpass_tui.schemas.model import GroupKey
    from walletpass_tui.schemas.reader import SchemaReader
    from walletpass_tui.schemas.records import FieldInfo

T = TypeVar("T")


def _no_history(settings: Settings) -> str:
    return (
        f"No history yet in {settings.home}; schemas are learned from the deliveries "
        "'walletpass-tui listen' (or the dashboard) receives."
    )


NOTHING_LEARNED = (
    "Nothing learned yet: schemas are learned from verified deliveries while 'walletpass-tui "
    "listen' or the dashboard runs ('walletpass-tui schema rebuild' learns the stored history "
    "now, 'walletpass-tui templates' the pass templates)."
)


def _reading(work: Callable[[], T]) -> T:
    """Run ``work``; the schema file's problems become one line (exit 1)."""
    from walletpass_tui.schemas.errors import SchemaError

    try:
        return work()
    except SchemaError as exc:
        raise CommandError(str(exc)) from None


def _reader(settings: Settings) -> SchemaReader | None:
    """The reader of this home's schemas; None when neither a history nor a schema file is
    there (nothing is created either way)."""
    from walletpass_tui.schemas.reader import SchemaReader

    reader = SchemaReader(settings.database_path)
    if not settings.database_path.exists() and not reader.path.exists():
        return None
    return reader


def group_key(text: str, reader: SchemaReader | None) -> GroupKey:
    """TOPIC as a person types it: a topic of the service (full or short name), ``templates``,
    ``unknown`` (deliveries without a topic), ``topic:NAME`` (the topic NAME exactly), or any
    other topic learned from the wire (as ``schema list`` names it: a topic holding control
    characters is typed as it is shown there, escaped). Anything else is a usage error (exit 2)
    naming what there is."""
    from walletpass_tui.schemas.model import TOPIC_PREFIX, GroupKey, builtin_group

    found = builtin_group(text)
    if found is not None and not text.startswith(TOPIC_PREFIX):
        return found
    learned = [] if reader is None else _reading(reader.groups)
    topics = [g.group.topic for g in learned if not g.group.templates and g.group.topic]
    if found is not None:  # topic:NAME, NAME exactly or as 'schema list' shows it
        if found.topic in topics:
            return found
        return _shown_as(found.topic or "", topics) or found
    name = text.strip()
    for candidate in (name, "pass." + name):
        if candidate in topics:
            return GroupKey.of_topic(candidate)
    shown = _shown_as(text, topics) or _shown_as(name, topics)
    if shown is not None:
        return shown
    others = [g.label for g in learned if g.group.topic and g.group.topic not in TOPICS]
    named = ", ".join(printable(t, 40) for t in others[:CHOICES_NAMED])
    if len(others) > CHOICES_NAMED:
        named += f" and {len(others) - CHOICES_NAMED} more ('schema list' names them)"
    also = f", or one learned from the wire: {named}" if others else ""
    not_learned = 0 if reader is None else _reading(reader.topics_not_learned)
    raise UsageError(
        f"Unknown topic '{printable(text, 60)}': give pass.activated or pass.deactivated "
        "(activated, deactivated), templates, or unknown (deliveries without a topic)"
        + also
        + "."
        + (f" {_not_learned(not_learned)}." if not_learned else "")
    )


CHOICES_NAMED = 10  # topics from the wire an unknown topic's error names


def _shown_as(typed: str, topics: list[str]) -> GroupKey | None:
    """The one learned topic that is shown escaped as ``typed`` (``\\x1b[31mevil``)."""
    from walletpass_tui.schemas.model import GroupKey

    matches = [topic for topic in topics if printable(topic) == typed]
    return GroupKey.of_topic(matches[0]) if len(matches) == 1 else None


def _not_learned(count: int) -> str:
    return (
        f"{count} verified deliveries of further topics were not learned: schemas are learned "
        f"for at most {MAX_GROUPS} topics from the wire, the service's own topics always"
    )


# -- list ----------------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    reader = _reader(settings)
    groups = [] if reader is None else _reading(reader.groups)
    if args.json:
        print_json([g.to_json() for g in groups])
        return 0
    if reader is None:
        print(_no_history(settings))
        return 0
    if not groups:
        print(NOTHING_LEARNED)
        return 0
    rows = []
    for g in groups:
        notes = []
        if g.learning:
            notes.append(g.learning)
        if g.not_json:
            notes.append(f"{g.not_json} not JSON")
        if g.untracked:
            notes.append(f"{g.untracked}{'+' if g.untracked_more else ''} paths not tracked")
        if g.skipped:
            notes.append(f"{g.skipped} skipped (see the debug log)")
        rows.append(
            [
                printable(g.label, 40),
                str(g.samples),
                str(g.paths),
                str(g.drift),
                format_ms(g.last_seen_ms) if g.last_seen_ms else "-",
                ", ".join(notes),
            ]
        )
    print_table(rows, ["TOPIC", "SAMPLES", "PATHS", "DRIFT", "LAST SEEN", "NOTES"])
    not_learned = _reading(reader.topics_not_learned)
    if not_learned:
        print(_not_learned(not_learned) + ".")
    return 0


# -- show ----------------------------------------------------------------------------------------


def _types(info: FieldInfo) -> str:
    return " ".join(f"{kind}({count})" for kind, count in info.types.items())


def _presence(share: float) -> str:
    percent = share * 100
    return f"{percent:.0f}%" if percent in (0, 100) or percent >= 99.5 else f"{percent:.1f}%"


def _values(info: FieldInfo) -> str:
    """``"apple" 55%, "google" 45%``: a value set with each value's share."""
    return ", ".join(f"{printable(text, 30)} {_presence(share)}" for text, share in info.shares())


def cmd_show(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    reader = _reader(settings)
    key = group_key(args.topic, reader)
    summary = None
    fields: list[FieldInfo] = []
    if reader is not None:
        summary = next((g for g in _reading(reader.groups) if g.group == key), None)
        if summary is not None:
            fields = _reading(lambda: reader.fields(key))
    if args.json:
        doc: dict[str, Any] = {
            "topic": key.topic,
            "group": "templates" if key.templates else "topic",
            "label": key.label,
            "samples": summary.samples if summary else 0,
            "not_json": summary.not_json if summary else 0,
            "paths_not_tracked": summary.untracked if summary else 0,
            "skipped": summary.skipped if summary else 0,
            "learning": summary.samples < DRIFT_AFTER if summary else True,
            "drift_after": DRIFT_AFTER,
            "drift": summary.drift if summary else 0,
            "fields": [f.to_json() for f in fields],
        }
        print_json(doc)
        return 0
    label = printable(key.label, 60)
    if reader is None:
        print(_no_history(settings))
        return 0
    if summary is None:
        print(f"Nothing learned for {label} yet. {NOTHING_LEARNED.split(': ', 1)[1]}")
        return 0
    extra = f", {summary.not_json} not JSON" if summary.not_json else ""
    if summary.skipped:
        extra += f", {summary.skipped} skipped"
    print(
        f"{label}: {summary.samples} sample(s){extra}, {summary.paths} path(s), "
        f"{summary.drift} drift finding(s); last seen {format_ms(summary.last_seen_ms)}"
    )
    if summary.learning:
        print(
            f"{summary.learning}: drift is looked for once {label} has {DRIFT_AFTER} samples; "
            "then what the first ones disagreed on is reported."
        )
    rows = []
    for f in fields:
        shown = printable(f.path, 80)
        rows.append(
            [
                "  " * f.depth + shown + (" (open)" if f.open else ""),
                _types(f),
                _presence(f.presence),
                "" if f.example is None else printable(f.example, 40),
                format_ms(f.first_seen_ms) if f.first_seen_ms else "-",
                _values(f),
            ]
        )
    print_table(rows, ["PATH", "TYPES", "PRESENT", "FIRST VALUE", "FIRST SEEN", "VALUES"])
    return 0


# -- drift ---------------------------------------------------------------------------------------


def cmd_drift(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    since = args.since.ms if args.since else None
    reader = _reader(settings)
    key = group_key(args.topic, reader) if args.topic else None
    records = [] if reader is None else _reading(lambda: reader.drift(key, since_ms=since))
    if args.json:
        print_json([r.to_json() for r in records])
        return 0
    if reader is None:
        print(_no_history(settings))
        return 0
    if not records:
        learned = _reading(reader.groups)
        print("No drift found." if learned else NOTHING_LEARNED)
        return 0
    rows = [
        [
            format_ms(r.seen_at_ms),
            printable(r.group.label, 30),
            printable(r.path, 50),
            r.kind,
            printable(r.was or "-", 30),
            printable(r.now or "-", 30),
            str(r.count),
            printable(r.webhook_id or "-", 36),
        ]
        for r in records
    ]
    print_table(rows, ["FIRST SEEN", "TOPIC", "PATH", "KIND", "WAS", "NOW", "COUNT", "WEBHOOK-ID"])
    return 0


# -- export --------------------------------------------------------------------------------------


def cmd_export(args: argparse.Namespace) -> int:
    settings = settings_from_args(args)
    reader = _reader(settings)
    key = group_key(args.topic, reader) if args.topic is not None else None
    if reader is None:
        raise CommandError(_no_history(settings))
    if key is None:
        text = _reading(lambda: reader.export_topics(args.format))
    else:
        text = _reading(lambda: reader.export(key, args.format))
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


# -- rebuild -------------------------------------------------------------------------------------


def cmd_rebuild(args: argparse.Namespace) -> int:
    from walletpass_tui.schemas import rebuild

    settings = settings_from_args(args)
    history = settings.database_path
    if not history.exists():
        raise CommandError(_no_history(settings))
    progress = Progress("learned")

    def tell(done: int, total: int) -> None:
        progress.total = total
        progress.update(done)

    with progress:
        learned = _reading(lambda: rebuild(history, tell))
    print(f"Learned {learned:,} verified deliveries again from {history}.")
    return 0
