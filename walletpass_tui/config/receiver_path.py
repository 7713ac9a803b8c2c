"""The receiver's path rules: what it may be (``receiver_path_problem``), how it goes in its URL
(``url_path``), and how an HTTP client rewrites one with dot segments (``without_dot_segments``).
Whatever passes, the receiver serves and ``attach`` and ``web`` find it by."""

from __future__ import annotations

from urllib.parse import quote

from walletpass_tui.text import printable

MAX_RECEIVER_PATH = 1000  # characters of the receiver's path in its URL (percent-encoded)


def url_path(path: str) -> str:
    """The receiver's ``path`` as it goes in its URL: UTF-8, percent-encoded. The receiver
    decodes a request's path before it compares, so ``/wébhooks`` is reached at
    ``/w%C3%A9bhooks`` and a ``%`` of the path itself at ``%25``."""
    return quote(path, safe="/!$&'()*+,;=:@")


def receiver_path_problem(path: str) -> str | None:
    """Why ``path`` cannot be the receiver's path, or None: it starts with ``/``, has no control
    characters, no ``.`` or ``..`` segment (a client would post elsewhere) and is at most
    ``MAX_RECEIVER_PATH`` characters in its URL. Whatever passes, the
    receiver serves and ``attach`` and ``web`` find it by (its URL is bounded and printable)."""
    if not path.startswith("/"):
        return f"The receiver path must start with '/', got {printable(path, 80)!r}."
    if not path.isprintable():
        return (
            f"The receiver path {printable(path, 80)!r} has control characters or is not text; "
            "give a path like /webhooks."
        )
    if len(url_path(path)) > MAX_RECEIVER_PATH:
        return f"The receiver path is longer than {MAX_RECEIVER_PATH} characters in a URL."
    segments = path.split("/")[1:]
    if "." in segments or ".." in segments:
        return (
            f"The receiver path {printable(path, 80)!r} has a '.' or '..' segment, which HTTP "
            "clients remove before they send, so its URL could never be reached; give "
            f"{printable(without_dot_segments(path), 80)!r} instead."
        )
    return None


def without_dot_segments(path: str) -> str:
    """``path`` as an HTTP client sends it: its ``.`` and ``..`` segments removed (RFC 3986,
    5.2.4): ``/a/../b`` is ``/b``, ``/a/.`` is ``/a/``."""
    segments = path.split("/")[1:]
    kept: list[str] = []
    for i, segment in enumerate(segments):
        if segment in (".", ".."):
            if segment == ".." and kept:
                kept.pop()
            if i == len(segments) - 1:
                kept.append("")  # a path that ends in a dot segment ends in /
            continue
        kept.append(segment)
    return "/" + "/".join(kept)
