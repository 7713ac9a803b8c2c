"""The paths a query may name: what the learned schemas know (``SchemaReader``: each path's types
and presence) and what the field index has seen (rejected bodies included, and the values of the
paths that took few). An unknown path is named with the nearest known ones; the filter box offers
completions from here.

Reading both files is quick (at most 2,000 paths per topic, 10,000 in the index) and happens on
whatever thread calls ``load_known``; a file that cannot be read counts as knowing nothing (a
query is then not checked against it), never as an error of the query.
"""

from __future__ import annotations

import contextlib
import difflib
import logging
import sqlite3
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from walletpass_tui.query.condition import path_like
from walletpass_tui.query.index import index_path, mark_sql
from walletpass_tui.query.tree import All, AnyOf, Compare, FieldPath, Has, Node, Not, field_terms
from walletpass_tui.schemas.paths import ROOT
from walletpass_tui.text import printable
from walletpass_tui.webhooks.store import tables

log = logging.getLogger(__name__)

NEAREST = 3  # known paths named for an unknown one


@dataclass
class PathInfo:
    """One known path: its JSON types (most seen first), presence among the objects that could
    hold it (None: only the index has seen it), and its values when it took few."""

    path: str
    types: dict[str, int] = field(default_factory=dict)
    presence: float | None = None
    samples: int = 0
    values: tuple[str | int | float, ...] = ()  # as compared (text folded to lower case)
    counts: tuple[int, ...] = ()  # how often each of ``values`` was seen
    rows: int | None = None  # deliveries the field index found it in

    @property
    def type_text(self) -> str:
        ordered = sorted(self.types, key=lambda t: -self.types[t])
        return "|".join(ordered)


@dataclass
class KnownPaths:
    """Every path known, by its text (the schema's ``{*}`` paths included)."""

    paths: dict[str, PathInfo] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.paths

    def knows(self, path: FieldPath) -> bool:
        if path.text in self.paths or path.text == ROOT:
            return True
        return any(
            path_like(known, path.text) or path_like(path.text, known)
            for known in self.paths
            if "{*}" in known or path.any_key
        )

    def nearest(self, path: str) -> list[str]:
        """The known paths closest to ``path``: the same but for case first, then by likeness."""
        texts = list(self.paths)
        same = [t for t in texts if t.lower() == path.lower() and t != path]
        close = difflib.get_close_matches(path, texts, n=NEAREST, cutoff=0.75)
        ends = [t for t in texts if t.rsplit(".", 1)[-1].lower() == path.rsplit(".", 1)[-1].lower()]
        out: list[str] = []
        for text in [*same, *close, *ends]:
            if text not in out and text != path:
                out.append(text)
        return out[:NEAREST]

    def completions(self, prefix: str) -> list[PathInfo]:
        """Known paths that start with ``prefix`` (then those that hold it), in tree order."""
        low = prefix.lower()
        starts = [i for i in self.paths.values() if i.path.lower().startswith(low)]
        inside = [i for i in self.paths.values() if low in i.path.lower() and i not in starts]
        return [i for i in starts + inside if i.path != ROOT]


def unknown_path_problem(node: Node | None, known: KnownPaths) -> str | None:
    """A sentence naming the first path of the query that no delivery has shown, with the
    nearest known ones (None: every path is known, or nothing is known yet to judge by)."""
    if known.empty:
        return None
    for term in field_terms(node):
        if not known.knows(term.path):
            return describe_unknown(term.path.text, known)
    return None


def describe_unknown(path: str, known: KnownPaths) -> str:
    nearest = known.nearest(path)
    shown = printable(path, 80)
    if not nearest:
        return (
            f"No delivery has shown a field {shown}; 'walletpass-tui schema show' lists the "
            "known ones."
        )
    names = ", ".join(printable(n, 80) for n in nearest)
    return f"No delivery has shown a field {shown}; the nearest known: {names}."


def drop_unknown(node: Node | None, known: KnownPaths) -> Node | None:
    """The query without its terms on unknown paths (the rest still filters, on screen)."""
    if node is None or known.empty:
        return node
    if isinstance(node, Has | Compare):
        return node if known.knows(node.path) else None
    if isinstance(node, Not):
        inner = drop_unknown(node.part, known)
        return None if inner is None else Not(inner)
    if isinstance(node, All | AnyOf):
        kept = tuple(p for p in (drop_unknown(p, known) for p in node.parts) if p is not None)
        if not kept:
            return None
        return kept[0] if len(kept) == 1 else type(node)(kept)
    return node


# -- loading ----------------------------------------------------------------------------------


def load_known(history: Path, topic: str | None = None) -> KnownPaths:
    """The paths the schemas learned (of ``topic`` only, when given) and those the field index
    has seen, with the few values of those that took few."""
    known = KnownPaths()
    _from_schemas(known, Path(history), topic)
    _from_index(known, Path(history))
    return known


def _from_schemas(known: KnownPaths, history: Path, topic: str | None) -> None:
    from walletpass_tui.schemas.errors import SchemaError
    from walletpass_tui.schemas.reader import SchemaReader

    reader = SchemaReader(history)
    try:
        groups = [g for g in reader.groups() if not g.group.templates]
        if topic is not None:
            groups = [g for g in groups if g.group.topic == topic]
        for group in groups:
            for info in reader.fields(group.group):
                entry = known.paths.setdefault(info.path, PathInfo(info.path))
                for kind, count in info.types.items():
                    entry.types[kind] = entry.types.get(kind, 0) + count
                weight = entry.samples + group.samples
                if weight:
                    before = (entry.presence or 0.0) * entry.samples
                    entry.presence = (before + info.presence * group.samples) / weight
                entry.samples = weight
    except SchemaError as exc:  # no schema to judge by: the index alone says what is known
        log.debug("The learned schemas were not read: %s", exc)


@contextlib.contextmanager
def _index(history: Path) -> Iterator[sqlite3.Connection | None]:
    """The field index, read only, when it is the index of the history at ``history``."""
    path = index_path(history)
    if any(not f.exists() or tables.not_files(f) for f in (path, history)):  # see Reader._ready
        yield None
        return
    try:
        db = sqlite3.connect(_read_only(path), uri=True, isolation_level=None)
    except sqlite3.Error as exc:  # no index to read: nothing known from it
        log.debug("The field index %s was not read: %s", path, exc)
        yield None
        return
    try:
        usable = False
        try:
            db.execute("ATTACH DATABASE ? AS history", (_read_only(history),))
            found = db.execute(mark_sql("main", "history")).fetchone()
            usable = found is not None and found[0] is not None
            if not usable:
                log.debug("The field index %s is of another history: not read", path)
        except sqlite3.Error as exc:  # no index to read: nothing known from it
            log.debug("The field index %s was not read: %s", path, exc)
        yield db if usable else None
    finally:
        db.close()


def _read_only(path: Path) -> str:
    return "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=ro"


def _from_index(known: KnownPaths, history: Path) -> None:
    with _index(history) as db:
        if db is None:
            return
        try:
            paths = db.execute("SELECT id, text, rows FROM paths").fetchall()
            few = db.execute(
                "SELECT path, COALESCE(shown, value), count FROM few ORDER BY count DESC, value"
            ).fetchall()
        except sqlite3.Error as exc:  # a damaged or older index: the schemas alone say
            log.debug("The field index of %s was not read: %s", history, exc)
            return
    texts = {int(pid): str(text) for pid, text, _ in paths}
    for _, text, rows in paths:
        known.paths.setdefault(str(text), PathInfo(str(text))).rows = int(rows)
    values: dict[str, list[tuple[str | int | float, int]]] = {}
    for pid, value, count in few:
        if isinstance(value, str | int | float) and int(pid) in texts:
            values.setdefault(texts[int(pid)], []).append((value, int(count)))
    for text, found in values.items():
        known.paths[text].values = tuple(v for v, _ in found)
        known.paths[text].counts = tuple(n for _, n in found)
