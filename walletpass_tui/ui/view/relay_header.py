"""The relay link as the dashboard's header shows it: connected or not, how far behind, why it
stopped. The app subscribes once and republishes the header when these words change."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from walletpass_tui.relay.link.feed import RelayLink
from walletpass_tui.relay.link.state import LinkState, rewound_line


def relay_link_of(feeds: Iterable[object]) -> RelayLink | None:
    """The relay link among a runtime's feeds (``--relay``), if it has one."""
    return next((feed for feed in feeds if isinstance(feed, RelayLink)), None)


def watch_relay(
    link: RelayLink | None,
    show: Callable[[], None],
    stopped: Callable[[str], None],
    went_back: Callable[[str], None] | None = None,
) -> Callable[[], None]:
    """Call ``show()`` when the header's words change, ``stopped(why)`` once if the relay
    refuses for good and ``went_back(line)`` each time the relay's head goes back below the
    link's cursor (its database restored); returns a function that stops watching."""
    if link is None:
        return lambda: None
    shown = [link.state.headline]
    rewound = [link.state.rewound]

    def on_state(state: LinkState) -> None:
        if state.rewound != rewound[0]:
            rewound[0] = state.rewound
            if state.rewound is not None and went_back is not None:
                went_back(rewound_line(*state.rewound))
        if state.headline != shown[0]:
            shown[0] = state.headline
            show()
            if state.stopped:
                stopped(state.error or "The relay refused this subscription.")

    return link.subscribe(on_state)
