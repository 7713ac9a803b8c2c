"""Textual's ``Lazy``, for parts that can wait for the frame after the first one.

``Lazy`` itself (Textual 8) raises ``MountError`` when the app quits before its deferred mount
runs, since the mount no longer has a parent to go into; ``tests/ui/test_event_log.py`` quits at
the first frame to hold it to that. This subclass only skips the mount in that case; everything
else is ``Lazy``'s own.
"""

from __future__ import annotations

from textual.lazy import Lazy
from textual.widget import MountError, Widget


class MountLater(Lazy):
    DEFAULT_CSS = """
    MountLater {
        display: none;
    }
    """

    async def mount_composed_widgets(self, widgets: list[Widget]) -> None:
        self.call_after_refresh(self._mount_in_place)

    async def _mount_in_place(self) -> None:
        parent = self.parent
        if not isinstance(parent, Widget) or not parent.is_mounted or not self.is_attached:
            return  # the screen is going away: nothing to show any more
        try:
            await parent.mount(self._replace_widget, after=self)
        except MountError:
            if parent.is_mounted and parent.is_attached:
                raise
            return
        await self.remove()
