"""The schema tests' TypeScript compiler.

``tsc`` (session): TypeScript 5 installed with npm once into a cache directory
(``$XDG_CACHE_HOME/walletpass-tui-tests/typescript5``, else ``~/.cache/...``) and reused; a test
that needs it FAILS, never skips, when node or npm is missing or the install fails.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

# -- TypeScript ------------------------------------------------------------------------------------


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "walletpass-tui-tests" / "typescript5"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def tsc() -> list[str]:
    """The command that runs TypeScript 5's compiler."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None:
        pytest.fail("The TypeScript export test needs node (apt-get install nodejs npm).")
    target = _cache_dir()
    compiler = target / "node_modules" / "typescript" / "bin" / "tsc"
    with _locked(target.parent / "typescript5.lock"):
        if not compiler.exists():
            if npm is None:
                pytest.fail("The TypeScript export test needs npm to install typescript@5.")
            done = subprocess.run(
                [
                    npm,
                    "install",
                    "--prefix",
                    str(target),
                    "--no-audit",
                    "--no-fund",
                    "typescript@5",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not compiler.exists():
                pytest.fail(
                    f"npm could not install typescript@5 into {target}: "
                    f"{(done.stderr or done.stdout).strip()[-2000:]}"
                )
    return [node, str(compiler)]
