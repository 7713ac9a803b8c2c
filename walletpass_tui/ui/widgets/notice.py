"""A message shown inside a pane instead of its content: an error, an empty state, a how-to."""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual.widget import Widget

from walletpass_tui.api.errors import ApiError
from walletpass_tui.text import visible


@dataclass(frozen=True)
class NoticeText:
    headline: str
    hint: str | None = None
    detail: str | None = None  # untrusted (the service's answer): shown escaped, dimmed
    keys: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (key, what it does)
    error: bool = False


def notice_for_error(exc: ApiError, *, retry_key: str = "r") -> NoticeText:
    status = f"HTTP {exc.status} · " if exc.status else ""
    detail = exc.body_excerpt
    return NoticeText(
        headline=exc.message,
        hint=f"{status}{exc.hint}" if exc.hint else (status.rstrip(" ·") or None),
        detail=detail,
        keys=((retry_key, "retry"),),
        error=True,
    )


class Notice(Widget):
    """Renders a ``NoticeText``; all of it plain text, never markup."""

    COMPONENT_CLASSES = {
        "notice--headline",
        "notice--error",
        "notice--hint",
        "notice--detail",
        "notice--key",
    }

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._notice: NoticeText | None = None
        self.display = False

    @property
    def notice(self) -> NoticeText | None:
        return self._notice

    def show(self, notice: NoticeText | None) -> None:
        self._notice = notice
        self.display = notice is not None
        self.refresh(layout=True)

    def render(self) -> Text:
        n = self._notice
        if n is None:
            return Text()
        s = self.get_component_rich_style
        text = Text()
        text.append(
            visible(n.headline), s("notice--error" if n.error else "notice--headline", partial=True)
        )
        if n.hint:
            text.append("\n\n")
            text.append(visible(n.hint), s("notice--hint", partial=True))
        if n.detail:
            text.append("\n\n")
            text.append(visible(n.detail, keep_newlines=True), s("notice--detail", partial=True))
        if n.keys:
            text.append("\n\n")
            for index, (key, action) in enumerate(n.keys):
                if index:
                    text.append("   ")
                text.append(f" {key} ", s("notice--key", partial=True))
                text.append(f" {action}")
        return text
