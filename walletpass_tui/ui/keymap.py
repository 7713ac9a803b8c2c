"""Keys remapped in the config file: ``[keys]`` maps a binding id to the keys that run it.

    [keys]
    "app.quit" = "ctrl+x"
    "log.filter" = "slash,ctrl+f"      # several keys, comma-separated
    "copy.curl" = "C"

Every binding of the dashboard has an id (``?`` lists them beside the keys). An entry naming no
binding, or keys Textual would never see, is left out and said in one line naming the file; the
others are applied with ``App.set_keymap``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual.binding import Binding, BindingType
from textual.keys import (
    KEY_ALIASES,
    KEY_DISPLAY_ALIASES,
    REPLACED_KEYS,
    Keys,
    _get_unicode_name_from_key,
)

from walletpass_tui.text import printable

MODIFIERS = frozenset({"ctrl", "shift", "alt", "meta", "super", "hyper"})
_NAMED = frozenset(
    {value.split("+")[-1] for value in (k.value for k in Keys)}
    | set(KEY_ALIASES)
    | set(KEY_DISPLAY_ALIASES)
    | {"space", "tab", "enter", "backspace", "escape"}
)


def key_problem(key: str) -> str | None:
    """Why ``key`` (one key, such as ``ctrl+x``, ``question_mark``, ``?`` or ``f5``) cannot be
    bound, or None."""
    if not key or key != key.strip() or " " in key:
        return f"{key!r} is not a key name"
    *modifiers, name = key.split("+")
    unknown = [m for m in modifiers if m not in MODIFIERS]
    if unknown:
        return f"{printable(unknown[0], 20)!r} is not a modifier (use ctrl, shift, alt or meta)"
    if not name:
        return f"{printable(key, 40)!r} names no key after its modifiers"
    if len(name) == 1:
        return None if name.isprintable() else f"{printable(name)!r} is not a key"
    if name in _NAMED:
        return None
    try:
        unicodedata.lookup(_get_unicode_name_from_key(REPLACED_KEYS.get(name, name)))
    except KeyError:  # the reason is the answer
        return f"{printable(name, 40)!r} is not a key name (such as x, ctrl+x, f5, slash)"
    return None


@dataclass(frozen=True)
class CheckedKeymap:
    keymap: dict[str, str]  # the entries that can be applied
    problems: list[str]  # one sentence per entry left out, naming the file


def check_keymap(keys: Mapping[str, Any], known: Iterable[str], path: Path | None) -> CheckedKeymap:
    """The ``[keys]`` entries that name a binding and keys that can be bound; one line per other
    entry (it is ignored)."""
    ids = set(known)
    where = f"The config file {path}" if path is not None else "The config file"
    keymap: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, value in keys.items():
        shown = printable(str(binding_id), 40)
        if binding_id not in ids:
            problems.append(
                f"{where} remaps {shown!r} in [keys], which is no binding id "
                "(? lists them); that entry is ignored."
            )
            continue
        if not isinstance(value, str):
            problems.append(
                f"{where} gives {shown} a {type(value).__name__} in [keys]; write its keys "
                'as a string ("ctrl+x" or "x,ctrl+x"). That entry is ignored.'
            )
            continue
        found = [key_problem(key.strip()) for key in value.split(",")]
        problem = next((p for p in found if p), None)
        if problem:
            problems.append(f"{where} remaps {shown} in [keys], but {problem}; ignored.")
            continue
        keymap[binding_id] = ",".join(key.strip() for key in value.split(","))
    return CheckedKeymap(keymap, problems)


def binding_ids(groups: Iterable[tuple[str, Iterable[BindingType]]]) -> set[str]:
    """Every binding id in ``groups`` (the help screen's)."""
    return {
        binding.id
        for _title, bindings in groups
        for binding in Binding.make_bindings(bindings)
        if binding.id
    }
