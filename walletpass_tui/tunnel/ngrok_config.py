"""The ngrok authtoken (and agent address) the user already gave ngrok: never a flag of ours.

``NGROK_AUTHTOKEN`` wins; otherwise the ngrok agent's own configuration file, the first found of::

    $XDG_CONFIG_HOME/ngrok/ngrok.yml        (~/.config/ngrok/ngrok.yml: Linux)
    ~/Library/Application Support/ngrok/ngrok.yml                       (macOS)
    ~/.ngrok2/ngrok.yml                      (ngrok 2's)

written by ``ngrok config add-authtoken``. Version 3 nests the agent's settings under ``agent:``
(``authtoken``, ``connect_url``); version 2 has them at the top (``authtoken``,
``server_addr``). Only those keys are read, by a small line reader (no YAML library): the file
is at most ``MAX_FILE`` bytes of UTF-8, the values plain printable ASCII without spaces; a file
that is not is reported, never half-read. It is read by the one bounded reader
(:func:`~walletpass_tui.private_files.read_private_file`): a FIFO or a device in its place is
refused at once, never waited on (this runs on the receiver's event loop). The token is kept in a :class:`Secret` and never
shown, not even masked: messages say where it came from.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from walletpass_tui.config.secrets import Secret
from walletpass_tui.private_files import read_private_file
from walletpass_tui.tunnel.provider import TunnelUnavailable

ENV_AUTHTOKEN = "NGROK_AUTHTOKEN"
MAX_FILE = 64 * 1024
MAX_VALUE = 512
_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_]+)\s*:\s*(?P<value>.*?)\s*$")
_ADDRESS = re.compile(r"^[A-Za-z0-9.\-]{1,253}(:[0-9]{1,5})?$")


@dataclass(frozen=True)
class NgrokCredentials:
    """The authtoken, where it came from (``$NGROK_AUTHTOKEN``, a file's path), and the agent
    address a self-hosted or dedicated ngrok set-up connects to (None: ngrok's own)."""

    authtoken: Secret
    source: str
    connect_url: str | None = None


def config_paths(env: Mapping[str, str]) -> list[Path]:
    home = Path(env.get("HOME") or Path.home())
    xdg = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    paths = [Path(xdg) / "ngrok" / "ngrok.yml"]
    if sys.platform == "darwin":
        paths.append(home / "Library" / "Application Support" / "ngrok" / "ngrok.yml")
    paths.append(home / ".ngrok2" / "ngrok.yml")
    return paths


def _value(raw: str) -> str:
    if raw[:1] in ("'", '"') and raw[-1:] == raw[:1] and len(raw) >= 2:
        return raw[1:-1]
    return raw.split(" #", 1)[0].strip()


def read_agent_settings(path: Path) -> dict[str, str]:
    """``authtoken`` and ``connect_url`` from the ngrok configuration at ``path`` (missing keys
    left out); TunnelUnavailable saying what is wrong with the file."""
    try:
        # The one bounded reader (this runs on the receiver's event loop): a FIFO or a device in
        # its place is refused at once, never waited on or read; /dev/null reads as nothing.
        data = read_private_file(path, MAX_FILE)
    except FileNotFoundError:  # no file: nothing from it
        return {}
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            why = f"is larger than {MAX_FILE // 1024} KiB, which an ngrok configuration never is"
        elif exc.errno == errno.EINVAL:  # what was found instead of a file
            why = f"is {exc.strerror}"
        else:
            why = f"cannot be read ({exc.strerror})"
        raise TunnelUnavailable(
            f"The ngrok configuration {path} {why}; fix it or set {ENV_AUTHTOKEN}."
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise TunnelUnavailable(
            f"The ngrok configuration {path} is not UTF-8 text; fix it or set {ENV_AUTHTOKEN}."
        ) from None
    found: dict[str, str] = {}
    section = ""
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY.match(line)
        if match is None:
            continue
        key, value = match["key"], _value(match["value"])
        if not match["indent"]:
            section = key if not value else ""
            if key in ("authtoken", "server_addr"):  # version 2: at the top
                found[key.replace("server_addr", "connect_url")] = value
        elif section == "agent" and key in ("authtoken", "connect_url"):  # version 3
            found[key] = value
    for key, value in found.items():
        if not value or len(value) > MAX_VALUE or not value.isascii() or not value.isprintable():
            raise TunnelUnavailable(
                f"The {key} in the ngrok configuration {path} is not plain text; fix it or set "
                f"{ENV_AUTHTOKEN}."
            )
        if " " in value or (key == "connect_url" and not _ADDRESS.match(value)):
            raise TunnelUnavailable(
                f"The {key} in the ngrok configuration {path} is not a valid value; fix it or "
                f"set {ENV_AUTHTOKEN}."
            )
    return found


def ngrok_credentials(env: Mapping[str, str] | None = None) -> NgrokCredentials:
    """The authtoken to connect with; TunnelUnavailable, saying how to give one, when none."""
    env = os.environ if env is None else env
    settings: dict[str, str] = {}
    source = ""
    for path in config_paths(env):
        settings = read_agent_settings(path)
        if settings:
            source = str(path)
            break
    token = (env.get(ENV_AUTHTOKEN) or "").strip()
    if token:
        if not token.isascii() or not token.isprintable() or " " in token:
            raise TunnelUnavailable(
                f"{ENV_AUTHTOKEN} contains spaces, control or non-ASCII characters; copy the "
                "authtoken again from your ngrok dashboard."
            )
        return NgrokCredentials(Secret(token), f"${ENV_AUTHTOKEN}", settings.get("connect_url"))
    if "authtoken" in settings:
        return NgrokCredentials(Secret(settings["authtoken"]), source, settings.get("connect_url"))
    raise TunnelUnavailable(
        f"--tunnel ngrok needs your ngrok authtoken: set {ENV_AUTHTOKEN} or run 'ngrok config "
        "add-authtoken TOKEN' (https://dashboard.ngrok.com/get-started/your-authtoken)."
    )
