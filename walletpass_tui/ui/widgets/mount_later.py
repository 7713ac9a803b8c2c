"""A stand-in that mounts a widget in its place right after the first frame.

Like Textual's ``Lazy``, used in ``compose`` (``yield MountLater(Pane())`` or
``with MountLater(TabbedContent()):``), so the first frame goes out without the parts that can
wait for the next one. Unlike it, the deferred mount gives up quietly when its parent is no
longer mounted by then (the app quit at once), instead of raising in the middle of the exit.
"""

from __future__ import annotations

from textual.widget import MountError, Widget


class MountLater(Widget):
    DEFAULT_CSS = """
    MountLater {
        display: none;
    }
    """

    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self._later = widget

    def compose_add_child(self, widget: Widget) -> None:
        self._later.compose_add_child(widget)  # ``with MountLater(...):`` composes into it

    def on_mount(self) -> None:
        self.call_after_refresh(self._mount_in_place)

    async def _mount_in_place(self) -> None:
        parent = self.parent
        if not isinstance(parent, Widget) or not parent.is_mounted or not self.is_attached:
            return  # the screen is going away: nothing to show any more
        try:
            await parent.mount(self._later, after=self)
        except MountError:
            if parent.is_mounted and parent.is_attached:
                raise
            return
        await self.remove()
