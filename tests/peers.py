"""Peers that do not answer like an HTTP server, for the tests of everything that sends a request
(the service's client, forwards, replays, the check). Every one listens on 127.0.0.1 with an
ephemeral port, in the test's own event loop.

* ``self_signed(tmp)``: a certificate for 127.0.0.1 and its key, made by ``openssl req`` (the
  test's own CA-less certificate: nothing on this machine trusts it).
* ``local_ca(tmp)``: a CA of the test's own and a certificate for 127.0.0.1 it signed (fixture
  ``local_ca``), for ``--ca-bundle``.
* ``Peers``: raw asyncio servers: TLS with that certificate, one that writes bytes that are not
  HTTP, one that accepts and never answers, one that closes without a word; and a closed port.
* ``local_resolver``: the fixture that keeps name resolution on this machine. A name under
  ``.invalid`` fails at once as RFC 6761 has every resolver do, without asking a name server;
  any other name but loopback's fails the test, so nothing leaves 127.0.0.1.

Test files use the fixtures by importing ``peers_fixture``, ``certificate_fixture`` and
``local_resolver_fixture`` (registered as ``peers``, ``certificate`` and ``local_resolver``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1"}
NOT_HTTP = b"SSH-2.0-OpenSSH_9.6\r\nProtocol mismatch.\r\n\r\n"


@dataclass(frozen=True)
class Certificate:
    cert: Path
    key: Path

    def server_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(self.cert, self.key)
        return context

    def trusting_context(self) -> ssl.SSLContext:
        """A client context that trusts this certificate (and nothing else)."""
        return ssl.create_default_context(cafile=str(self.cert))


def self_signed(directory: Path) -> Certificate:
    """A fresh self-signed certificate for 127.0.0.1 (an EC key: made in milliseconds)."""
    openssl = shutil.which("openssl")
    assert openssl, "these tests make their certificate with the openssl command"
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return Certificate(cert, key)


@dataclass(frozen=True)
class LocalCA:
    """A CA of the test's own and a certificate for 127.0.0.1 it signed: what a developer's local
    HTTPS app has (mkcert's, a company CA's). ``ca`` is what ``--ca-bundle`` is given."""

    ca: Path
    leaf: Certificate


def local_ca(directory: Path) -> LocalCA:
    """A fresh CA (``CA:TRUE``, may sign certificates) and a leaf for 127.0.0.1 signed by it, made
    with the openssl command; the leaf alone verifies with the CA as the only trust anchor."""
    openssl = shutil.which("openssl")
    assert openssl, "these tests make their certificates with the openssl command"
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    leaf, leaf_key, csr = directory / "leaf.pem", directory / "leaf.key", directory / "leaf.csr"
    extensions = directory / "leaf.ext"
    extensions.write_text(
        "subjectAltName=IP:127.0.0.1\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\n"
        "subjectKeyIdentifier=hash\n"
    )
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    make_ca = [
        *(openssl, "req", "-x509", *ec, "-keyout", str(ca_key), "-out", str(ca), "-days", "2"),
        *("-subj", "/CN=walletpass-tui test CA"),
        *("-addext", "basicConstraints=critical,CA:TRUE"),
        *("-addext", "keyUsage=critical,keyCertSign,cRLSign"),
    ]
    ask = [
        openssl,
        "req",
        *ec,
        "-keyout",
        str(leaf_key),
        "-out",
        str(csr),
        "-subj",
        "/CN=127.0.0.1",
    ]
    sign_leaf = [
        *(openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key)),
        *("-set_serial", "0x5eed", "-days", "2", "-out", str(leaf), "-extfile", str(extensions)),
    ]
    for argv in (make_ca, ask, sign_leaf):
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
    return LocalCA(ca, Certificate(leaf, leaf_key))


async def _read_head(reader: asyncio.StreamReader) -> None:
    """Read the request up to the end of its head (or EOF), bounded."""
    with contextlib.suppress(asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
        await reader.readuntil(b"\r\n\r\n")


@dataclass
class Peers:
    servers: list[asyncio.Server] = field(default_factory=list)
    held: list[asyncio.StreamWriter] = field(default_factory=list)

    async def _serve(self, handle: Any, *, tls: ssl.SSLContext | None = None) -> int:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)
        self.servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def tls(self, certificate: Certificate) -> str:
        """An HTTPS server answering 200 to whoever trusts its certificate: its URL."""

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await _read_head(reader)
            with contextlib.suppress(OSError):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                await writer.drain()
            writer.close()

        port = await self._serve(handle, tls=certificate.server_context())
        return f"https://127.0.0.1:{port}/hook"

    async def not_http(self, data: bytes = NOT_HTTP, *, then_close: bool = True) -> str:
        """Answers any request with ``data``; closes after it, or holds the connection open."""

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await _read_head(reader)
            with contextlib.suppress(OSError):
                writer.write(data)
                await writer.drain()
            if then_close:
                writer.close()
            else:
                self.held.append(writer)

        return f"http://127.0.0.1:{await self._serve(handle)}/hook"

    async def silent(self) -> str:
        """Accepts, reads, and never answers."""

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.held.append(writer)
            await _read_head(reader)

        return f"http://127.0.0.1:{await self._serve(handle)}/hook"

    async def hangs_up(self) -> str:
        """Reads the request's head and closes without a word."""

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await _read_head(reader)
            writer.close()

        return f"http://127.0.0.1:{await self._serve(handle)}/hook"

    async def close(self) -> None:
        for writer in self.held:
            writer.close()
        for server in self.servers:
            server.close()
        for server in self.servers:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(5):
                    await server.wait_closed()


def closed_port_url() -> str:
    """A URL on 127.0.0.1 whose port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"


@pytest.fixture(name="peers")
async def peers_fixture() -> Any:
    made = Peers()
    yield made
    await made.close()


@pytest.fixture(name="certificate", scope="session")
def certificate_fixture(tmp_path_factory: pytest.TempPathFactory) -> Certificate:
    return self_signed(tmp_path_factory.mktemp("tls"))


@pytest.fixture(name="local_ca", scope="session")
def local_ca_fixture(tmp_path_factory: pytest.TempPathFactory) -> LocalCA:
    return local_ca(tmp_path_factory.mktemp("ca"))


@dataclass
class Resolver:
    asked: list[str] = field(default_factory=list)


@pytest.fixture(name="local_resolver")
def local_resolver_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[Resolver]:
    """Name resolution that never leaves this machine; ``asked`` lists every name looked up."""
    real = socket.getaddrinfo
    resolver = Resolver()

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else host
        resolver.asked.append(str(name))
        if name is None or name in LOOPBACK_NAMES:
            return real(host, *args, **kwargs)
        if str(name).lower().rstrip(".").endswith(".invalid"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        pytest.fail(f"a test tried to resolve {name!r}: nothing may leave 127.0.0.1")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    yield resolver
