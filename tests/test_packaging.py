"""What a user's ``pip install`` gets: the wheel's contents, and the lowest versions of every
dependency that ``pyproject.toml`` declares actually running the smoke commands."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).with_name("uv"))
    assert Path(found).exists(), "uv is part of the test extra: pip install -e '.[test]'"
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [_uv(), "build", "--wheel", "--out-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (built,) = out.glob("walletpass_tui-*.whl")
    return built


def test_the_wheel_ships_the_license_the_types_and_the_styles(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "walletpass_tui/py.typed" in names
    assert {"walletpass_tui/ui/app.tcss", "walletpass_tui/ui/panes.tcss"} <= set(names)
    assert "License-Expression: MIT" in text


def test_the_lowest_declared_versions_run_the_smoke_commands(wheel: Path, tmp_path: Path) -> None:
    """Installs the wheel with every direct dependency at the lowest version its floor allows
    (uv's lowest-direct resolution), then runs scripts/smoke.py against that install."""
    venv = tmp_path / "lowest"
    uv = _uv()
    subprocess.run(
        [uv, "venv", "--quiet", "-p", sys.executable, str(venv)], check=True, timeout=300
    )
    python = venv / "bin" / "python"
    subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "-p",
            str(python),
            "--resolution",
            "lowest-direct",
            str(wheel),
        ],
        check=True,
        timeout=600,
    )
    done = subprocess.run(
        [
            str(python),
            str(ROOT / "scripts" / "smoke.py"),
            "--bin",
            str(venv / "bin" / "walletpass-tui"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
