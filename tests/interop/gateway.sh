#!/usr/bin/env bash
# Gateway interop test, self-contained: mcpd with upstream MCP servers, driven by the official
# TypeScript SDK client (gateway.mjs).
#
#   [MCPD_BIN=target/debug/mcpd] tests/interop/gateway.sh [gateway.mjs options, e.g. --only way1,way3]
#
# 1. installs the pinned clients and servers (run.sh --install-only: npm @modelcontextprotocol/sdk,
#    @modelcontextprotocol/server-everything, PyPI mcp) into ${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache};
# 2. starts upstream_http.py (PyPI mcp 2.x, Streamable HTTP) on a free loopback port;
# 3. writes a config with four upstreams:
#      everything    server-everything over stdio, share = "shared", env MCPD_GATEWAY_INTEROP
#      everything_s  the same program, share = "session" (one child per downstream session)
#      py            the Python server, url = http://127.0.0.1:PORT/mcp
#      dead          url = http://127.0.0.1:1/mcp (nothing listens there), connect_timeout_secs = 5
# 4. starts `$MCPD_BIN --listen 127.0.0.1:0 --config FILE` and reads "mcpd listening on URL" from its
#    stdout (20 s at most);
# 5. runs gateway.mjs URL under `timeout 150` (it has its own 120 s limit) and prints its output;
# 6. sends mcpd SIGTERM and checks that its child processes (the stdio upstreams) are gone within 5 s:
#    one more line, "PASS gateway.sh:shutdown" / "FAIL gateway.sh:shutdown: …";
# 7. prints "gateway: N passed, M failed" counting every PASS/FAIL line above (gateway.mjs's own
#    summary line is left out; it is in the log).
# Exit status: gateway.mjs's, or 1 when it passed but the shutdown check failed (2: setup failed).
# mcpd and the Python server are always stopped on exit (SIGTERM, SIGKILL after 3 s).
# Logs (mcpd, Python server, config, gateway.mjs stderr) stay in $CACHE/logs/gateway/.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
MCPD_BIN="${MCPD_BIN:-$REPO/target/debug/mcpd}"
case "$MCPD_BIN" in
    /*) ;;
    *) MCPD_BIN="$(pwd)/$MCPD_BIN" ;;
esac
CACHE="${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
export MCPD_INTEROP_CACHE="$CACHE"
LOGS="$CACHE/logs/gateway"
mkdir -p "$LOGS"

[ -x "$MCPD_BIN" ] || { echo "gateway.sh: no executable mcpd at $MCPD_BIN (set MCPD_BIN)" >&2; exit 2; }
command -v node >/dev/null 2>&1 || { echo "gateway.sh: node not found on PATH" >&2; exit 2; }

"$HERE/run.sh" --install-only >"$LOGS/install.log" 2>&1 || { echo "gateway.sh: install failed: $(cat "$LOGS/install.log")" >&2; exit 2; }
EVERYTHING="$CACHE/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
[ -f "$EVERYTHING" ] || { echo "gateway.sh: $EVERYTHING missing after install" >&2; exit 2; }

PY_PID=""
MCPD_PID=""
stop() { # stop <pid>: SIGTERM, then SIGKILL after 3 s
    local pid="$1" i
    [ -n "$pid" ] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 30); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
}
cleanup() {
    stop "$MCPD_PID"
    stop "$PY_PID"
    wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# wait_line <file> <pid> <regex> <seconds>: prints the first line matching regex, fails if the
# process exits or the time runs out.
wait_line() {
    local file="$1" pid="$2" re="$3" secs="$4" line i
    for i in $(seq $((secs * 10))); do
        line="$(grep -m1 -E "$re" "$file" 2>/dev/null)"
        if [ -n "$line" ]; then
            echo "$line"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# ---- the Python upstream ----------------------------------------------------------------------
"$CACHE/venv/bin/python" "$HERE/upstream_http.py" 0 >"$LOGS/py.out" 2>"$LOGS/py.err" &
PY_PID=$!
if ! PY_LINE="$(wait_line "$LOGS/py.out" "$PY_PID" '^upstream listening on ' 20)"; then
    echo "gateway.sh: upstream_http.py did not come up; stderr: $(tail -c 1000 "$LOGS/py.err")" >&2
    exit 2
fi
PY_URL="${PY_LINE#upstream listening on }"

# ---- mcpd ------------------------------------------------------------------------------------
CONFIG="$LOGS/mcpd-gateway.toml"
cat >"$CONFIG" <<EOF
# written by tests/interop/gateway.sh
[[upstream]]
id = "everything"
command = "node"
args = ["$EVERYTHING", "stdio"]
share = "shared"
env = { MCPD_GATEWAY_INTEROP = "everything-env-ok" }

[[upstream]]
id = "everything_s"
command = "node"
args = ["$EVERYTHING", "stdio"]
share = "session"

[[upstream]]
id = "py"
url = "$PY_URL"

[[upstream]]
id = "dead"
url = "http://127.0.0.1:1/mcp"
connect_timeout_secs = 5
EOF

if ! "$MCPD_BIN" --check-config --config "$CONFIG" >"$LOGS/check-config.out" 2>&1; then
    echo "gateway.sh: mcpd rejects the config: $(cat "$LOGS/check-config.out")" >&2
    exit 2
fi
"$MCPD_BIN" --listen 127.0.0.1:0 --config "$CONFIG" >"$LOGS/mcpd.out" 2>"$LOGS/mcpd.err" &
MCPD_PID=$!
if ! MCPD_LINE="$(wait_line "$LOGS/mcpd.out" "$MCPD_PID" '^mcpd listening on ' 20)"; then
    echo "gateway.sh: mcpd did not come up; stderr: $(tail -c 1000 "$LOGS/mcpd.err")" >&2
    exit 2
fi
URL="${MCPD_LINE#mcpd listening on }"

# ---- the client ---------------------------------------------------------------------------------
# gateway.mjs must sit beside node_modules for its bare imports to resolve.
cp "$HERE/gateway.mjs" "$HERE/common.mjs" "$CACHE/node/"
(
    cd "$CACHE/node" &&
        GATEWAY_DEAD_UPSTREAM=dead \
            GATEWAY_SESSION_UPSTREAM=everything_s \
            GATEWAY_MCPD_PID="$MCPD_PID" \
            GATEWAY_EVERYTHING_ENV=MCPD_GATEWAY_INTEROP=everything-env-ok \
            timeout --kill-after=10 150 node gateway.mjs "$URL" "$@"
) >"$LOGS/gateway.out" 2>"$LOGS/gateway.err"
RC=$?
# Everything but gateway.mjs's summary line: the summary printed last counts the shutdown check too.
grep -v -E '^gateway: [0-9]+ passed, [0-9]+ failed$' "$LOGS/gateway.out"
PASSED=$(grep -c '^PASS ' "$LOGS/gateway.out")
FAILED=$(grep -c '^FAIL ' "$LOGS/gateway.out")
if [ "$RC" -eq 124 ] || [ "$RC" -eq 137 ]; then
    echo "FAIL gateway.sh:client: gateway.mjs timed out; stderr: $(tail -c 500 "$LOGS/gateway.err" | tr '\n' ' ')"
    FAILED=$((FAILED + 1))
elif [ "$RC" -ne 0 ] && [ "$FAILED" -eq 0 ]; then
    echo "FAIL gateway.sh:client: gateway.mjs exited with status $RC; stderr: $(tail -c 500 "$LOGS/gateway.err" | tr '\n' ' ')"
    FAILED=$((FAILED + 1))
fi

# ---- shutdown: mcpd's stdio upstream children must go with it ---------------------------------------
CHILDREN="$(pgrep -P "$MCPD_PID" | tr '\n' ' ')"
stop "$MCPD_PID"
wait "$MCPD_PID" 2>/dev/null
MCPD_RC=$?
MCPD_PID=""
LEFT=""
for i in $(seq 50); do
    LEFT=""
    for c in $CHILDREN; do kill -0 "$c" 2>/dev/null && LEFT="$LEFT $c"; done
    [ -z "$LEFT" ] && break
    sleep 0.1
done
if [ -z "$CHILDREN" ]; then
    echo "FAIL gateway.sh:shutdown: mcpd had no child processes at the end (stdio upstreams not running?)"
    FAILED=$((FAILED + 1))
    [ "$RC" -eq 0 ] && RC=1
elif [ -n "$LEFT" ]; then
    echo "FAIL gateway.sh:shutdown: upstream children still running 5 s after mcpd got SIGTERM (exit status $MCPD_RC):$(for c in $LEFT; do printf ' [%s] %s;' "$c" "$(tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null | cut -c1-120)"; done)"
    for c in $LEFT; do kill -KILL "$c" 2>/dev/null; done
    FAILED=$((FAILED + 1))
    [ "$RC" -eq 0 ] && RC=1
else
    echo "PASS gateway.sh:shutdown (SIGTERM: mcpd exited with status $MCPD_RC, its $(echo $CHILDREN | wc -w) upstream children with it)"
    PASSED=$((PASSED + 1))
fi
echo "gateway: $PASSED passed, $FAILED failed"
exit "$RC"
