"""The project's own rules: the layers stay apart, lint is clean, CI runs the README's command."""

from __future__ import annotations

import ast
import io
import re
import shutil
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed; install the test extra: pip install -e '.[test]'")
    return found


def test_core_layers_never_import_the_ui() -> None:
    """pyproject.toml's import-linter contracts: the core never imports the UI or Textual, and
    the layers cli > ui > runtime > relay/check/sim/schemas > webhooks > tunnel > api > config >
    text hold."""
    result = subprocess.run([_tool("lint-imports")], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" in result.stdout and "0 broken" in result.stdout
    assert re.search(r"Layers: cli > ui .* KEPT", result.stdout.replace("\n", " ")), result.stdout


_CORE_IMPORT = """
import importlib, json, pkgutil, sys
# httpx imports its optional command line (and with it rich) only when click is installed, as
# import-linter's dependency is here; a user's install has no click. Keep the test about our code.
sys.modules["click"] = None
import walletpass_tui.runtime as runtime
import walletpass_tui.webhooks as core
for package in (core, runtime):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
print(json.dumps(sorted(m for m in ("textual", "rich") if m in sys.modules)))
"""


def test_the_core_loads_neither_textual_nor_rich() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _CORE_IMPORT], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", (
        f"importing walletpass_tui.webhooks and walletpass_tui.runtime loaded {result.stdout}"
    )


def _cycles(graph: Any) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in graph.modules:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    imported = graph.find_modules_directly_imported_by(child)
                    work.append((child, iter(sorted(imported))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_cycles_between_modules() -> None:
    """Every import counts, those inside functions too (a lazy import hides a cycle, it does
    not remove it) and those under ``if TYPE_CHECKING:`` (a type that needs one lives in the
    wrong module: the importer types against a protocol of what it uses instead)."""
    import grimp

    graph = grimp.build_graph("walletpass_tui", exclude_type_checking_imports=False)
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    class Toy:
        modules = {"a", "b", "c"}
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}}

        def find_modules_directly_imported_by(self, module: str) -> set[str]:
            return self.edges[module]

    assert _cycles(Toy()) == [["a", "b", "c"]]


def test_ruff_check_and_format_are_clean() -> None:
    ruff = _tool("ruff")
    check = subprocess.run([ruff, "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run([ruff, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout


@pytest.mark.slow
def test_mypy_is_clean() -> None:
    """pyproject.toml's [tool.mypy]: the core layers strictly, the rest in the default mode."""
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(ROOT / ".mypy_cache")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues found" in result.stdout


_STRICT_CORE = (
    "webhooks.store.writer",
    "runtime.local",
    "relay.server.serve",
    "api.client",
    "check.cases",
    "text",
)


def test_mypy_is_strict_for_the_core_only() -> None:
    """What ``--strict`` turns on for a module holds for the core layers' modules, and not for
    the UI's (a ``strict = true`` in an override would turn it on for every module)."""
    from mypy.config_parser import parse_config_file
    from mypy.main import process_options
    from mypy.options import PER_MODULE_OPTIONS, Options

    _, plain = process_options(["-c", "pass", "--config-file", ""])
    _, strict = process_options(["-c", "pass", "--config-file", "", "--strict"])
    flags = {
        n: getattr(strict, n) for n in PER_MODULE_OPTIONS if getattr(plain, n) != getattr(strict, n)
    }
    assert "disallow_untyped_defs" in flags

    ours = Options()

    def set_strict_flags() -> None:  # what mypy does with `strict = true` anywhere in the file
        for name, value in flags.items():
            setattr(ours, name, value)

    out = io.StringIO()
    parse_config_file(ours, set_strict_flags, str(ROOT / "pyproject.toml"), out, out)
    assert not out.getvalue()
    ours.build_per_module_cache()
    for module in _STRICT_CORE:
        options = ours.clone_for_module(f"walletpass_tui.{module}")
        loose = [n for n, value in flags.items() if getattr(options, n) != value]
        assert not loose, f"walletpass_tui.{module} is checked without {loose}"
    ui = ours.clone_for_module("walletpass_tui.ui.app")
    assert not ui.disallow_untyped_defs and not ui.warn_return_any


def _imports_of_test_modules(folder: Path) -> list[str]:
    """``path: module`` for each import, in a file under ``folder``, of a ``test_*`` module."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                names = [base] + [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                if name.rsplit(".", 1)[-1].startswith("test_"):
                    found.append(f"{path.relative_to(folder)}: {name}")
                    break
    return found


def test_no_test_module_imports_another() -> None:
    """What tests share lives in tests/factories.py, an area's ``*_helpers.py`` or a conftest
    fixture: importing a test module runs its tests twice and ties one file to the other."""
    assert _imports_of_test_modules(ROOT / "tests") == []


def test_the_test_import_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text("from test_b import make\n")
    (tmp_path / "test_c.py").write_text("from tests.webhooks import test_store\n")
    (tmp_path / "test_d.py").write_text("import tests.test_e\nfrom factories import attempt\n")
    assert _imports_of_test_modules(tmp_path) == [
        "test_a.py: test_b",
        "test_c.py: tests.webhooks.test_store",
        "test_d.py: tests.test_e",
    ]


def test_ci_runs_the_readme_test_command() -> None:
    """The README's test command is the last line .ci/run runs, word for word."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, re.S)
    test_cmd = next(b.strip() for b in blocks if "scripts/test.sh" in b)
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci[-1] == test_cmd == "bash scripts/test.sh"


def test_the_test_script_installs_what_is_missing(tmp_path: Path) -> None:
    """On a machine with none of the programs the tests drive, the README's test command would
    install each (--missing lists them and installs nothing)."""
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("bash", "dirname", "id", "env", Path(sys.executable).name):
        found = shutil.which(tool) or sys.executable
        (bare / tool).symlink_to(found)
    (bare / "python3").unlink(missing_ok=True)
    (bare / "python3").symlink_to(sys.executable)
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test.sh"), "--missing"],
        env={"PATH": str(bare), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    missing = done.stdout.split()
    assert {"zsh", "fish", "nodejs", "npm", "openssl", "tmux", "curl"} <= set(missing), missing
    assert "chromium" in missing or Path("/etc/os-release").read_text().count("ID=ubuntu")
    with_all = subprocess.run(
        ["bash", str(ROOT / "scripts" / "test.sh"), "--missing"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert with_all.stdout.strip() == ""  # this machine runs the tests: nothing is missing


def _defined_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.If):  # a name defined under a condition (a platform check)
            names.update(_defined_names(ast.Module(body=node.body + node.orelse, type_ignores=[])))
    return names


def _modules() -> dict[str, ast.Module]:
    found = {}
    for path in (ROOT / "walletpass_tui").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = ast.parse(path.read_text(encoding="utf-8"))
    return found


def test_every_name_is_imported_from_the_module_that_defines_it() -> None:
    """One import path per name: no module re-exports another's names, so a search for a name's
    import finds its one home."""
    modules = _modules()
    defined = {name: _defined_names(tree) for name, tree in modules.items()}
    wrong = []
    for folder in ("walletpass_tui", "tests", "benchmarks", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ImportFrom) or not node.module:
                    continue
                if node.module.startswith("walletpass_tui.") and node.module not in modules:
                    wrong.append(f"{path.relative_to(ROOT)}: no module {node.module}")
                    continue
                if node.module not in modules:
                    continue
                for alias in node.names:
                    home = defined[node.module]
                    if alias.name not in home and f"{node.module}.{alias.name}" not in modules:
                        wrong.append(f"{path.relative_to(ROOT)}: {node.module}.{alias.name}")
    assert not wrong, "imported from a module that does not define it:\n" + "\n".join(wrong)


README_MAX_LINES = 250


def test_the_readme_stays_short() -> None:
    """The README says what the tool is and how to start; details live in docs/."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move details to docs/"
    )


_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def _doc_pages() -> list[Path]:
    pages = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    pages += sorted((ROOT / "docs").rglob("*.md"))
    return [p for p in pages if p.exists()]


def _prose(text: str) -> str:
    """The text without fenced code blocks: what is there is shown, not linked."""
    return _FENCE.sub("", text)


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, -N on repeats."""
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for heading in _HEADING.findall(_prose(page.read_text())):
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _broken_links(page: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for target in _LINK.findall(_CODE_SPAN.sub("", _prose(page.read_text()))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # https:, mailto: ...: not a file of this repository
        path_part, _, anchor = target.partition("#")
        resolved = (page.parent / path_part).resolve() if path_part else page
        if not resolved.exists():
            broken.append(f"{target} (no such file)")
            continue
        if anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no heading #{anchor})")
    return broken


def test_relative_links_in_the_docs_point_to_what_exists() -> None:
    broken = {
        page.relative_to(ROOT).as_posix(): found
        for page in _doc_pages()
        if (found := _broken_links(page))
    }
    assert broken == {}


def test_the_link_check_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [ok](there.md#a-heading) [web](https://example.com/x.md)\n"
        "```sh\n[shown, not linked](nowhere.md)\n```\n"
        "[gone](missing.md) ![gone](pics/none.svg) [bad anchor](there.md#no-such)\n"
    )
    assert _broken_links(page, root=tmp_path) == [
        "missing.md (no such file)",
        "pics/none.svg (no such file)",
        "there.md#no-such (no heading #no-such)",
    ]


_INSTALL_BY_NAME = re.compile(
    r"\b(?:pip|pipx|uv tool|uv pip)\s+install\s+(?:-\S+\s+)*walletpass-tui\b"
)


def test_the_docs_never_install_the_package_from_an_index() -> None:
    """walletpass-tui is not published: every install goes through a checkout."""
    offenders = [
        f"{page.relative_to(ROOT)}: {line.strip()}"
        for page in _doc_pages()
        for line in page.read_text().splitlines()
        if _INSTALL_BY_NAME.search(line)
    ]
    assert offenders == []


# Exceptions that never reach a person: each is caught inside the layer that raises it.
INTERNAL_EXCEPTIONS = {
    "Rejected",  # webhooks.reasons: a request's refusal, answered with its status
    "BodyTooLarge",  # webhooks.request_body: turned into a Rejected
    "EventError",  # relay.events: an unreadable relayed event, recorded as rejected
    "_HeadTooLarge",  # webhooks.http_server: answered 431
    "_HandlerFailed",  # relay.link.subscriber: the handler's own error, re-raised
    "_Invalid",  # sim.http_api: answered 400
    "_Unsupported",  # sim.http_api: answered 415
    "_Refused",  # webhooks.http_server: answered with its status by the HTTP layer
    "WrongFormat",  # schemas.schema_file: the schema file is rebuilt
    "Damaged",  # schemas.storage: rows that are not ours, the schema file is rebuilt
    "Foreign",  # schemas.schema_file: a file this program did not make, deleted and made anew
    "Unlearnable",  # schemas.book: that delivery is skipped
    "NotJson",  # schemas.jsonscan: a body that teaches nothing
    "_Cut",  # query.values: the rest of a body past its bound is not read
    "PeerStalled",  # relay.server.stream: that subscriber is dropped
    "RelayRefused",  # relay.link.failures: the connection is dropped and resumed
    "_Rewound",  # relay.link.subscriber: the relay went back; resumed after its head at once
    "TooMuchOutput",  # tunnel.output: the tunnel's program is stopped, said as TunnelUnavailable
}


def test_every_error_a_person_may_see_has_the_one_root() -> None:
    """The command line maps an error to one line and an exit status with one isinstance check,
    so every exception class the package defines inherits WalletpassError (or is internal)."""
    import importlib

    from walletpass_tui.errors import WalletpassError

    outside = []
    for name, tree in _modules().items():
        for node in tree.body:
            if not isinstance(node, ast.ClassDef) or node.name in INTERNAL_EXCEPTIONS:
                continue
            kind = getattr(importlib.import_module(name), node.name)
            if issubclass(kind, BaseException) and not issubclass(kind, WalletpassError):
                outside.append(f"{name}.{node.name}")
    assert not outside, "errors outside the one root: " + ", ".join(outside)


LOG_METHODS = frozenset({"debug", "info", "warning", "error", "exception", "critical", "log"})


def test_no_exception_is_swallowed_without_a_word() -> None:
    """An ``except`` that does not re-raise logs what happened (``log.debug`` for the expected,
    ``log.warning`` for the unexpected) or says why nothing is worth logging in a comment on its
    line or before its first statement; so does every ``contextlib.suppress``. No pattern is
    exempt: an ``ImportError`` fallback says so too."""
    assert _silent_excepts(ROOT / "walletpass_tui") == []


def test_the_silent_except_check_finds_one(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        "import contextlib\n"
        "try:\n"
        "    import uvloop\n"
        "except ImportError:\n"  # 4: silent
        "    uvloop = None\n"
        "try:\n"
        "    x = int('1')\n"
        "except ValueError:  # not a number: None\n"
        "    x = None\n"
        "try:\n"
        "    x = int('2')\n"
        "except ValueError:\n"
        "    # not a number: None\n"
        "    x = None\n"
        "try:\n"
        "    x = int('3')\n"
        "except ValueError as exc:\n"
        "    log.debug('not a number: %s', exc)\n"
        "try:\n"
        "    x = int('4')\n"
        "except ValueError:\n"
        "    self._log.warning('not a number')\n"
        "try:\n"
        "    x = int('5')\n"
        "except ValueError:\n"
        "    raise SystemExit(2) from None\n"
        "try:\n"
        "    x = int('6')\n"
        "except ValueError:\n"  # 29: silent, the '#' is inside a string
        "    x = '# not a comment'\n"
        "with contextlib.suppress(OSError):\n"  # 31: silent
        "    pass\n"
        "with contextlib.suppress(OSError):  # already gone\n"
        "    pass\n"
    )
    assert _silent_excepts(tmp_path) == [
        "m.py:4: except ImportError:",
        "m.py:29: except ValueError:",
        "m.py:31: with contextlib.suppress(OSError):",
    ]


def _silent_excepts(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        comments = {
            token.start[0]
            for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.COMMENT
        }
        silent = []

        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ExceptHandler):
                if _raises(node) or _logs(node) or _said(comments, node.lineno, node.body):
                    continue
            elif isinstance(node, ast.With | ast.AsyncWith):
                if not any(_is_suppress(item.context_expr) for item in node.items):
                    continue
                if _said(comments, node.lineno, node.body):
                    continue
            else:
                continue
            silent.append(node.lineno)
        where = path.relative_to(root).as_posix()
        found += [f"{where}:{n}: {lines[n - 1].strip()}" for n in sorted(silent)]
    return found


def _said(comments: set[int], first: int, body: list[ast.stmt]) -> bool:
    """A comment on the line that opens the clause or before its first statement."""
    return any(n in comments for n in range(first, body[0].lineno + 1))


def _raises(handler: ast.ExceptHandler) -> bool:
    return any(isinstance(n, ast.Raise) for n in ast.walk(handler))


def _logs(handler: ast.ExceptHandler) -> bool:
    """A call of ``log.debug(...)``, ``logger.warning(...)``, ``self._log.exception(...)``."""
    for n in ast.walk(handler):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            receiver = n.func.value
            name = receiver.attr if isinstance(receiver, ast.Attribute) else ""
            name = receiver.id if isinstance(receiver, ast.Name) else name
            if n.func.attr in LOG_METHODS and "log" in name.lower():
                return True
    return False


def _is_suppress(expr: ast.expr) -> bool:
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    return (isinstance(func, ast.Attribute) and func.attr == "suppress") or (
        isinstance(func, ast.Name) and func.id == "suppress"
    )
