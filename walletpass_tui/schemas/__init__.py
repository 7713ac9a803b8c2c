"""Payload schemas learned from verified deliveries, and the drift from them as it arrives.

The service documents neither a webhook body nor a pass template. This package learns, per topic
(``pass.activated``; ``topic unknown`` is its own group) and for the pass templates, every field
path with its JSON types, presence, first value, first/last sighting and value set (at most 12
values over at least 50), from verified deliveries only, and records drift (``field_added``,
``field_missing``, ``type_changed``, ``new_value``) once a topic has 20 samples, when it reports
what those 20 disagreed on. It is kept in ``<history>-schemas`` beside the history (0600),
learned off the commit path, and can always be deleted: it is learned again from the history.

Wiring (the runtime that owns the store, e.g. ``listen`` or the dashboard)::

    from walletpass_tui.schemas.learner import SchemaLearner

    learner = SchemaLearner(store.path).start()   # call on the event loop: listeners run there
    unfollow = learner.follow(store)              # wake after each commit (store.subscribe)
    learner.on_drift(lambda attempt_id, findings: ...)   # DriftRecord-able Findings, see below
    ...
    unfollow(); await learner.aclose()            # the step under way finishes first

``on_drift`` listeners get ``(attempt_id, findings)`` for each new delivery that showed drift
first, right after its batch is learned (at a steady rate within ``COALESCE_S`` + one step of the
commit; under saturation later, when the learner catches up: see learner.py); turn a
finding into its public record with ``DriftRecord.of(finding)`` (``.describe()`` gives
``pass.activated data.serialNumber: string -> integer``; escape it with ``text.printable``).
``on_learned(step)`` tells a view to refresh; ``on_progress(upto)`` says every row up to ``upto``
was looked at (its drift told first). ``learner.learn_templates(objects)`` feeds the template
objects of ``GET passTemplates`` (the ``templates`` group); without a running learner,
``learn_templates(history_path, objects)`` does the same (also before any delivery was stored).

Reading (any process, any thread; a missing file reads as nothing learned)::

    reader = SchemaReader(history_path)
    reader.groups()                       # [GroupSummary]: topic, samples, paths, drift, last seen
    reader.fields(GroupKey.of_topic("pass.activated"))   # [FieldInfo], tree order, root "$" first
    reader.drift(key=None, since_ms=None)                # [DriftRecord], newest first
    reader.drift_for_attempt(attempt_id)                 # events show --json's "drift" array
    reader.attempts_with_drift(limit=50)                 # row ids of drifting deliveries
    reader.messages_with_drift(limit=50)                 # events list --drift: webhook-ids
    reader.drift_for_messages(webhook_ids)               # ... and their findings
    reader.skipped()                                     # deliveries it could not take, and why
    reader.export(key, "jsonschema" | "typescript" | "pydantic" | "openapi")
    reader.export_topics("openapi")                      # every topic in one document

Each record has ``to_json()`` (the one JSON shape). Rebuilding (``schema rebuild``):
``rebuild(history_path, progress)`` without a running learner, or ``learner.rebuild(progress)``
with one; ``progress(done, total)`` counts verified deliveries.

Pure learning, no file (tests, one-off tools): ``Catalog().learn(Delivery.from_attempt(a))``;
a delivery whose verdict is not ``verified`` teaches nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from walletpass_tui.schemas.book import Progress
from walletpass_tui.schemas.errors import SchemaError
from walletpass_tui.schemas.records import DriftRecord
from walletpass_tui.schemas.schema_file import schemas_path


def rebuild(history_path: Path, progress: Progress | None = None) -> int:
    """Learn every topic again from the stored history (no learner needs to run; one that runs
    in another program notices and follows). Returns the deliveries learned."""
    import sqlite3

    from walletpass_tui.schemas.book import Book

    book = Book(Path(history_path))
    try:
        book.open()
        return book.rebuild(progress)
    except sqlite3.Error as exc:
        raise SchemaError.of(exc, schemas_path(Path(history_path))) from None
    finally:
        book.close()


def learn_templates(
    history_path: Path, templates: Iterable[Any], seen_at_ms: int | None = None
) -> list[DriftRecord]:
    """Learn the template objects of ``GET passTemplates`` (the ``templates`` group) without a
    running learner; returns the drift they showed. Works before any delivery was stored (the
    schema file is made beside where the history will be). A learner running in another
    program notices and follows."""
    import sqlite3

    from walletpass_tui.private_files import ensure_private_dir
    from walletpass_tui.schemas.book import Book

    path = Path(history_path)
    try:
        ensure_private_dir(path.parent)
    except OSError as exc:
        raise SchemaError(
            f"Cannot create the data directory {path.parent} ({exc.strerror or exc})."
        ) from None
    book = Book(path, history_optional=True)
    try:
        book.open()
        return [DriftRecord.of(f) for f in book.learn_templates(list(templates), seen_at_ms)]
    except sqlite3.Error as exc:
        raise SchemaError.of(exc, schemas_path(path)) from None
    finally:
        book.close()
