"""What ``trigger``, ``sim deliver`` and ``check`` know without being told: where this home's
receiver listens (its state file) and the secret it verifies with (the home's test secret), so
``listen`` in one shell and ``trigger activated`` in another need no flag and no environment.

A secret given by a flag (``--secret``, ``--secret-file``, ``--secret -``) is used as given, to see
what a receiver does with another secret. To this home's receiver, otherwise, the test secret: that
receiver always verifies with it, whereas a ``WALLETPASS_SECRET`` exported for an app verifies
there only when the receiver was given it too. Elsewhere ``WALLETPASS_SECRET``; the test secret is
used only for a URL that is this home's receiver.
"""

from __future__ import annotations

import argparse
import os
from urllib.parse import urlsplit

from walletpass_tui.cli.common import CommandError
from walletpass_tui.cli.secret_flags import GivenSecret, one_secret
from walletpass_tui.config import ENV_SECRET, Settings
from walletpass_tui.errors import UsageError
from walletpass_tui.runtime import instance
from walletpass_tui.runtime.instance import home_flag
from walletpass_tui.runtime.own_receiver import ANY, ANY_V4, same_receiver

__all__ = [
    "home_test_secret",
    "is_home_receiver",
    "receiver_url",
    "running_url",
    "signing_secret",
]


def running_url(settings: Settings, *, unreadable: str | None = None) -> str | None:
    """The URL of the receiver running on this home, or None. ``unreadable``: a receiver that
    holds the home but whose state file cannot be read (removed, damaged) is a failure saying so
    in the sentence every command uses (``instance.Running.unreadable``, with this way out),
    never "no receiver runs", whose advice to start one would be refused."""
    found = instance.find(settings.home)
    if isinstance(found, instance.Running):
        if found.record is not None:
            return found.record.url
        if unreadable is not None:
            raise CommandError(found.unreadable(settings.home, unreadable))
    return None


def receiver_url(settings: Settings, flag: str = "--to") -> str:
    """Where to send when no URL is given: this home's receiver; a failure saying how to start
    one (or name a URL) when none runs."""
    url = running_url(settings, unreadable=f"give {flag} URL")
    if url is None:
        raise CommandError(
            f"No receiver runs on this home ({settings.home}): start one with 'walletpass-tui "
            f"listen{home_flag(settings.home)}' in another shell, or give {flag} URL."
        )
    parts = urlsplit(url)
    if parts.hostname in ANY:  # bound to every address: reached on loopback
        loopback = "127.0.0.1" if parts.hostname == ANY_V4 else "[::1]"
        port = f":{parts.port}" if parts.port else ""
        url = parts._replace(netloc=loopback + port).geturl()
    return url


def is_home_receiver(url: str, settings: Settings) -> bool:
    """Whether ``url`` is the receiver running on this home (loopback names taken as one)."""
    running = running_url(settings)
    return running is not None and same_receiver(url, running)


def signing_secret(args: argparse.Namespace, settings: Settings, url: str) -> GivenSecret | None:
    """The secret to sign a delivery to ``url`` with, and where it came from: one a flag gives,
    else this home's test secret when ``url`` is this home's receiver, else
    ``$WALLETPASS_SECRET``'s; None when there is none."""
    flagged = one_secret(args, env={})  # the flags alone
    if flagged is not None:
        return flagged
    if not is_home_receiver(url, settings):
        return one_secret(args)
    from walletpass_tui.webhooks import home_secret

    secret = home_secret.load(settings.home)
    exported = os.environ.get(ENV_SECRET, "").strip()
    if secret is None:  # a receiver runs, so it made one: only a removed file gets here
        if exported:
            return one_secret(args)
        raise UsageError(
            f"This home has no test secret ({home_secret.path_of(settings.home)}); restart "
            "its receiver to make one, or give the secret."
        )
    source = home_secret.LABEL
    if exported:
        source += f"; ${ENV_SECRET} is for other receivers"
    return GivenSecret(secret, source)


def home_test_secret(settings: Settings) -> str:
    """This home's test secret, made now when it has none (``listen --print-secret``, a receiver
    starting), unless a receiver runs on the home: it verifies with the secret it read when it
    started, and a new one it does not know would be printed to an app, and signed with by
    trigger, only to get 401s. A failure saying to restart that receiver instead."""
    from walletpass_tui.webhooks import home_secret

    secret = home_secret.load(settings.home)
    if secret is not None:
        return secret
    found = instance.find(settings.home)
    if isinstance(found, instance.Running):
        which = f" ({found.record.describe()})" if found.record is not None else ""
        raise CommandError(
            f"The receiver running on this home{which} verifies with a test secret whose file "
            f"{home_secret.path_of(settings.home)} was removed; stop it and start it again to "
            "make a new one."
        )
    return home_secret.load_or_create(settings.home)
