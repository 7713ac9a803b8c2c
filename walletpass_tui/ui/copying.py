"""Copy what you see: the selected delivery as a curl command, its body or its headers, put on
the clipboard with ``App.copy_to_clipboard`` (OSC 52: it works over ssh) and said in a
notification with its size. Used by the main screen (the log's selected row) and the detail,
whose keys (``delivery_detail.copy_bindings``) load this module when first pressed."""

from __future__ import annotations

from textual.app import App

from walletpass_tui.webhooks.models import Attempt


def curl_url(app: App[object]) -> str:
    """Where a copied curl command posts: your app (the last replay's target, else the first
    --forward-to), else this receiver, as ``events export --format curl`` does."""
    context = getattr(app, "context", None)
    if context is None:
        return "http://127.0.0.1:8787/webhooks"
    target = context.replay_target()
    if target:
        return target
    return context.runtime.url or context.settings.receiver_url()


def copy_attempt(app: App[object], attempt: Attempt, what: str) -> None:
    # The curl form (webhooks.export, shlex) loads when first used, not for the first frame.
    from walletpass_tui.ui.view.clipboard_text import WHAT, clipboard_text

    if what not in WHAT:
        return
    copied = clipboard_text(attempt, what, url=curl_url(app))
    app.copy_to_clipboard(copied.text)
    app.notify(copied.message, markup=False)
