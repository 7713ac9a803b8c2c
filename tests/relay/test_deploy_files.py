"""deploy/compose.yaml and deploy/Caddyfile, read as the tools would (no Docker engine here, so
``docker compose`` itself is not run): PostgreSQL, two relays on it, Caddy balancing both with
Server-Sent Events unbuffered, and no password outside the environment file."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_compose_runs_postgresql_and_two_relays_on_it_behind_caddy() -> None:
    services = compose()["services"]
    assert set(services) == {"postgres", "relay-1", "relay-2", "caddy"}
    assert services["postgres"]["image"].startswith("postgres:")
    assert "healthcheck" in services["postgres"]
    for name in ("relay-1", "relay-2"):
        relay = services[name]
        url = relay["environment"]["WALLETPASS_RELAY_DATABASE"]
        assert url.startswith("postgresql://relay:${RELAY_DB_PASSWORD")
        assert url.endswith("@postgres:5432/relay")  # the postgres service, its database
        assert relay["depends_on"]["postgres"]["condition"] == "service_healthy"
        assert relay["build"]["context"] == ".."
        assert (ROOT / "Dockerfile").exists()
        command = relay["command"]
        assert (
            command[command.index("--public-url") + 1]
            == "https://${RELAY_DOMAIN:?set RELAY_DOMAIN in .env}"
        )
        # The relays read X-Forwarded-For from Caddy's fixed address only.
        trusted = command[command.index("--trust-proxy") + 1]
        caddy_ip = services["caddy"]["networks"]["relay"]["ipv4_address"]
        assert trusted == f"{caddy_ip}/32"
    subnet = compose()["networks"]["relay"]["ipam"]["config"][0]["subnet"]
    assert caddy_ip.rsplit(".", 1)[0] == subnet.split("/")[0].rsplit(".", 1)[0]
    caddy = services["caddy"]
    assert {"80:80", "443:443"} <= set(caddy["ports"])
    assert "./Caddyfile:/etc/caddy/Caddyfile:ro" in caddy["volumes"]


def test_no_password_is_written_in_the_deployment_files() -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    for url in re.findall(r"postgresql://[^\s\"']+", text):
        password = url.split("://", 1)[1].split("@", 1)[0].partition(":")[2]
        assert password.startswith("${"), url  # from .env, never a literal
    assert compose()["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith("${")


def test_caddy_balances_both_relays_and_streams_events_unbuffered() -> None:
    text = (DEPLOY / "Caddyfile").read_text()
    lines = [line.split("#", 1)[0].strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    assert lines[0] == "{$RELAY_DOMAIN} {"  # automatic HTTPS for the domain
    proxy = next(line for line in lines if line.startswith("reverse_proxy "))
    assert proxy.split()[1:3] == ["relay-1:8080", "relay-2:8080"]
    assert "flush_interval -1" in lines
    assert "health_uri /healthz" in lines
    assert text.count("{") == text.count("}")
    services = compose()["services"]
    assert services["caddy"]["environment"]["RELAY_DOMAIN"].startswith("${RELAY_DOMAIN")
