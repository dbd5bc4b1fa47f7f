#!/usr/bin/env bash
# Interop tests: the official TypeScript and Python MCP SDK clients against a
# running mcpd, in both protocol eras (2026-07-28 stateless, 2025-11-25 session),
# and over the two seed transports (2024-11-05 HTTP+SSE, stdio).
#
#   [MCPD_BIN=/path/to/mcpd] tests/interop/run.sh http://127.0.0.1:PORT/mcp
#
# The HTTP+SSE client uses the same server: URL with its trailing /mcp replaced
# by /sse. The stdio clients launch their own `$MCPD_BIN --stdio` (default:
# target/debug/mcpd under the repository root).
# Installs the pinned SDKs (package-lock.json, requirements.txt) into a cache
# directory, ${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache}, skipping the install
# when the cache already holds the same pins; then runs, one after another (the
# server_stats tool is global, so clients must not overlap), each under
# `timeout 120`:
#   ts:         client.mjs              @modelcontextprotocol/sdk 1.x, session era
#   ts2026:     client2026.mjs modern   @modelcontextprotocol/client 2.x, versionNegotiation auto
#   ts2:legacy: client2026.mjs legacy   @modelcontextprotocol/client 2.x, versionNegotiation legacy
#   py2026:     client.py modern        PyPI mcp 2.x, mode="auto" (discover -> 2026-07-28)
#   py:legacy:  client.py legacy        PyPI mcp 2.x, mode="legacy"
#   sse:        client-sse.mjs          @modelcontextprotocol/sdk 1.x SSEClientTransport, GET /sse
#   stdio-ts:   client-stdio.mjs sdk    @modelcontextprotocol/sdk 1.x StdioClientTransport, mcpd --stdio
#   stdio-raw:  client-stdio.mjs raw    plain child process: stdout hygiene, parse errors, EOF, SIGTERM
#   stdio-py:   client_stdio.py         PyPI mcp 2.x stdio_client, mode="legacy" (+ auto fallback)
# Prints one line per check ("PASS name" / "FAIL name: reason") and finally
# "interop: N passed, M failed". Exit status 0 only when M == 0.
#
# Needs node 20+ with npm, and python3 (3.10+) with pip; if python3's venv
# module is missing (Debian without python3-venv) it is installed with apt-get.
set -uo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 <mcp endpoint url, e.g. http://127.0.0.1:8080/mcp> | --install-only" >&2
    exit 2
fi
URL="$1"
INSTALL_ONLY=0
[ "$URL" = "--install-only" ] && INSTALL_ONLY=1
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
MCPD_BIN="${MCPD_BIN:-$REPO/target/debug/mcpd}"
case "$MCPD_BIN" in
    /*) ;;
    *) MCPD_BIN="$(pwd)/$MCPD_BIN" ;; # the clients run from the cache directory
esac
CACHE="${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache}"
CLIENT_TIMEOUT="${MCPD_INTEROP_CLIENT_TIMEOUT:-120}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
LOG_DIR="$CACHE/logs"
mkdir -p "$LOG_DIR"

# record, run_client
. "$HERE/clients.sh"

# One install at a time per cache (two runs sharing a cache must not race).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE/.lock"
    flock 9
fi

hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }

# ---- node: npm ci from the lockfile, in $CACHE/node ---------------------------
install_node() {
    local dir="$CACHE/node" stamp want
    want="$(hash_of "$HERE/package.json" "$HERE/package-lock.json")"
    stamp="$dir/.installed"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
        && [ -f "$dir/node_modules/@modelcontextprotocol/sdk/package.json" ] \
        && [ -f "$dir/node_modules/@modelcontextprotocol/client/package.json" ] \
        && [ -f "$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] \
        && [ -f "$dir/node_modules/playwright-core/package.json" ]; then
        return 0
    fi
    command -v node >/dev/null 2>&1 || { echo "node not found on PATH" >&2; return 1; }
    command -v npm >/dev/null 2>&1 || { echo "npm not found on PATH" >&2; return 1; }
    rm -f "$stamp"
    mkdir -p "$dir"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$dir/"
    (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) || return 1
    echo "$want" >"$stamp"
}

# ---- python: a venv in $CACHE/venv with requirements.txt ----------------------
ensure_venv_module() {
    if python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
        return 0
    fi
    echo "python3 venv/ensurepip missing; installing python3-venv with apt-get" >&2
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        command -v sudo >/dev/null 2>&1 || { echo "not root and no sudo: install python3-venv by hand" >&2; return 1; }
        sudo="sudo"
    fi
    local pyver
    pyver="$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
    $sudo apt-get update -qq || return 1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv \
        || DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "python${pyver}-venv" \
        || return 1
    python3 -c 'import venv, ensurepip' >/dev/null 2>&1
}

install_python() {
    local venv="$CACHE/venv" stamp want pyid
    command -v python3 >/dev/null 2>&1 || { echo "python3 not found on PATH" >&2; return 1; }
    pyid="$(python3 -c 'import sys; print(sys.executable, sys.version)')"
    want="$( (cat "$HERE/requirements.txt"; echo "$pyid") | sha256sum | cut -d' ' -f1)"
    stamp="$venv/.installed"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] \
        && "$venv/bin/python" -c 'import mcp.client.streamable_http' >/dev/null 2>&1; then
        return 0
    fi
    ensure_venv_module || return 1
    rm -rf "$venv"
    python3 -m venv "$venv" || return 1
    "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q -r "$HERE/requirements.txt" || return 1
    "$venv/bin/python" -c 'import mcp.client.streamable_http' || return 1
    echo "$want" >"$stamp"
}

if [ "$INSTALL_ONLY" = 1 ]; then
    # Tests elsewhere use these installs: cargo's SDK resumption test (PyPI mcp), the scale-out
    # and auth tests (node_modules: the TypeScript SDKs), browser.mjs (playwright-core, which
    # drives Debian's /usr/bin/chromium: it downloads no browser of its own), and gateway.sh
    # (npm @modelcontextprotocol/server-everything as a stdio upstream, PyPI mcp for
    # upstream_http.py).
    install_node >"$LOG_DIR/install-node.log" 2>&1 || { echo "npm install failed: see $LOG_DIR/install-node.log" >&2; exit 1; }
    install_python >"$LOG_DIR/install-python.log" 2>&1 || { echo "python install failed: see $LOG_DIR/install-python.log" >&2; exit 1; }
    echo "interop clients installed in $CACHE" >&2
    exit 0
fi

# TypeScript SDK clients
if install_node >"$LOG_DIR/install-node.log" 2>&1; then
    # The .mjs files must sit beside node_modules for their bare imports to resolve.
    cp "$HERE"/*.mjs "$CACHE/node/"
    run_client "ts:" "$LOG_DIR/ts.out" bash -c 'cd "$1" && exec node client.mjs "$2"' _ "$CACHE/node" "$URL"
    run_client "ts2026:" "$LOG_DIR/ts2026.out" bash -c 'cd "$1" && exec node client2026.mjs "$2" modern' _ "$CACHE/node" "$URL"
    run_client "ts2:legacy:" "$LOG_DIR/ts2-legacy.out" bash -c 'cd "$1" && exec node client2026.mjs "$2" legacy' _ "$CACHE/node" "$URL"
    NODE_OK=1
else
    record "FAIL ts:install: npm ci failed: $(tail -c 300 "$LOG_DIR/install-node.log" | tr '\n' ' ')"
    NODE_OK=0
fi

# Python SDK client, both eras
if install_python >"$LOG_DIR/install-python.log" 2>&1; then
    run_client "py2026:" "$LOG_DIR/py2026.out" "$CACHE/venv/bin/python" "$HERE/client.py" "$URL" modern
    run_client "py:legacy:" "$LOG_DIR/py-legacy.out" "$CACHE/venv/bin/python" "$HERE/client.py" "$URL" legacy
    PY_OK=1
else
    record "FAIL py:install: venv/pip install failed: $(tail -c 300 "$LOG_DIR/install-python.log" | tr '\n' ' ')"
    PY_OK=0
fi

# The seed transports: 2024-11-05 HTTP+SSE on the same server, stdio in child processes.
if [ "$NODE_OK" -eq 1 ]; then
    run_client "sse:" "$LOG_DIR/sse.out" bash -c 'cd "$1" && exec node client-sse.mjs "$2"' _ "$CACHE/node" "$URL"
fi
if [ ! -x "$MCPD_BIN" ]; then
    record "FAIL stdio: no executable mcpd at $MCPD_BIN (set MCPD_BIN)"
else
    if [ "$NODE_OK" -eq 1 ]; then
        run_client "stdio-ts:" "$LOG_DIR/stdio-ts.out" bash -c 'cd "$1" && exec node client-stdio.mjs "$2" sdk' _ "$CACHE/node" "$MCPD_BIN"
        run_client "stdio-raw:" "$LOG_DIR/stdio-raw.out" bash -c 'cd "$1" && exec node client-stdio.mjs "$2" raw' _ "$CACHE/node" "$MCPD_BIN"
    fi
    if [ "$PY_OK" -eq 1 ]; then
        run_client "stdio-py:" "$LOG_DIR/stdio-py.out" "$CACHE/venv/bin/python" "$HERE/client_stdio.py" "$MCPD_BIN"
    fi
fi

echo "interop: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
