"""The relay link as the dashboard's header shows it: connected or not, how far behind, why it
stopped. The app subscribes once and republishes the header when these words change."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from walletpass_tui.relay.link.feed import RelayLink
from walletpass_tui.relay.link.state import LinkState


def relay_link_of(feeds: Iterable[object]) -> RelayLink | None:
    """The relay link among a runtime's feeds (``--relay``), if it has one."""
    return next((feed for feed in feeds if isinstance(feed, RelayLink)), None)


def watch_relay(
    link: RelayLink | None, show: Callable[[], None], stopped: Callable[[str], None]
) -> Callable[[], None]:
    """Call ``show()`` when the header's words change and ``stopped(why)`` once if the relay
    refuses for good; returns a function that stops watching."""
    if link is None:
        return lambda: None
    shown = [link.state.headline]

    def on_state(state: LinkState) -> None:
        if state.headline != shown[0]:
            shown[0] = state.headline
            show()
            if state.stopped:
                stopped(state.error or "The relay refused this subscription.")

    return link.subscribe(on_state)
