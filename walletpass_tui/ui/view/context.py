"""What the dashboard works with, handed down from the factory to every pane and screen."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from walletpass_tui.api.models import TemplateList, WebhookEndpoint
from walletpass_tui.config import ENV_API_KEY, ENV_BASE_URL, ENV_REGISTRATION_URL, Settings
from walletpass_tui.runtime.protocol import Runtime
from walletpass_tui.webhooks.endpoint_registry import EndpointRegistry
from walletpass_tui.webhooks.models import Attempt, LogRow
from walletpass_tui.webhooks.store import Store

if TYPE_CHECKING:
    from walletpass_tui.webhooks.forward import SecretLookup
    from walletpass_tui.webhooks.target_options import TargetOptions


class ServiceClient(Protocol):
    """The two calls the dashboard makes (``WalletPassClient`` or the simulator's stand-in)."""

    async def list_pass_templates(self) -> TemplateList: ...

    async def create_webhook_endpoint(
        self, url: str, topics: Sequence[str], enabled: bool = True
    ) -> WebhookEndpoint: ...


@dataclass
class DashboardContext:
    """The open delivery runtime (or, attached, the receiver in another process) and the
    service client, plus what the session remembers."""

    runtime: Runtime
    client: ServiceClient | None
    # Shown as the receiver's address when there is no receiver (fixed screenshots and snapshots).
    receiver_display: str | None = None
    mode: str | None = None  # a word for the header, e.g. "demo"
    last_replay_target: str | None = None
    # Where the service should post: the tunnel's public URL plus the receiver's path (from the
    # settings, or found from a local ngrok agent).
    public_url: str | None = None
    # The log's first page (no filter), read while the UI was being built; taken once.
    first_page: asyncio.Future[list[LogRow]] | None = None

    def take_first_page(self) -> asyncio.Future[list[LogRow]] | None:
        page, self.first_page = self.first_page, None
        return page

    @property
    def settings(self) -> Settings:
        return self.runtime.settings

    @property
    def registry(self) -> EndpointRegistry:
        return self.runtime.registry

    @property
    def store(self) -> Store:
        return self.runtime.store

    @property
    def secret_for(self) -> SecretLookup:
        """The secret a replay is re-signed with (the endpoint's, or the only --secret)."""
        return self.runtime.secret_for

    def target_options(self, target: str) -> TargetOptions:
        """What the dashboard's flags add to a request to ``target`` (a replay, the check): a
        --forward-to target's added headers and trusted certificates; nothing to another URL."""
        return self.runtime.target_options(target)

    def check_token(self, target: str) -> str | None:
        """What "Check my app" adds to its requests when ``target`` is this home's own receiver
        (so it keeps them as the check's, never counted as deliveries); None for any other URL.
        Reads the home's state and test secret: call it off the UI's thread."""
        from walletpass_tui.runtime.own_receiver import check_token_for

        return check_token_for(self.settings, target)

    def replay_target(self) -> str:
        """Where a replay goes unless the user says otherwise: the last replay's target, else the
        first forwarding target."""
        if self.last_replay_target:
            return self.last_replay_target
        if self.runtime.routes:
            return self.runtime.routes[0].target
        return ""

    async def replay_target_for(self, attempt: Attempt) -> str:
        """Where a replay of ``attempt`` goes unless the user says otherwise: where it was
        forwarded, else this receiver's route for its topic, else the last replay's target, else
        where a delivery of its topic last went; "" when nothing says."""
        targets = await self.store.replay_targets(attempt)
        forwarded = await self.store.forwards_for_message(attempt.webhook_id or "")
        if targets and any(f.target == targets[0] for f in forwarded):
            return targets[0]  # where this very delivery was forwarded
        route = next(
            (r.target for r in self.runtime.routes if r.topic in (None, attempt.topic)), None
        )
        return route or self.last_replay_target or (targets[0] if targets else "")

    def missing_service_setup(self, url_setting: str = "base_url") -> str | None:
        """What to set before calling the service (``url_setting``: ``base_url`` for templates,
        ``registration_url`` for creating endpoints), or None when nothing is missing."""
        # A client brings its own settings (the demo's points at the simulated service).
        settings: Settings = getattr(self.client, "settings", self.settings)
        missing = []
        if self.client is None or settings.api_key is None:
            missing.append(f"an API key ({ENV_API_KEY}, or api_key in the config file)")
        if not getattr(settings, url_setting):
            env = ENV_BASE_URL if url_setting == "base_url" else ENV_REGISTRATION_URL
            missing.append(
                f"the service's {url_setting.replace('_', ' ')} ({env}, or {url_setting})"
            )
        if not missing:
            return None
        config = settings.config_file
        where = f" The config file is {config}." if config else ""
        return (
            "Set "
            + " and ".join(missing)
            + ". API keys are created on the settings page of your workspace."
            + where
        )

    def receiver_address(self) -> str | None:
        """``host:port/path`` the receiver listens on, or None when it is not listening."""
        url = self.runtime.url
        if url is not None and self.runtime.bound is not None:
            return url.removeprefix("http://")
        return self.receiver_display

    @property
    def paused(self) -> bool:
        return self.runtime.paused
