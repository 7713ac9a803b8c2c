"""The error tree drawn in ``errors.py`` is the tree of the classes: every error a person may see
is drawn, under the parent it really has (as httpx keeps ``_exceptions.py`` true)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import walletpass_tui
from walletpass_tui import errors
from walletpass_tui.errors import WalletpassError

# "    │   ├── api.topics.TopicError        a topic name..." -> depth 2, "api.topics.TopicError"
_LINE = re.compile(r"^    ((?:│   |    )*)(?:├── |└── )(\S+)")


def drawn_tree() -> dict[str, str]:
    """Each class drawn in the docstring -> its parent as drawn (names relative to the package;
    the root's two classes as ``errors.Name``)."""
    lines = _doc().splitlines()
    stack = ["errors.WalletpassError"]
    parents: dict[str, str] = {}
    for line in lines:
        found = _LINE.match(line)
        if found is None:
            continue
        depth = len(found.group(1)) // 4 + 1
        name = found.group(2)
        name = f"errors.{name}" if "." not in name else name
        del stack[depth:]
        parents[name] = stack[-1]
        stack.append(name)
    return parents


def _doc() -> str:
    assert errors.__doc__ is not None
    return errors.__doc__


def _classes() -> list[type[WalletpassError]]:
    """Every WalletpassError subclass defined in the package (every module imported first)."""
    for info in pkgutil.walk_packages(walletpass_tui.__path__, "walletpass_tui."):
        if not info.name.endswith("__main__"):  # running it starts the dashboard
            importlib.import_module(info.name)
    found: list[type[WalletpassError]] = []
    pending = list(WalletpassError.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.startswith("walletpass_tui."):  # not a test's own subclass
            found.append(cls)
    return found


def error_classes() -> dict[str, str]:
    """Every error class of the package -> its WalletpassError parent."""
    return {
        _name(cls): _name(next(b for b in cls.__bases__ if issubclass(b, WalletpassError)))
        for cls in _classes()
    }


def _name(cls: type) -> str:
    return f"{cls.__module__.removeprefix('walletpass_tui.')}.{cls.__qualname__}"


def test_the_drawing_is_the_tree_of_the_classes() -> None:
    drawn = drawn_tree()
    real = error_classes()
    assert sorted(set(real) - set(drawn)) == [], "error classes missing from errors.py's drawing"
    assert sorted(set(drawn) - set(real)) == [], "drawn in errors.py, but no such error class"
    wrong = {name: (drawn[name], real[name]) for name in real if drawn[name] != real[name]}
    assert wrong == {}, "drawn under the wrong parent: (drawn, real)"


def test_the_errors_that_are_also_value_errors_are_starred() -> None:
    """Those an argument type turns into a usage error (exit 2) though they are not one."""
    starred = {
        m.group(2)
        for line in _doc().splitlines()
        if (m := _LINE.match(line)) and line.rstrip().endswith("*")
    }
    both = {
        _name(cls)
        for cls in _classes()
        if issubclass(cls, ValueError) and not issubclass(cls, errors.UsageError)
    }
    assert starred == both
