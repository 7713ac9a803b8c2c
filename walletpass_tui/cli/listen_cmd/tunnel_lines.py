"""What ``listen`` says about its tunnel: the public URL once it is up, then one line each time
the tunnel goes down, comes back, or cannot start.

::

    Listening on http://127.0.0.1:8787/webhooks
    Tunnel: starting a cloudflared quick tunnel; its public URL follows.
    ...
    Public URL:  https://oklahoma-solo.trycloudflare.com/webhooks  (a cloudflared quick tunnel)
      anyone who has it can post here: the signature check decides what is accepted
      Endpoint ep_3f2a still points at https://old-words.trycloudflare.com/webhooks; deliveries
      to it fail. Register this URL: walletpass-tui endpoints create --from-listener ...
    ...
    Tunnel down: cloudflared exited (status 1: ...); trying again in 2 s (the receiver goes on).
    Tunnel up: https://new-words.trycloudflare.com/webhooks (a new URL) ...

``listen``'s first lines never wait for the tunnel: they say it is starting when it has no
answer yet, and its first answer (the public URL, or why there is none) follows when it comes.
Everything from the tunnel or the endpoints file is escaped (``text.printable``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from walletpass_tui.text import printable
from walletpass_tui.tunnel.ngrok_agent import FOUND_FROM_AGENT
from walletpass_tui.tunnel.watch import TunnelState
from walletpass_tui.webhooks.endpoint_registry import LocalEndpoint
from walletpass_tui.webhooks.tunnel_endpoints import (
    create_command,
    left_behind,
    left_behind_notice,
    registered_at,
)

EXPOSED = "anyone who has it can post here: the signature check decides what is accepted"


def _seconds(value: float | None) -> str:
    return f"{value:.0f} s" if value is not None and value >= 1 else "a moment"


def endpoint_lines(
    public_url: str, endpoints: list[LocalEndpoint], home_flag: str = ""
) -> list[str]:
    """Which endpoints the tunnel left behind (and what registers the new URL), or which is
    registered at it, or how to register one."""
    behind = left_behind(endpoints, public_url)
    lines = [left_behind_notice(e, home_flag) for e in behind]
    here = registered_at(endpoints, public_url)
    if here:
        lines.append("registered as " + ", ".join(printable(e.id, 40) for e in here))
    elif not behind:
        lines.append(f"register it: {create_command((), home_flag)}")
    return lines


def public_url_lines(public_url: str, receiver_path: str, *, found: bool) -> list[str]:
    """The public URL without a tunnel of listen's own: given (``--public-url``), or ``found``
    from an ngrok agent on 127.0.0.1:4040, which any local user can answer: then said so on the
    line that offers it, with the command that registers it."""
    shown = printable(public_url.rstrip("/") + receiver_path, 400)
    if not found:
        return [f"Public URL:  {shown}"]
    return [
        f"Public URL:  {shown}  ({FOUND_FROM_AGENT})",
        "  register it: walletpass-tui endpoints create --from-listener "
        f"--public-url {printable(public_url, 300)} --topic pass.activated "
        "--topic pass.deactivated",
    ]


def first_lines(
    state: TunnelState,
    describe: str,
    public_url: str | None,
    endpoints: list[LocalEndpoint],
    home_flag: str = "",
) -> list[str]:
    """What ``listen`` says about the tunnel in its first lines (``public_url``: the tunnel's URL
    with the receiver's path, while it is up)."""
    if state.phase == "up" and public_url:
        lines = [f"Public URL:  {public_url}  ({describe})", f"  {EXPOSED}"]
        return lines + [f"  {line}" for line in endpoint_lines(public_url, endpoints, home_flag)]
    if state.phase == "down":
        return [
            f"Tunnel: {printable(state.detail or '', 300)}; trying again in "
            f"{_seconds(state.retry_in_s)}. The receiver runs locally meanwhile."
        ]
    if state.phase == "unavailable":
        return [
            f"Tunnel: {printable(state.detail or '', 300)} The receiver runs locally, without "
            "a public URL."
        ]
    if state.phase == "starting":
        return [f"Tunnel: starting {describe}; its public URL follows."]
    return []


class TunnelPrinter:
    """One line per change of the tunnel after the first lines: its first answer in full when the
    first lines said it was starting, then down (once per reason), up again (saying when its URL
    changed, and which endpoints it left behind), unavailable."""

    def __init__(
        self,
        out: TextIO,
        public_url: Callable[[], str | None],
        endpoints: Callable[[], list[LocalEndpoint]],
        first: TunnelState,
        home_flag: str = "",
        *,
        describe: str = "",
    ) -> None:
        self.out = out
        self.public_url = public_url
        self.endpoints = endpoints
        self.home_flag = home_flag
        self.describe = describe
        self.answered = first.settled  # the first lines said how it is, not only "starting"
        self.last_url = public_url() if first.phase == "up" else None
        self.last_down = first.detail if first.phase == "down" else None

    def __call__(self, state: TunnelState) -> None:
        if not self.answered and state.phase in ("up", "down", "unavailable"):
            self.answered = True
            self._first_answer(state)
            return
        lines: list[str] = []
        if state.phase == "up":
            url = self.public_url()
            if url is None:
                return
            self.last_down = None
            if self.last_url is None or url == self.last_url:
                lines.append(f"Tunnel up: {url}")
            else:
                lines.append(f"Tunnel up at a new URL: {url} (it was {self.last_url})")
            lines += [f"  {line}" for line in endpoint_lines(url, self.endpoints(), self.home_flag)]
            self.last_url = url
        elif state.phase == "down":
            if state.detail == self.last_down:
                return  # the same failure again: said once
            self.last_down = state.detail
            lines.append(
                f"Tunnel down: {printable(state.detail or '', 300)}; trying again in "
                f"{_seconds(state.retry_in_s)} (the receiver goes on)."
            )
        elif state.phase == "unavailable":
            lines.append(
                f"Tunnel: {printable(state.detail or '', 300)} The receiver goes on without a "
                "public URL."
            )
        self._write(lines)

    def _first_answer(self, state: TunnelState) -> None:
        """What the first lines would have said, had the tunnel answered before them."""
        url = self.public_url() if state.phase == "up" else None
        self.last_url = url
        self.last_down = state.detail if state.phase == "down" else None
        self._write(first_lines(state, self.describe, url, self.endpoints(), self.home_flag))

    def _write(self, lines: list[str]) -> None:
        if lines:
            self.out.write("".join(line + "\n" for line in lines))
            self.out.flush()
