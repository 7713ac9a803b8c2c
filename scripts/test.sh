#!/usr/bin/env bash
# The test suite from a fresh checkout: installs the programs the tests drive that are missing
# (Debian and Ubuntu: apt-get, through sudo when not run as root), makes .venv with Python 3.11
# or later, installs the project with its test extra, then runs pytest with the arguments given
# (none: the whole suite, as CI runs it). CI (.ci/run) runs this same script.
#
#   bash scripts/test.sh                        # everything
#   bash scripts/test.sh -m "not slow"          # the quick run
#   bash scripts/test.sh --missing              # list what would be installed; install nothing
#
# The programs, each a real peer of some tests: zsh and fish (completion scripts), Node.js and
# npm (TypeScript 5 for the schema export, installed into the user's cache), openssl
# (self-signed certificates), tmux (a real terminal), curl (exported commands), Chromium (the
# browser view; Ubuntu's is a snap, so there Playwright's own build is used), PostgreSQL's server
# (throwaway clusters for the relay; none is started here), and python3-venv.
set -euo pipefail
cd "$(dirname "$0")/.."

pick_python() {
    for candidate in python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return
        fi
    done
}

distro="$( (. /etc/os-release 2>/dev/null && echo "${ID:-}") || true)"
sudo=()  # what installing takes: nothing as root, sudo otherwise
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then sudo=(sudo); fi
python="$(pick_python)"
need=()
if [ -z "$python" ]; then
    need+=(python3.11 python3.11-venv)  # Ubuntu 22.04's own python3 is 3.10
elif ! "$python" -c 'import ensurepip' 2>/dev/null; then
    if [ "$python" = python3 ]; then need+=(python3-venv); else need+=("$python-venv"); fi
fi
command -v zsh >/dev/null || need+=(zsh)
command -v fish >/dev/null || need+=(fish)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v openssl >/dev/null || need+=(openssl)
command -v tmux >/dev/null || need+=(tmux)
command -v curl >/dev/null || need+=(curl)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || command -v initdb >/dev/null ||
    need+=(postgresql)
playwright_chromium=false
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
    if [ "$distro" = ubuntu ]; then playwright_chromium=true; else need+=(chromium); fi
fi

if [ "${1:-}" = --missing ]; then
    echo "${need[*]}"
    exit 0
fi

if ((${#need[@]})); then
    if ! command -v apt-get >/dev/null; then
        echo "scripts/test.sh: the tests need ${need[*]} (or your system's names for them):" \
            "install them, then run this again." >&2
        exit 1
    fi
    if [ "$(id -u)" != 0 ] && ((${#sudo[@]} == 0)); then
        echo "scripts/test.sh: installing ${need[*]} needs root: run this as root, or" \
            "apt-get install them first." >&2
        exit 1
    fi
    echo "Installing what the tests need: ${need[*]}" >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    python="$(pick_python)"
fi

# TypeScript 5 for the schema export test, where tests/schemas/conftest.py looks for it.
ts_dir="${XDG_CACHE_HOME:-$HOME/.cache}/walletpass-tui-tests/typescript5"
if [ ! -x "$ts_dir/node_modules/.bin/tsc" ]; then
    mkdir -p "$ts_dir"
    npm install --silent --no-audit --no-fund --prefix "$ts_dir" typescript@5 >/dev/null
fi

"$python" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test]'
if $playwright_chromium; then
    # Ubuntu packages Chromium as a snap: the browser test uses Playwright's build instead.
    "${sudo[@]}" .venv/bin/python -m playwright install-deps chromium >/dev/null
    .venv/bin/python -m playwright install chromium >/dev/null
fi
exec .venv/bin/python -m pytest "$@"
