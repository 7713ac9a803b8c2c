"""The browser view's HTTP server: textual-serve's terminal page and websocket behind a token.

Every path starts with the token (``/<token>/``, ``/<token>/ws``, ``/<token>/static/...``), so the
page's relative links carry it and nothing needs a cookie (a cookie would also be sent to every
other port of the same host). A request whose first path segment is not the token, compared in
constant time, is answered 403 before any handler runs: the page, the static files, the downloads
and the websocket upgrade alike. Each websocket runs one ``walletpass-tui attach`` process through
textual-serve's ``AppService``; their number, the size of a browser's message and the terminal size
a browser asks for are bounded here. aiohttp's access log is off (the token is in every path).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import math
import re
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService
from textual_serve.download_manager import DownloadManager

from walletpass_tui.logs import suppressed
from walletpass_tui.text import parse_ascii_int

log = logging.getLogger(__name__)

MAX_SESSIONS = 8  # attached dashboards (one process each) served at once
MAX_MESSAGE_BYTES = 64 * 1024  # one browser message: keys typed, a paste, a resize
MAX_COLUMNS = 1000
MAX_ROWS = 500
STOP_WAIT_S = 5.0  # an attached dashboard asked to quit has this long before it is killed
FORBIDDEN = (
    "403 Forbidden: this address needs the URL that `walletpass-tui web` printed, with its token.\n"
)
PAGE = Path(__file__).with_name("page.html")
STATIC = Path(str(__import__("textual_serve").__file__)).parent / "static"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def token_in_path(path: str, token: str) -> bool:
    """Whether ``path``'s first segment is ``token``, compared in constant time."""
    first = path.removeprefix("/").split("/", 1)[0]
    return hmac.compare_digest(first.encode("utf-8", "replace"), token.encode())


def static_files(root: Path = STATIC) -> dict[str, Path]:
    """textual-serve's static files by their path under ``static/``: the only ones served."""
    return {
        path.relative_to(root).as_posix(): path
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def positive(value: object, top: int) -> int | None:
    """A count from a browser's message (a terminal's width or height) within 1..``top``, or None
    when ``value`` cannot be one: not a JSON number (a boolean or a string is not), not finite
    (``1e999`` reads as infinity, ``NaN`` is accepted by the parser), below 1."""
    number: int
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and math.isfinite(value):
        number = int(value)
    else:
        return None
    return min(number, top) if number >= 1 else None


def query_positive(request: web.Request, name: str, top: int) -> int | None:
    """The query parameter ``name`` as a count within 1..``top``: ASCII digits only, else None."""
    text = request.query.get(name, "")
    if re.fullmatch("[0-9]+", text) is None:
        return None
    digits = text.lstrip("0") or "0"
    if len(digits) > 9:  # more than any size: the top (int() would refuse thousands of digits)
        return top
    return positive(parse_ascii_int(digits), top)


class WebView:
    """The aiohttp application: one attached dashboard per websocket, behind ``token``."""

    def __init__(
        self,
        command: str,
        token: str,
        *,
        receiver_problem: Callable[[], str | None] = lambda: None,
        max_sessions: int = MAX_SESSIONS,
        stop_wait_s: float = STOP_WAIT_S,
    ) -> None:
        self.command = command
        self.token = token
        self.receiver_problem = receiver_problem
        self.max_sessions = max_sessions
        self.stop_wait_s = stop_wait_s
        self.sessions: dict[AppService, web.WebSocketResponse] = {}
        self.places = 0  # sessions taken, counted before the first await so none overshoots
        self.downloads = DownloadManager()
        self.static = static_files()
        self.page = PAGE.read_text(encoding="utf-8")

    def application(self) -> web.Application:
        app = web.Application(middlewares=[self._gate], client_max_size=MAX_MESSAGE_BYTES)
        prefix = "/{token}"
        app.add_routes(
            [
                web.get(prefix, self._to_page),
                web.get(prefix + "/", self._page),
                web.get(prefix + "/ws", self._websocket),
                web.get(prefix + "/static/{name:.+}", self._static_file),
                web.get(prefix + "/download/{key}", self._download),
            ]
        )
        app.on_shutdown.append(self._close_sessions)
        return app

    @web.middleware
    async def _gate(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not token_in_path(request.raw_path.split("?", 1)[0], self.token):
            return web.Response(status=403, text=FORBIDDEN)
        response = await handler(request)
        if not response.prepared:
            response.headers["Referrer-Policy"] = "no-referrer"
            response.headers["Cache-Control"] = "no-store"
            response.headers["X-Content-Type-Options"] = "nosniff"
            response.headers["Content-Security-Policy"] = "frame-ancestors 'none'"
        return response

    async def _to_page(self, request: web.Request) -> web.StreamResponse:
        raise web.HTTPFound(f"/{self.token}/")

    async def _page(self, request: web.Request) -> web.StreamResponse:
        problem = self.receiver_problem()
        if problem:
            return web.Response(status=503, text=problem + "\n")
        font_size = query_positive(request, "fontsize", 64) or 16
        text = self.page.replace("{{ font_size }}", str(font_size))
        return web.Response(text=text, content_type="text/html")

    async def _static_file(self, request: web.Request) -> web.StreamResponse:
        path = self.static.get(request.match_info["name"])
        if path is None:
            raise web.HTTPNotFound(text="No such file.\n")
        return web.FileResponse(path)

    async def _download(self, request: web.Request) -> web.StreamResponse:
        key = request.match_info["key"]
        try:
            meta = await self.downloads.get_download_metadata(key)
        except KeyError:
            raise web.HTTPNotFound(text="No such download.\n") from None
        response = web.StreamResponse()
        response.content_type = meta.mime_type
        if meta.encoding:
            response.charset = meta.encoding
        disposition = "inline" if meta.open_method == "browser" else "attachment"
        name = json.dumps(meta.file_name, ensure_ascii=True)
        response.headers["Content-Disposition"] = f"{disposition}; filename={name}"
        await response.prepare(request)
        async for chunk in self.downloads.download(key):
            await response.write(chunk)
        await response.write_eof()
        return response

    async def _websocket(self, request: web.Request) -> web.StreamResponse:
        if self.places >= self.max_sessions:
            return web.Response(
                status=503,
                text=f"{self.max_sessions} dashboards are open already; close one first.\n",
            )
        problem = self.receiver_problem()
        if problem:
            return web.Response(status=503, text=problem + "\n")
        self.places += 1  # taken before the first await: upgrades at once cannot all pass
        try:
            return await self._session(request)
        finally:
            self.places -= 1

    async def _session(self, request: web.Request) -> web.StreamResponse:
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE_BYTES)
        width = query_positive(request, "width", MAX_COLUMNS) or 80
        height = query_positive(request, "height", MAX_ROWS) or 24
        await websocket.prepare(request)

        async def close() -> None:
            await websocket.close()

        service = AppService(
            self.command,
            write_bytes=websocket.send_bytes,
            write_str=websocket.send_str,
            close=close,
            download_manager=self.downloads,
        )
        self.sessions[service] = websocket
        try:
            await service.start(width, height)
            await self._read_browser(websocket, service)
        except (ConnectionError, asyncio.CancelledError):
            # the browser hung up, or the server stops: nothing to say
            pass
        finally:
            await self._stop(service)
            self.sessions.pop(service, None)
            with suppressed(log, "closing the browser's websocket"):
                await websocket.close()
        return websocket

    async def _read_browser(self, websocket: web.WebSocketResponse, service: AppService) -> None:
        """The browser's messages to the dashboard: keys, sizes, focus; anything else ignored."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT or (parsed := browser_message(message.data)) is None:
                continue  # not a message of the page's: ignored, the session goes on
            kind, data = parsed
            if kind == "stdin" and isinstance(data, str):
                await service.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                width = positive(data.get("width"), MAX_COLUMNS)
                height = positive(data.get("height"), MAX_ROWS)
                if width is not None and height is not None:  # else not a size: ignored
                    await service.set_terminal_size(width, height)
            elif kind == "ping" and isinstance(data, str | int | float):
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await service.blur()
            elif kind == "focus":
                await service.focus()

    async def _stop(self, service: AppService) -> None:
        """Ask the dashboard to quit; kill it when it has not within ``stop_wait_s``."""
        try:
            await asyncio.wait_for(asyncio.shield(service.stop()), self.stop_wait_s)
        except (Exception, asyncio.CancelledError) as exc:  # it is killed below
            log.debug("attached dashboard did not quit when asked: %r", exc)
        process = service._process  # textual-serve keeps its process private
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                process.kill()
            with suppressed(log, "waiting for a dashboard process to end"):
                await asyncio.wait_for(process.wait(), self.stop_wait_s)

    async def _close_sessions(self, app: web.Application) -> None:
        await asyncio.gather(
            *(ws.close(code=1001, message=b"server stopped") for ws in self.sessions.values()),
            return_exceptions=True,
        )
        await asyncio.gather(*(self._stop(s) for s in list(self.sessions)), return_exceptions=True)


def browser_message(text: str) -> tuple[str, object] | None:
    """``[kind, data]`` as the page sends it, or None for anything else: not JSON, nested past
    the parser's depth (``[`` 60,000 times fits in a message), not a list of a name and a value
    (a two-key object would otherwise unpack into its keys)."""
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested too deep for the parser
        return None
    if not isinstance(decoded, list) or len(decoded) != 2 or not isinstance(decoded[0], str):
        return None
    return decoded[0], decoded[1]


def url_host(host: str) -> str:
    """``host`` as it goes in a URL: IPv6 in brackets; a wildcard as this machine's loopback."""
    if host in ("", "0.0.0.0"):  # noqa: S104 - naming the wildcard, not binding it
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


async def serve(
    view: WebView,
    sock: socket.socket,
    on_ready: Callable[[int], None],
    stop: asyncio.Event,
) -> None:
    """Serve ``view`` on the listening ``sock`` until ``stop`` is set; then close every session
    and end its process."""
    runner = web.AppRunner(view.application(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.SockSite(runner, sock)
        await site.start()
        on_ready(sock.getsockname()[1])
        await stop.wait()
    finally:
        await runner.cleanup()
