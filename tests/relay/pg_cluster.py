"""A throwaway PostgreSQL cluster for the tests: Debian's server binaries, a temporary directory,
a free port on 127.0.0.1, the unix socket inside the directory, ``fsync=off`` (``durable=True``,
for the benchmark: fsync on, as a real server).

initdb refuses to run as root, so as root the cluster runs as the ``postgres`` user (``runuser``)
in a directory it owns. Each pytest-xdist worker starts its own cluster (its own directory and
port). Relays connect over TCP as the role ``relay`` with a password (scram-sha-256), as they
would in production; the superuser ``postgres`` is reached through the socket (trust).

Missing binaries are a failure, never a skip: the test script installs them (``scripts/test.sh``).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import queue
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

RELAY_ROLE = "relay"
READY_DATABASES = 2  # made ahead, while tests run: CREATE DATABASE takes a while on a busy disk
_counter = itertools.count(1)


def find_bindir() -> Path:
    """The newest installed server's bin directory, or a failure saying how to get one."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    if initdb:
        return Path(initdb).parent
    raise RuntimeError(
        "PostgreSQL's server binaries (initdb, pg_ctl, postgres) are not installed: the relay's "
        "PostgreSQL tests need them. Install Debian's postgresql package (scripts/test.sh does: "
        "apt-get install postgresql)."
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgCluster:
    def __init__(
        self, bindir: Path, root: Path, port: int, password: str, *, durable: bool = False
    ) -> None:
        self.durable = durable  # fsync on (benchmarks); off for tests
        self.bindir = bindir
        self.root = root
        self.data = root / "data"
        self.sockets = root / "sockets"
        self.port = port
        self.password = password  # of the relay role and of the superuser
        self._as_postgres = os.geteuid() == 0
        self._ready: queue.Queue[str | BaseException] = queue.Queue(maxsize=READY_DATABASES)
        self._free: queue.Queue[str] = queue.Queue()
        self._maker: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- lifecycle -----------------------------------------------------------------------------

    @classmethod
    def create(cls, name: str = "main", *, durable: bool = False) -> PgCluster:
        bindir = find_bindir()
        root = Path(tempfile.mkdtemp(prefix=f"wpr-pg-{name}-"))
        cluster = cls(bindir, root, free_port(), secrets.token_urlsafe(16), durable=durable)
        cluster._init()
        cluster.start()
        cluster.psql(
            f"CREATE ROLE {RELAY_ROLE} LOGIN PASSWORD '{cluster.password}'", database="postgres"
        )
        return cluster

    def _init(self) -> None:
        self.sockets.mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._as_postgres:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError(
                    "As root the test cluster runs as the user postgres, which does not exist: "
                    "install Debian's postgresql package (it creates the user) or run the tests "
                    "as another user."
                ) from None
            for path in (self.root, self.sockets, pwfile):
                os.chown(path, user.pw_uid, user.pw_gid)
        os.chmod(self.root, 0o700)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            f"--pwfile={pwfile}",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 "
            "-c max_connections=300 -c shared_buffers=32MB"
        )
        if not self.durable:
            options += " -c fsync=off -c full_page_writes=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.root / "log"), "-w", "-t", "60",
            "-o", options, "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def destroy(self) -> None:
        self._stopping.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._ready.get_nowait()  # a maker waiting to put sees the stop
        if self._maker is not None:
            self._maker.join(30)
        with contextlib.suppress(Exception):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    # -- use -----------------------------------------------------------------------------------

    def new_database(self) -> str:
        """An empty database owned by the relay role, for one test; its URL (with the password).
        A few are made ready ahead on a thread of their own; ``release`` gives one back, to be
        emptied and used again (cheaper than a new one: CREATE DATABASE copies files)."""
        if self._maker is None:
            self._maker = threading.Thread(target=self._make_ahead, daemon=True)
            self._maker.start()
        made = self._ready.get(timeout=120)
        if isinstance(made, BaseException):
            raise RuntimeError(f"cannot create a test database: {made}")
        return made

    def release(self, url: str) -> None:
        self._free.put(url.rsplit("/", 1)[1])

    def _make_ahead(self) -> None:
        while not self._stopping.is_set():
            try:
                made: str | BaseException = self.url(self._empty_database())
            except Exception as exc:
                made = exc
            while not self._stopping.is_set():
                try:
                    self._ready.put(made, timeout=0.5)
                    break
                except queue.Full:
                    continue

    def _empty_database(self) -> str:
        try:
            name = self._free.get_nowait()
        except queue.Empty:
            name = f"relay_{os.getpid()}_{next(_counter)}"
            self.psql(
                f"CREATE DATABASE {name} OWNER {RELAY_ROLE} TEMPLATE template0 STRATEGY FILE_COPY",
                database="postgres",
            )
            return name
        # Whatever a test left connected (a killed relay's sessions end with their sockets; a
        # stopped one's may linger a moment) goes, then everything it created.
        self.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{name}' AND pid <> pg_backend_pid()",
            database="postgres",
        )
        self.psql(
            f"DROP SCHEMA public CASCADE; CREATE SCHEMA public AUTHORIZATION {RELAY_ROLE}",
            database=name,
        )
        return name

    def url(self, database: str) -> str:
        return f"postgresql://{RELAY_ROLE}:{self.password}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, *, database: str) -> str:
        done = subprocess.run(
            [
                str(self.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                "-h", str(self.sockets), "-p", str(self.port), "-U", "postgres", "-d", database,
                "-c", sql,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.strip()}")
        return done.stdout

    def log(self) -> str:
        try:
            return (self.root / "log").read_text(errors="replace")
        except OSError:
            return ""

    def _run(self, tool: str, *args: str) -> None:
        command = [str(self.bindir / tool), *args]
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=120, check=False, cwd=self.root
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"{tool} failed ({done.returncode}): {done.stderr.strip()[-2000:]}\n{self.log()[-2000:]}"
            )
