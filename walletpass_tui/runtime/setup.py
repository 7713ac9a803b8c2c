"""What a ``DeliveryRuntime`` (``local.py``) runs: ``DeliverySetup`` (the receiver's options, where
to forward and how to acknowledge, whether to learn schemas and index fields, a tunnel), and the
secrets a replay or a late forward is re-signed with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from walletpass_tui.tunnel.provider import Provider
    from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
    from walletpass_tui.webhooks.forward import Route, SecretLookup
    from walletpass_tui.webhooks.listening import ReceiverOptions
    from walletpass_tui.webhooks.models import Attempt


@dataclass(frozen=True)
class DeliverySetup:
    """What to run: the receiver (None: history only, no port), where to forward and how to ack.

    Forwards queued by an earlier run go out only when forwarding is asked for (``routes``, or
    ``forward=True``); otherwise they stay queued and ``pending_forwards()`` says how many wait.
    ``learn_schemas``: learn each topic's payload schema from the history and find drift.
    ``index_fields``: keep the field index of the history up to date (field queries).
    """

    options: ReceiverOptions | None = None
    routes: tuple[Route, ...] = ()
    ack_target: bool = False
    explicit_secrets: tuple[str, ...] = ()
    test_secret: str | None = field(default=None, repr=False)  # the home's (home_secret.py)
    forward: bool = False
    learn_schemas: bool = True
    index_fields: bool = True
    tunnel: Provider | None = None  # a public URL for the receiver, started by serve()

    @property
    def forwarding(self) -> bool:
        return bool(self.routes) or self.forward


def resigning_secrets(setup: DeliverySetup, registry: EndpointRegistry) -> SecretLookup:
    """The secret a replay or a late forward is re-signed with (``forward.secret_lookup``): the
    delivery's endpoint's, or the only --secret given, or the home's test secret. The forwarder
    (httpx) is imported on the first lookup only."""
    explicit, test_secret = setup.explicit_secrets, setup.test_secret
    found: list[SecretLookup] = []

    def lookup(attempt: Attempt) -> str | None:
        if not found:
            from walletpass_tui.webhooks.forward import secret_lookup

            found.append(secret_lookup(registry, explicit, test_secret))
        return found[0](attempt)

    return lookup
