"""The laptop side in one event loop: a delivery runtime fed by a RelayLink, and its history."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from datetime import datetime
from pathlib import Path

from relay_helpers import SECRET
from standardwebhooks import Webhook

from walletpass_tui.config import Settings
from walletpass_tui.relay.link.feed import RelayLink
from walletpass_tui.runtime.local import DeliveryRuntime
from walletpass_tui.runtime.setup import DeliverySetup
from walletpass_tui.webhooks.listening import ReceiverOptions
from walletpass_tui.webhooks.models import Attempt
from walletpass_tui.webhooks.verify import SigningKey


def laptop(home: Path, link: RelayLink, **options: object) -> DeliveryRuntime:
    receiver = ReceiverOptions(
        host="127.0.0.1",
        port=0,
        secrets=[SigningKey.from_secret(SECRET)],
        **options,  # type: ignore[arg-type]
    )
    return DeliveryRuntime(
        Settings(home=home, receiver_port=0), DeliverySetup(options=receiver), feeds=[link]
    )


async def stored_until(runtime: DeliveryRuntime, count: int) -> list[Attempt]:
    """The attempts stored so far, once there are ``count`` of them (30 s at most)."""
    async with asyncio.timeout(30):
        while True:
            page = await runtime.store.log_page(
                None, limit=10_000, before_id=None, after_id=None, oldest_first=True
            )
            if len(page) >= count:
                found = [await runtime.store.attempt(row.id) for row in page]
                return [a for a in found if a is not None]
            await asyncio.sleep(0.02)


def link_for(url: str, token: str, **kw: float) -> RelayLink:
    return RelayLink(url, token, backoff_initial_s=0.05, backoff_max_s=0.2, **kw)


def signed_at(
    when: datetime, msg_id: str | None = None, secret: str = SECRET
) -> tuple[bytes, tuple[tuple[str, str], ...]]:
    """A genuine delivery signed at ``when`` (the service's clock then): body and headers."""
    msg_id = msg_id or f"msg_{uuid.uuid4().hex}"
    body = json.dumps({"type": "pass.activated", "data": {"passId": msg_id}}).encode()
    signature = Webhook(secret).sign(msg_id, when, body.decode())
    headers = (
        ("webhook-id", msg_id),
        ("webhook-timestamp", str(int(when.timestamp()))),
        ("webhook-signature", signature),
        ("content-type", "application/json"),
    )
    return body, headers


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
