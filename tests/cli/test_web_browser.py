"""The browser view in a real browser: Debian's Chromium, headless, driven by Playwright, on a real
``walletpass-tui web`` over a real ``listen``. The page draws the terminal on a canvas, so the text
is read from xterm.js's own screen buffer: the test serves textual-serve's script with one addition
that names the page's terminal (checked to apply, so a changed script fails here rather than
passing blind). ``WALLETPASS_SCREENSHOT=1`` saves the page to screenshots/web.png."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from process_helpers import DEADLINE_S, post, start_listen
from web_helpers import Web, alive, websocket_upgrade

pytestmark = pytest.mark.slow

SCREENSHOT = Path(__file__).resolve().parents[2] / "screenshots" / "web.png"
SAVE_SCREENSHOT = bool(os.environ.get("WALLETPASS_SCREENSHOT"))  # read before clean_env clears it
OPENS_TERMINAL = "this.terminal.open(e),"
SCREEN_TEXT = """() => {
    const term = window.__walletpassTerminal;
    if (!term) return "";
    const buffer = term.buffer.active, lines = [];
    for (let y = 0; y < term.rows; y++) {
        const line = buffer.getLine(buffer.viewportY + y);
        lines.push(line ? line.translateToString(true) : "");
    }
    return lines.join("\\n");
}"""


def chromium(playwright: object) -> str:
    """The system's Chromium, else Playwright's own build (what scripts/test.sh installs on
    Ubuntu, where Chromium is a snap); never a skip: the test script installs one."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        found = playwright.chromium.executable_path  # type: ignore[attr-defined]
        if not Path(found).exists():
            pytest.fail("Chromium is not installed: bash scripts/test.sh installs it")
    return found


@pytest.fixture
def browser() -> Iterator[object]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("playwright is not installed; install the test extra: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium(playwright), headless=True)
        try:
            yield launched
        finally:
            launched.close()


def expose_terminal(route: object) -> None:
    """textual-serve's script, naming its terminal on ``window`` for the test to read."""
    answer = route.fetch()  # type: ignore[attr-defined]
    script = answer.text()
    assert OPENS_TERMINAL in script, "textual-serve's script changed: update OPENS_TERMINAL"
    named = script.replace(
        OPENS_TERMINAL, OPENS_TERMINAL + "window.__walletpassTerminal=this.terminal,"
    )
    route.fulfill(response=answer, body=named)  # type: ignore[attr-defined]


def wait_for_text(page: object, text: str) -> str:
    deadline = time.monotonic() + DEADLINE_S
    screen = ""
    while time.monotonic() < deadline:
        screen = page.evaluate(SCREEN_TEXT)  # type: ignore[attr-defined]
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared in the page; it shows:\n{screen}")


def test_the_dashboard_in_a_browser_shows_a_delivery_as_it_arrives(
    clean_env: Path, browser: object
) -> None:
    listen, receiver = start_listen()
    web = None
    try:
        web = Web()
        page = browser.new_page(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
        page.route("**/static/js/textual.js", expose_terminal)
        page.goto(web.url)
        wait_for_text(page, f"attached to listen, pid {listen.proc.pid}")
        wait_for_text(page, "No deliveries yet.")

        body = b'{"type": "pass.activated", "data": {"passId": "pass_in_browser"}}'
        assert post(receiver, "msg_browser1", body) == 200
        wait_for_text(page, "msg_browser1")
        row = next(
            line
            for line in wait_for_text(page, "pass_in_browser").splitlines()
            if "msg_browser1" in line
        )
        assert "pass_in_browser" in row and "verified" in row
        if SAVE_SCREENSHOT:
            page.keyboard.press("Enter")  # the delivery's detail under the log
            wait_for_text(page, "POST /webhooks")
            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT))

        # The same server, without the token: the page and the websocket are refused.
        with httpx.Client(timeout=DEADLINE_S, trust_env=False) as client:
            refused = client.get(f"http://127.0.0.1:{web.port}/")
        assert refused.status_code == 403
        assert websocket_upgrade(web.port, "/ws") == "HTTP/1.1 403 Forbidden"
        other = browser.new_page()  # type: ignore[attr-defined]
        answer = other.goto(f"http://127.0.0.1:{web.port}/{web.token[:-1]}/")
        assert answer is not None and answer.status == 403
        assert "needs the URL that `walletpass-tui web` printed" in other.content()
        rejected = other.evaluate(
            """url => new Promise(done => {
                const ws = new WebSocket(url);
                ws.onopen = () => done("opened");
                ws.onerror = () => done("refused");
            })""",
            f"ws://127.0.0.1:{web.port}/{web.token[:-1]}/ws",
        )
        assert rejected == "refused"

        (child,) = web.children()  # the page's own attached dashboard
        assert web.proc.interrupt() == 0
        assert not alive(child)
        assert not any("Traceback" in line for line in web.proc.err.rest())
    finally:
        listen.kill()
        if web:
            web.proc.kill()
