"""A rejection whose webhook-id is not UTF-8 text is kept (readably) and costs nothing to the
deliveries committed with it, on SQLite and on PostgreSQL (which refuses such text outright)."""

from __future__ import annotations

import asyncio

import aiohttp
from ingress_helpers import exchange, post_head
from relay_helpers import add_channel, query, signed, urls

from walletpass_tui.relay.server.serve import RelayServer


async def test_a_webhook_id_that_is_not_utf8_is_kept_and_its_batch_is_stored(
    relay: RelayServer, http: aiohttp.ClientSession
) -> None:
    issued = add_channel(relay, "team")
    ingress, _ = urls(relay, issued)
    path = ingress.removeprefix(relay.url)
    body, headers = signed()
    del headers["webhook-id"]
    raw = post_head(
        path, {**headers, "Content-Length": str(len(body))}, b"webhook-id: msg_\xff\xfe\r\n"
    )

    async def good() -> int:
        body, headers = signed()
        async with http.post(ingress, data=body, headers=headers) as r:
            return r.status

    # The bad one and good ones at once, so they share the writer's transactions.
    results = await asyncio.gather(exchange(relay, raw + body), *(good() for _ in range(20)))
    answer, _ = results[0]
    assert answer.startswith(b"HTTP/1.1 400")
    assert results[1:] == [200] * 20
    kept = query(relay, "SELECT status, webhook_id FROM rejected")
    assert len(kept) == 1 and kept[0][0] == 400
    assert str(kept[0][1]).startswith("msg_")
    assert query(relay, "SELECT COUNT(*) FROM deliveries") == [(20,)]
