"""What a user's ``pip install`` gets: the wheel's contents, and the lowest versions of every
dependency that ``pyproject.toml`` declares actually running the smoke commands."""

from __future__ import annotations

import json
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


def _floors() -> dict[str, str]:
    """Each dependency pyproject.toml declares for this machine, with its floor."""
    import tomllib

    from packaging.requirements import Requirement

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    floors = {}
    for text in declared:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        [floor] = [spec.version for spec in requirement.specifier if spec.operator == ">="]
        floors[requirement.name] = floor
    return floors


def test_the_lowest_declared_versions_run_the_smoke_commands(wheel: Path, tmp_path: Path) -> None:
    """Installs every dependency at the lowest version its floor allows (uv's lowest-direct
    resolution over pyproject's list, so each is a direct requirement: given the wheel alone,
    only the wheel would be "direct" and its dependencies would come at their newest), checks
    each is at its declared floor, then runs scripts/smoke.py against that install: the demo
    drawing deliveries, listen, trigger, events show and replay, relay serve, web, the
    dashboard."""
    from packaging.version import Version

    venv = tmp_path / "lowest"
    uv = _uv()
    subprocess.run(
        [uv, "venv", "--quiet", "-p", sys.executable, str(venv)], check=True, timeout=300
    )
    python = venv / "bin" / "python"
    install = [uv, "pip", "install", "--quiet", "-p", str(python)]
    subprocess.run(
        [*install, "--resolution", "lowest-direct", "-r", str(ROOT / "pyproject.toml")],
        check=True,
        timeout=600,
    )
    subprocess.run([*install, "--no-deps", str(wheel)], check=True, timeout=600)
    floors = _floors()
    listed = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, json, sys; "
         "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))", *floors],
        check=True, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    installed = json.loads(listed.stdout)
    above = {n: v for n, v in installed.items() if Version(v) != Version(floors[n])}
    assert above == {}, f"not at their declared floor (raise the floor to what runs): {above}"
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
    assert "ok  the demo draws its deliveries and quits" in done.stdout
