"""What the service sends back, parsed without assuming more than the contract says."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from walletpass_tui.api.errors import ApiError
from walletpass_tui.api.topics import TopicError, parse_topics
from walletpass_tui.config.secrets import Secret

_LIST_KEYS = ("data", "items", "templates", "passTemplates", "results")


def validate_topics(topics: Sequence[str]) -> list[str]:
    """The full names of ``topics`` (short names accepted), or ApiError ``invalid_request``."""
    try:
        return parse_topics(topics)
    except TopicError as exc:
        raise ApiError(str(exc), kind="invalid_request") from None


def parse_created_at(text: Any) -> datetime:
    if not isinstance(text, str):
        raise ValueError("createdAt is not a string")
    stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if stamp.tzinfo is None:
        raise ValueError("createdAt has no time zone")
    return stamp.astimezone(UTC)


def format_created_at(stamp: datetime) -> str:
    return stamp.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class WebhookEndpoint:
    id: str
    url: str
    enabled_topics: tuple[str, ...]
    enabled: bool
    secret: Secret
    created_at: datetime
    # The answer as received; holds the secret in clear, so never part of repr().
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_response(cls, payload: Any, raw_text: str) -> WebhookEndpoint:
        """Parse the create response; anything missing is an ApiError that keeps the raw body."""

        def bad(why: str) -> ApiError:
            return ApiError(
                f"The service's answer to the create call is not a webhook endpoint ({why}).",
                kind="bad_shape",
                body=raw_text,
                hint="Its raw answer is kept below; the secret, if present, is in it.",
            )

        if not isinstance(payload, Mapping):
            raise bad("not a JSON object")
        missing = [
            k
            for k in ("id", "secret", "url", "enabledTopics", "enabled", "createdAt")
            if k not in payload
        ]
        if missing:
            raise bad(f"missing {', '.join(missing)}")
        ep_id, secret, url = payload["id"], payload["secret"], payload["url"]
        if not isinstance(ep_id, str) or not ep_id.startswith("ep_"):
            raise bad("id does not start with ep_")
        if not isinstance(secret, str) or not secret.startswith("whsec_"):
            raise bad("secret does not start with whsec_")
        if not isinstance(url, str):
            raise bad("url is not a string")
        topics = payload["enabledTopics"]
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise bad("enabledTopics is not a list of strings")
        if not isinstance(payload["enabled"], bool):
            raise bad("enabled is not true or false")
        try:
            created = parse_created_at(payload["createdAt"])
        except ValueError:
            raise bad("createdAt is not an ISO 8601 timestamp") from None
        return cls(
            id=ep_id,
            url=url,
            enabled_topics=tuple(topics),
            enabled=payload["enabled"],
            secret=Secret(secret),
            created_at=created,
            raw=dict(payload),
        )

    def to_service_json(self) -> dict[str, Any]:
        """The endpoint as the service returned it (secret included)."""
        if self.raw:
            return dict(self.raw)
        return {
            "id": self.id,
            "secret": self.secret.reveal(),
            "url": self.url,
            "enabledTopics": list(self.enabled_topics),
            "enabled": self.enabled,
            "createdAt": format_created_at(self.created_at),
        }


@dataclass(frozen=True)
class TemplateList:
    """Templates as the service sent them, each an open mapping with all its fields.

    ``container`` is the key that held the list when the answer was an object (None for a bare
    array); ``extra`` holds that object's other keys (paging fields, say), never dropped.
    """

    templates: list[dict[str, Any]]
    container: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    raw_text: str = ""


def parse_template_list(payload: Any, raw_text: str) -> TemplateList:
    def odd(why: str) -> ApiError:
        return ApiError(
            f"The template list has a shape this tool does not recognise ({why}).",
            kind="bad_shape",
            body=raw_text,
            hint="Its raw answer is shown as received.",
        )

    if isinstance(payload, list):
        if not all(isinstance(item, dict) for item in payload):
            raise odd("a list holding something other than objects")
        return TemplateList(templates=list(payload), raw_text=raw_text)
    if isinstance(payload, dict):
        candidates = [k for k in _LIST_KEYS if isinstance(payload.get(k), list)]
        if not candidates:
            # Any single key holding a list of objects.
            candidates = [
                k
                for k, v in payload.items()
                if isinstance(v, list) and v and all(isinstance(i, dict) for i in v)
            ]
        if len(candidates) == 1:
            key = candidates[0]
            items = payload[key]
            if not all(isinstance(item, dict) for item in items):
                raise odd(f"{key!r} holds something other than objects")
            extra = {k: v for k, v in payload.items() if k != key}
            return TemplateList(
                templates=list(items), container=key, extra=extra, raw_text=raw_text
            )
        if len(candidates) > 1:
            raise odd(f"several lists: {', '.join(candidates)}")
        raise odd("an object without a list of templates")
    raise odd(f"a JSON {type(payload).__name__}")


def template_title(template: Mapping[str, Any]) -> str:
    for key in ("name", "title", "displayName", "label", "description"):
        value = template.get(key)
        if isinstance(value, str) and value:
            return value
    return ""
