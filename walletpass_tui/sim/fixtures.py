"""A fixture: a JSON list of events to send in order (``trigger --fixture``, ``sim emit --fixture``).

Each item is one of:

* ``{"topic": "pass.activated"}``: a body made up as without a fixture, for that topic (either
  spelling), optionally with ``"set": {"data.passId": "pass_1", ...}``: fields to change, each a
  path as ``--set`` takes it and its JSON value;
* any other JSON object (one without a ``topic`` key): a full body, sent as it is (compactly
  written); its topic is read from it as the receiver reads it (``type``, ``event``...).

An item with a ``topic`` (or a ``set``) is always of the first kind, so a misspelt key next to it
is refused rather than sent as a body. The whole file is checked before anything is sent; each problem is a
FixtureError naming the item (``[2]``: the third, counting from 0) and what is wrong.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from walletpass_tui.api.topics import TOPICS, TopicError, parse_topic
from walletpass_tui.errors import UsageError
from walletpass_tui.sim.body_edit import Assignment, BodyEditError, apply, parse_path
from walletpass_tui.sim.events import event_body
from walletpass_tui.webhooks.body_fields import extract_topic

__all__ = ["MAX_EVENTS", "FixtureError", "FixtureEvent", "compact_json", "parse_fixture"]

MAX_EVENTS = 1_000
MAX_SETS = 100  # fields changed by one item
_DIRECTIVE_KEYS = frozenset({"topic", "set"})


class FixtureError(UsageError, ValueError):
    """A fixture that cannot be sent; ``str()`` names the item and the problem."""


@dataclass(frozen=True)
class FixtureEvent:
    """One event of a fixture: a given body, or one made up for ``topic`` with ``sets`` applied."""

    topic: str | None  # None: a given body that names no topic the service knows
    body: Any = None  # None: made up at send time (a fresh timestamp)
    sets: tuple[Assignment, ...] = field(default=())

    def document(self, when: datetime) -> Any:
        """The body to send, as JSON values (made up now, for ``when``, if not given)."""
        if self.body is not None:
            return self.body
        assert self.topic is not None
        doc = event_body(self.topic, when=when)
        for assignment in self.sets:
            apply(doc, assignment.path, assignment.value)
        return doc

    def render(self, when: datetime) -> bytes:
        """The body to send, compact JSON."""
        return compact_json(self.document(when))


def compact_json(doc: Any) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_fixture(data: bytes, *, need_topic: bool = False) -> list[FixtureEvent]:
    """The events of a fixture file's bytes, checked whole. ``need_topic``: every item must name
    a topic the service knows (the simulator routes events by topic)."""
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise FixtureError("it is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise FixtureError(f"it is not valid JSON ({exc.msg} at line {exc.lineno}).") from None
    except ValueError as exc:  # NaN, Infinity
        raise FixtureError(f"it is not valid JSON ({exc}).") from None
    except RecursionError:
        raise FixtureError("it is nested too deeply.") from None
    if not isinstance(doc, list):
        raise FixtureError(
            'it must hold a JSON list of events, e.g. [{"topic": "pass.activated"}].'
        )
    if not doc:
        raise FixtureError("the list is empty; give at least one event.")
    if len(doc) > MAX_EVENTS:
        raise FixtureError(f"it lists {len(doc)} events; at most {MAX_EVENTS:,} at once.")
    return [_item(index, item, need_topic) for index, item in enumerate(doc)]


def _item(index: int, item: Any, need_topic: bool) -> FixtureEvent:
    where = f"item [{index}]"
    if not isinstance(item, dict):
        raise FixtureError(f'{where} is not an object: each event is a body or {{"topic": ...}}.')
    if "topic" in item or "set" in item:
        return _directive(where, item)
    topic = extract_topic(item)
    known = topic if topic in TOPICS else None
    if need_topic and known is None:
        raise FixtureError(
            f"{where} is a body naming no topic the service knows (its type is "
            f'{json.dumps(topic)}); the simulator routes events by topic: give "type": '
            '"pass.activated" or "pass.deactivated", or use {"topic": ..., "set": {...}}.'
        )
    return FixtureEvent(topic=known, body=item)


def _directive(where: str, item: dict[str, Any]) -> FixtureEvent:
    unknown = sorted(set(item) - _DIRECTIVE_KEYS)
    if unknown:
        raise FixtureError(
            f"{where} has {', '.join(map(repr, unknown))} next to its topic; an item with a "
            '"topic" is an event to make up and has only "topic" and "set" (a full body names '
            'its topic in "type").'
        )
    if "topic" not in item:
        raise FixtureError(f'{where} has a "set" but no "topic" to make the body up for.')
    try:
        topic = parse_topic(item["topic"])
    except TopicError as exc:
        raise FixtureError(f"{where}: {exc}") from None
    sets = item.get("set", {})
    if not isinstance(sets, dict):
        raise FixtureError(
            f'{where}: "set" must be an object of path: value, e.g. {{"data.passId": "pass_1"}}.'
        )
    if len(sets) > MAX_SETS:
        raise FixtureError(f"{where} sets {len(sets)} fields; at most {MAX_SETS}.")
    assignments = []
    for path_text, value in sets.items():
        try:
            assignment = Assignment(parse_path(path_text), value)
            json.dumps(value, allow_nan=False)
        except BodyEditError as exc:
            raise FixtureError(f"{where}: {exc}") from None
        except ValueError:
            raise FixtureError(f"{where}: the value of {path_text!r} is not JSON.") from None
        assignments.append(assignment)
    event = FixtureEvent(topic=topic, sets=tuple(assignments))
    try:  # a path into a string or past a list is refused now, before anything is sent
        event.render(datetime.now().astimezone())
    except BodyEditError as exc:
        raise FixtureError(f"{where}: {exc}") from None
    return event
