"""What ``listen`` says about a public URL: the lines built from the tunnel's states (its first
answer said in full when it came after the first lines) and a URL found from an ngrok agent,
which any local user can answer for."""

from __future__ import annotations

import io

from walletpass_tui.cli.listen_cmd.tunnel_lines import TunnelPrinter, public_url_lines
from walletpass_tui.tunnel.watch import TunnelState

URL = "https://oklahoma-solo.trycloudflare.com/webhooks"


def test_a_url_found_from_the_ngrok_agent_is_offered_with_who_can_answer_there() -> None:
    found = public_url_lines("https://ab12.ngrok-free.app", "/webhooks", found=True)
    assert found[0] == (
        "Public URL:  https://ab12.ngrok-free.app/webhooks  (found from the ngrok agent on "
        "127.0.0.1:4040, which any user of this machine can answer: check it is your ngrok "
        "before you register it)"
    )
    assert found[1].startswith(
        "  register it: walletpass-tui endpoints create --from-listener "
        "--public-url https://ab12.ngrok-free.app "
    )
    given = public_url_lines("https://hooks.example.com", "/in", found=False)
    assert given == ["Public URL:  https://hooks.example.com/in"]


def printer(first: TunnelState, url: str | None = URL) -> tuple[TunnelPrinter, io.StringIO]:
    out = io.StringIO()
    said = TunnelPrinter(
        out, lambda: url, list, first, " --home /h", describe="a cloudflared quick tunnel"
    )
    return said, out


def test_a_tunnel_that_answers_after_the_first_lines_is_said_in_full() -> None:
    said, out = printer(TunnelState("cloudflared", "starting"))
    said(TunnelState("cloudflared", "up", public_url="https://oklahoma-solo.trycloudflare.com"))
    lines = out.getvalue().splitlines()
    assert lines[0] == f"Public URL:  {URL}  (a cloudflared quick tunnel)"
    assert lines[1].startswith("  anyone who has it can post here")
    assert lines[2].startswith("  register it: walletpass-tui endpoints create --from-listener")
    said(
        TunnelState("cloudflared", "down", detail="cloudflared exited (status 1: x)", retry_in_s=1)
    )
    assert out.getvalue().splitlines()[-1] == (
        "Tunnel down: cloudflared exited (status 1: x); trying again in 1 s (the receiver goes on)."
    )


def test_a_first_answer_that_is_a_failure_is_said_once() -> None:
    said, out = printer(TunnelState("cloudflared", "starting"), url=None)
    down = TunnelState("cloudflared", "down", detail="cloudflared gave no URL", retry_in_s=2)
    said(down)
    said(TunnelState("cloudflared", "starting"))
    said(down)  # the same failure again: not said again
    assert out.getvalue().splitlines() == [
        "Tunnel: cloudflared gave no URL; trying again in 2 s. The receiver runs locally meanwhile."
    ]
