# The self-hosted relay: one stable URL for the Wallet Pass Service, deliveries fanned out to laptops.
#
#   docker build -t walletpass-relay .
#   docker volume create walletpass-relay
#   docker run -d --name relay -p 8080:8080 -v walletpass-relay:/data walletpass-relay \
#       --public-url https://relay.example.com
#   docker exec relay walletpass-tui relay channel add team
#
# TLS is best terminated in front of it (Caddy, see docs/relay.md); then add
# --trust-proxy with the proxy's address. Or mount a certificate and pass --tls-cert/--tls-key.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    WALLETPASS_HOME=/data

# A system user with no shell and no password owns the data directory and runs the relay.
RUN groupadd --system --gid 10001 relay \
    && useradd --system --uid 10001 --gid relay --home-dir /data --no-create-home \
        --shell /usr/sbin/nologin relay \
    && install -d -m 0700 -o relay -g relay /data

WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY walletpass_tui ./walletpass_tui
# With the postgres extra (asyncpg), for --database postgresql://... (deploy/compose.yaml).
# pip compiles the bytecode as it installs (the relay's user cannot write it later), so each
# `docker exec relay walletpass-tui ...` starts without compiling the package first.
RUN pip install '.[postgres]' && rm -rf /src

WORKDIR /data
USER 10001:10001
VOLUME ["/data"]
EXPOSE 8080

# /healthz answers 200 with the version, the channels and the connected subscribers.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status != 200)"]

# SIGTERM (docker stop) finishes requests in flight and commits what is queued before exiting.
STOPSIGNAL SIGTERM
# relay serve listens on 0.0.0.0:8080 by default; arguments to `docker run` are added to it.
ENTRYPOINT ["walletpass-tui", "relay", "serve"]
