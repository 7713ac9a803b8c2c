"""A relay in this process on 127.0.0.1, with one channel, and the link that follows it: the
whole path (service -> relay -> laptop) in one place, for ``demo --relay`` and the benchmarks."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from walletpass_tui.relay.link.feed import RelayLink
from walletpass_tui.relay.server.channels import ingress_url, subscribe_url
from walletpass_tui.relay.server.serve import RelayOptions, RelayServer
from walletpass_tui.relay.server.storage.sqlite.database import RelayDB
from walletpass_tui.relay.server.storage.target import database_path


@dataclass(frozen=True)
class LocalRelay:
    server: RelayServer
    ingress_url: str  # where the service posts
    subscribe_url: str
    link: RelayLink  # a feed for the laptop's DeliveryRuntime


@contextlib.asynccontextmanager
async def local_relay(
    home: Path, *, channel: str = "demo", heartbeat_s: float = 2.0
) -> AsyncIterator[LocalRelay]:
    """A relay with its data in ``home`` and a channel ``channel``, stopped at the end."""
    db = RelayDB(database_path(home))
    try:
        issued = db.add_channel(channel)
    finally:
        db.close()
    server = RelayServer(RelayOptions(home=home, host="127.0.0.1", port=0, heartbeat_s=heartbeat_s))
    await server.start()
    try:
        slug = issued.channel.slug
        link = RelayLink(
            subscribe_url(server.url, slug), issued.token, backoff_initial_s=0.1, backoff_max_s=2
        )
        yield LocalRelay(
            server, ingress_url(server.url, slug), subscribe_url(server.url, slug), link
        )
    finally:
        await server.stop()
