"""Every example in every ``--help`` works as written, run as the help describes.

The examples are collected from the parser itself (every command's epilog, walking the parser the
command line builds), so a new example is tried the day it is written. Each runs against real local
parts: two simulated services on ephemeral ports (one in the role of the Wallet Pass Service, one
driven by the ``sim`` commands), the user's app on 127.0.0.1 verifying signatures with the
standardwebhooks package, a temporary home with a history, WALLETPASS_* in the environment.

Placeholders the help asks the reader to fill in (``whsec_...``, an id like ``msg_2KWP...``, the
ports an example assumes) are filled with the real values of those parts; nothing else of an
example is changed. Shell syntax is honoured: ``NAME=value`` before the command and ``export``
lines set the environment, ``"$NAME"`` expands, ``> FILE`` must leave a file, ``| jq FILTER`` must
find what it filters.

Commands that serve until stopped run as a process for as long as it takes to print their first
line (on an ephemeral port: two tests may run at once). Examples that need a host on the internet
are parsed only (argparse must accept them), each with its reason below. Name resolution stays on
this machine: nothing in this test leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from peers import Resolver, local_resolver_fixture  # noqa: F401  (the "local_resolver" fixture)
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from walletpass_tui.cli import build_parser, main
from walletpass_tui.config import Settings
from walletpass_tui.sim.service import SimulatedService
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import REJECTED, VERIFIED, Attempt
from walletpass_tui.webhooks.store import Store
from walletpass_tui.webhooks.verify import sign

SECRET = "whsec_" + base64.b64encode(b"help-examples-secret-0123456789ab").decode()
SIM_KEY = "sk_sim_local"  # the key the sim examples name
# The service's key is another, so a sim example that names no key of its own fails.
SERVICE_KEY = "sk_sim_the_service_key_0123456789"
SHOWN_ID = "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W"  # the id 'events show' names, made real here
KNOWN_ENDPOINT = "ep_3f2a9c"  # the endpoint 'check --endpoint' names, imported here
START_DEADLINE_S = 90.0  # a generous "did not hang" guard for a server's first line

# Examples that cannot run here, each with why. Everything else runs.
PARSE_ONLY: dict[str, str] = {
    "walletpass-tui listen --tunnel cloudflared": (
        "starts cloudflared, which asks Cloudflare (on the internet) for a tunnel; listen with a "
        "fake cloudflared that forwards a local port is tested in tests/tunnel/test_listen_tunnel.py"
    ),
    "WALLETPASS_RELAY_TOKEN=wpr_... walletpass-tui listen --relay "
    "https://relay.example.com/channels/SLUG/events": (
        "follows a relay at relay.example.com, a host on the internet; following a local relay "
        "is tested in tests/relay/test_listen_relay.py"
    ),
    "walletpass-tui relay follow https://relay.example.com/channels/SLUG/events": (
        "follows a relay at relay.example.com, a host on the internet; relay follow against a "
        "local relay is tested in tests/relay/test_follow.py"
    ),
    "walletpass-tui relay follow URL --to http://localhost:3000/webhooks": (
        "URL is a relay's subscribe URL, which only 'relay channel add' on a running relay "
        "prints; tested in tests/relay/test_follow.py"
    ),
    "walletpass-tui trigger activated     # to 'walletpass-tui listen' in another shell": (
        "sends to the receiver running on this home, which this walk does not start; the two "
        "processes are tested in tests/cli/test_local_loop.py"
    ),
    "walletpass-tui attach": (
        "opens a dashboard on a receiver that runs on the home, which this walk does not start; "
        "attaching to a real listen process is tested in tests/cli/test_attach_processes.py"
    ),
    "walletpass-tui attach --home ~/work/wallet-hooks": (
        "as the one above, on a home in the reader's own directory"
    ),
    "walletpass-tui web": (
        "serves the dashboard of a receiver that runs on the home, which this walk does not "
        "start; serving a real listen process is tested in tests/cli/test_web_browser.py"
    ),
    "walletpass-tui web --port 8800 --home ~/work/wallet-hooks": (
        "as the one above, on a home in the reader's own directory"
    ),
    "WALLETPASS_RELAY_DATABASE=postgresql://relay@db:5432/relay walletpass-tui relay serve": (
        "serves on a PostgreSQL server at the host db, which this machine does not have; relays "
        "on a local PostgreSQL cluster are tested in tests/relay/test_relay_instances.py and "
        "tests/relay/test_relay_database_setting.py"
    ),
    "walletpass-tui check https://staging.example.com/hooks --secret-file staging-secret "
    "--topic activated": (
        "checks an app on staging.example.com, a host on the internet; the same command against "
        "a local app runs in the first check example"
    ),
    "walletpass-tui endpoints import --id ep_3f2a --url https://example.com/wh --topic "
    "pass.activated --secret -    # asks for it, not shown as typed": (
        "asks for the secret on the terminal; --secret - is tested in "
        "tests/cli/test_secret_sources.py, the same import from a file runs in the example above"
    ),
}


# -- collecting the examples -----------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    command: str  # the command whose --help shows it
    line: str  # exactly as shown


def _parsers(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def collect_examples() -> list[Example]:
    found: list[Example] = []
    for path, parser in _parsers(build_parser()):
        for raw in (parser.epilog or "").splitlines():
            line = re.sub(r"^\s*examples?\b[^:]*:\s*", "", raw).strip()
            if line.startswith(("walletpass-tui", "export ")) or re.match(r"^[A-Z_]+=\S+ ", line):
                found.append(Example(" ".join(path) or "walletpass-tui", line))
    return found


EXAMPLES = collect_examples()


def test_the_examples_are_collected_and_every_skip_is_still_an_example() -> None:
    lines = {e.line for e in EXAMPLES}
    assert len(lines) >= 30  # the walk reaches every command's epilog
    assert set(PARSE_ONLY) <= lines, set(PARSE_ONLY) - lines  # no stale reason


def test_the_help_shows_every_example_whole_on_its_own_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Wrapped to a narrow terminal, a long example would be two lines, neither runnable."""
    monkeypatch.setenv("COLUMNS", "40")
    for path, parser in _parsers(build_parser()):
        shown = [line.strip() for line in parser.format_help().splitlines()]
        for example in (e for e in EXAMPLES if e.command == (" ".join(path) or "walletpass-tui")):
            assert any(line.endswith(example.line) for line in shown), (path, example.line)


# -- the local parts the examples run against ------------------------------------------------------


class Loop:
    """An event loop on a thread of its own, for the servers: main() runs its own loop here."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@dataclass
class App:
    """The user's app: 204 to a request standardwebhooks verifies with SECRET, else 401."""

    seen: list[str] = field(default_factory=list)
    runner: web.AppRunner | None = None
    port: int = 0

    async def start(self) -> None:
        hook = Webhook(SECRET)

        async def handle(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            self.seen.append(request.path)
            try:
                hook.verify(body, {k.lower(): v for k, v in request.headers.items()})
            except (WebhookVerificationError, ValueError):
                return web.Response(status=401, text="invalid signature")
            return web.Response(status=204)

        app = web.Application(client_max_size=8 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", handle)
        self.runner = web.AppRunner(app, shutdown_timeout=0.1, handler_cancellation=True)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        self.port = self.runner.addresses[0][1]


@dataclass
class World:
    home: Path
    work: Path
    env: dict[str, str]  # what the examples' environment holds beyond the test's own
    fill: dict[str, str]  # placeholder -> real value, longest first


async def _seed_history(home: Path, app_url: str) -> None:
    """A verified delivery forwarded to the app (where 'events replay last' goes) and a forgery
    after it."""
    async with await Store.open(Settings(home=home).database_path) as store:
        for msg_id, verdict, pass_id in (
            (SHOWN_ID, VERIFIED, "pass_0042"),
            ("msg_2KWPforged000000000000000", REJECTED, "pass_0043"),
        ):
            body = f'{{"type": "pass.activated", "data": {{"passId": "{pass_id}"}}}}'.encode()
            now = time.time()
            headers = sign(SECRET, msg_id, body, datetime.fromtimestamp(now, UTC))
            headers["content-type"] = "application/json"
            await store.record(
                forward_to=(app_url,) if verdict == VERIFIED else (),
                attempt=Attempt(
                    received_at_ms=int(now * 1000),
                    method="POST",
                    path="/webhooks",
                    headers=tuple(headers.items()),
                    body=body,
                    verdict=verdict,
                    reason="verified" if verdict == VERIFIED else "bad_signature",
                    status=200 if verdict == VERIFIED else 401,
                    webhook_id=msg_id,
                    endpoint_id=KNOWN_ENDPOINT,
                    topic="pass.activated",
                    pass_id=pass_id,
                ),
            )
        await store.settled()


@pytest.fixture
def world(
    clean_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local_resolver: Resolver
) -> Iterator[World]:
    loop = Loop()
    service = SimulatedService(SERVICE_KEY)  # in the role of the Wallet Pass Service
    driven = SimulatedService(SIM_KEY)  # the one 'sim emit|endpoint|deliveries' drive
    app = App()
    try:
        service_url = loop.run(service.start("127.0.0.1", 0))
        driven_url = loop.run(driven.start("127.0.0.1", 0))
        loop.run(app.start())
        target = f"127.0.0.1:{app.port}"
        driven_endpoint = driven.add_endpoint(
            f"http://{target}/webhooks", ["pass.activated", "pass.deactivated"]
        )
        clean_env.mkdir(parents=True, exist_ok=True)
        asyncio.run(_seed_history(clean_env, f"http://{target}/webhooks"))
        EndpointRegistry(Settings(home=clean_env).endpoints_path).import_endpoint(
            KNOWN_ENDPOINT, f"http://{target}/webhooks", ["pass.activated"], SECRET
        )
        work = tmp_path / "work"
        work.mkdir()
        (work / "webhook-secret.txt").write_text(SECRET + "\n")  # what --secret-file names
        (work / "webhook-secret.txt").chmod(0o600)
        (work / "edited.json").write_text('{"type": "pass.activated", "data": {"passId": "x"}}')
        # The fixture the --fixture examples name, in the format docs/simulator.md describes.
        (work / "events.json").write_text(
            '[{"topic": "activated", "set": {"data.passId": "pass_1"}}, {"topic": "deactivated"}]'
        )
        env = {
            "WALLETPASS_BASE_URL": service_url,
            "WALLETPASS_REGISTRATION_URL": service_url,
            "WALLETPASS_API_KEY": SERVICE_KEY,
            "WEBHOOK_SECRET": SECRET,
            "APP_TOKEN": "app-token-for-the-examples",  # what --header examples send the app
        }
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        monkeypatch.chdir(work)
        fill = {
            "whsec_...": SECRET,
            "msg_2KWP...": SHOWN_ID,
            "ep_abc123": driven_endpoint.id,
            "127.0.0.1:8788": driven_url.removeprefix("http://"),
            "127.0.0.1:8787": target,
            "localhost:3000": target,
        }
        yield World(clean_env, work, env, dict(sorted(fill.items(), key=lambda kv: -len(kv[0]))))
    finally:
        loop.run(driven.stop())
        loop.run(service.stop())
        if app.runner is not None:
            loop.run(app.runner.cleanup())
        loop.close()


# -- running one example ---------------------------------------------------------------------------


@dataclass
class Parsed:
    env: dict[str, str]
    argv: list[str]
    pipe: list[str]  # the command after "|", if any
    redirect: str | None  # the file after ">", if any


def parse(line: str, world: World, exported: dict[str, str]) -> Parsed:
    tokens = shlex.split(line, comments=True)
    env: dict[str, str] = {}
    while tokens and re.match(r"^[A-Z_][A-Z0-9_]*=", tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    assert tokens[0] == "walletpass-tui", line
    tokens = tokens[1:]
    pipe: list[str] = []
    redirect = None
    if "|" in tokens:
        at = tokens.index("|")
        tokens, pipe = tokens[:at], tokens[at + 1 :]
    if ">" in tokens:
        at = tokens.index(">")
        tokens, redirect = tokens[:at], tokens[at + 1]
    variables = {**os.environ, **exported, **env}

    def filled(token: str) -> str:
        token = re.sub(r"\$\{?([A-Z_]+)\}?", lambda m: variables[m.group(1)], token)
        for placeholder, value in world.fill.items():
            token = token.replace(placeholder, value)
        return token

    return Parsed(
        {k: filled(v) for k, v in env.items()}, [filled(t) for t in tokens], pipe, redirect
    )


def jq(doc: Any, program: str) -> Any:
    """The jq filters the examples use: ``.[N]`` and ``.name``."""
    for index, name in re.findall(r"\.\[(\d+)\]|\.(\w+)", program):
        doc = doc[int(index)] if index else doc[name]
    return doc


def run_in_process(
    parsed: Parsed, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> str:
    with monkeypatch.context() as scoped:
        for name, value in parsed.env.items():
            scoped.setenv(name, value)
        capsys.readouterr()
        code = main(parsed.argv)
        out, err = capsys.readouterr()
    assert code == 0, f"exit {code}: {err.strip() or out.strip()}"
    assert "Traceback" not in err
    return out


SERVES = {"listen", "serve", "demo"}  # commands that run until stopped
FOLLOWS = ("events", "tail")  # runs until stopped, on no port


def serves(argv: list[str]) -> bool:
    if tuple(argv[:2]) == FOLLOWS:
        return True
    return bool(argv) and (argv[0] in SERVES or (len(argv) > 1 and argv[1] == "serve"))


def on_a_free_port(argv: list[str]) -> list[str]:
    """The example as shown, on port 0: its fixed port may be taken on a shared machine."""
    if tuple(argv[:2]) == FOLLOWS:
        return argv
    if "--port" in argv:
        at = argv.index("--port") + 1
        return [*argv[:at], "0", *argv[at + 1 :]]
    return [*argv, "--port", "0"]


def first_line(argv: list[str], env: dict[str, str], home: Path) -> str:
    """Start the command in a home of its own, return the first line with text it prints (escape
    sequences of a full-screen app removed), stop it."""
    home.mkdir(parents=True)
    full_env = {**os.environ, **env, "WALLETPASS_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "walletpass_tui", *argv],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        env=full_env, cwd=home, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    stdout = proc.stdout
    lines: list[str] = []
    reader = threading.Thread(
        target=lambda: lines.extend(iter(lambda: stdout.readline().decode("utf-8", "replace"), "")),
        daemon=True,
    )
    reader.start()
    deadline = time.monotonic() + START_DEADLINE_S
    try:
        while time.monotonic() < deadline:
            shown = next((t for t in map(_text_of, list(lines)) if t), None)
            if shown:
                return shown
            if proc.poll() is not None:  # what it printed just before it ended may be unread
                reader.join(timeout=5)
                shown = next((t for t in map(_text_of, list(lines)) if t), None)
                if shown:
                    return shown
                raise AssertionError(f"exited {proc.returncode} before printing: {''.join(lines)}")
            time.sleep(0.05)
        raise AssertionError(f"printed nothing within {START_DEADLINE_S:g} s")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # its own session: it and anything it started
        proc.wait(timeout=30)
        reader.join(timeout=5)


def _text_of(line: str) -> str:
    return re.sub(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07]*\x07|.)", "", line).strip()


@pytest.mark.slow
def test_every_example_in_every_help_works_as_written(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    exported: dict[str, str] = {}
    failures: list[str] = []
    ran = parsed_only = 0
    starting: list[tuple[str, Future[str]]] = []
    with ThreadPoolExecutor(max_workers=4) as pool:  # the servers start while the rest runs
        for number, example in enumerate(EXAMPLES):
            line = example.line
            where = f"'{example.command} --help': {line}"
            if line.startswith("export "):
                name, _, value = line.removeprefix("export ").partition("=")
                exported[name] = value  # for the lines after it, as a shell would
                continue
            parsed = parse(line, world, exported)
            try:
                if line in PARSE_ONLY:
                    build_parser(parsed.argv).parse_args(parsed.argv)  # exits 2 on a usage error
                    parsed_only += 1
                elif serves(parsed.argv):
                    env = {**world.env, **exported, **parsed.env}
                    home = world.work.parent / f"home-{number}"
                    job = pool.submit(first_line, on_a_free_port(parsed.argv), env, home)
                    starting.append((where, job))
                else:
                    out = run_in_process(parsed, capsys, monkeypatch)
                    if parsed.redirect:
                        (world.work / parsed.redirect).write_text(out)
                        assert out.strip(), f"nothing written to {parsed.redirect}"
                    if parsed.pipe:
                        assert parsed.pipe[0] == "jq", parsed.pipe
                        assert jq(json.loads(out), parsed.pipe[-1]) is not None
                    ran += 1
            except (AssertionError, SystemExit, KeyError, IndexError, ValueError) as exc:
                failures.append(f"{where}\n    -> {type(exc).__name__}: {exc}")
        for where, job in starting:
            try:
                shown = job.result()
                assert "error" not in shown.lower(), shown
            except AssertionError as exc:
                failures.append(f"{where}\n    -> {exc}")
    assert failures == [], "\n".join(failures)
    assert ran > 20 and parsed_only == len(PARSE_ONLY) and len(starting) >= 5
