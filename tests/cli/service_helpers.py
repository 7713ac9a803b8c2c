"""Helpers for the service commands' tests: two stand-in servers (the base_url and
registration_url hosts) and ``walletpass_tui.cli.main([...])`` run in a worker thread (it runs its
own event loop) while the servers answer on the test's loop."""

from __future__ import annotations

import asyncio
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from walletpass_tui.cli import main
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry

API_KEY = "wp_live_Q7f3kLm9Xc2Vb8Nn1Zr5Tt0Yw4Hh6Jd"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
IMPORT_SECRET = "whsec_C2FtcGxlIHNlY3JldCBmb3IgdGVzdGluZyE="
TEMPLATES = "/api/v0/passTemplates"
ENDPOINTS = "/v0/webhookEndpoints"
HOOK_URL = "https://ab12.ngrok.app/webhooks"
SECRETS = (API_KEY, SECRET, IMPORT_SECRET)


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()

    def assert_one_line_failure(self, *fragments: str) -> str:
        assert self.code == 1, (self.out, self.err)
        assert len(self.err_lines) == 1, self.err
        [line] = self.err_lines
        assert line.startswith("walletpass-tui: error: ")
        assert "Traceback" not in self.err
        for fragment in fragments:
            assert fragment in line
        return line

    def assert_usage_error(self, *fragments: str) -> str:
        """Exit 2 and one line saying what to fix (argparse adds its usage line before it)."""
        assert self.code == 2, (self.out, self.err)
        assert "Traceback" not in self.err
        line = self.err_lines[-1]
        assert line.startswith("walletpass-tui: error: ") or ": error: " in line, self.err
        for fragment in fragments:
            assert fragment in line
        return line

    def assert_no_secret(self, *secrets: str) -> None:
        for secret in secrets or SECRETS:
            assert secret not in self.out
            assert secret not in self.err


def created_answer(**overrides: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "id": "ep_3f2a9c",
        "secret": SECRET,
        "url": HOOK_URL,
        "enabledTopics": ["pass.activated", "pass.deactivated"],
        "enabled": True,
        "createdAt": "2025-06-01T12:00:00.123Z",
    }
    answer.update(overrides)
    return answer


class Cli:
    def __init__(
        self, home: Path, api: Any, hooks: Any, capsys: pytest.CaptureFixture[str]
    ) -> None:
        self.home, self.api, self.hooks, self._capsys = home, api, hooks, capsys

    async def run(self, *argv: str) -> Result:
        def call() -> int:
            try:
                return main(list(argv))
            except SystemExit as exc:  # argparse: --help, --version, usage errors
                return exc.code if isinstance(exc.code, int) else 1

        self._capsys.readouterr()
        code = await asyncio.to_thread(call)
        captured = self._capsys.readouterr()
        return Result(code, captured.out, captured.err)

    @property
    def registry(self) -> EndpointRegistry:
        return EndpointRegistry(self.home / "endpoints.json")

    def no_requests(self) -> bool:
        return self.api.requests == [] and self.hooks.requests == []


async def make_cli(
    clean_env: Path,
    start_server: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Cli:
    api, hooks = await start_server(), await start_server()
    monkeypatch.setenv("WALLETPASS_BASE_URL", api.url)
    monkeypatch.setenv("WALLETPASS_REGISTRATION_URL", hooks.url)
    monkeypatch.setenv("WALLETPASS_API_KEY", API_KEY)
    return Cli(clean_env, api, hooks, capsys)


def file_mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def read_text(path: Path) -> str:
    return path.read_text()
