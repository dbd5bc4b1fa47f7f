#!/usr/bin/env bash
# OAuth with a real authorization server: for each scenario, starts tests/authserver/server.mjs
# (npm oidc-provider) and an mcpd with auth on that trusts it, both on 127.0.0.1, then runs the
# official SDK clients through the whole flow from nothing:
#   oauth-ts:         tests/interop/client-oauth.mjs  (@modelcontextprotocol/sdk 1.32.2)
#   oauth-py:         tests/interop/client_oauth.py modern  (PyPI mcp, stateless 2026-07-28 era)
#   oauth-py-legacy:  tests/interop/client_oauth.py legacy  (PyPI mcp, initialize + session)
#
#   [MCPD_BIN=target/debug/mcpd] tests/authserver/run.sh [scenario...]
#
# Scenarios (default: capped uncapped opaque dpop); each prefixes its lines with "<scenario>/":
#   capped    JWT access tokens living 5 s; the AS grants a client at most the scopes it registered
#             with (oidc-provider's default). Re-authorization after expiry must ask only for what
#             mcpd's challenge names (asking for all of scopes_supported gets invalid_scope here).
#             Step-up is not run: such an AS refuses it whatever the resource server does, as the
#             SDK clients do not re-register (docs/security.md says to let clients get more scope).
#   uncapped  the same with AS_CLIENT_SCOPE_CAP=0: any registered client may get every scope.
#   opaque    opaque access tokens (uncapped), for RFC 7662 introspection by mcpd; the [auth] lines that make mcpd
#             introspect are $OPAQUE_TOML below, or $MCPD_OPAQUE_AUTH_TOML (the AS's introspection endpoint, client id and
#             secret are exported as AS_INTROSPECTION_ENDPOINT / AS_INTROSPECTION_CLIENT_ID /
#             AS_INTROSPECTION_CLIENT_SECRET and substituted with envsubst-style ${...} in it).
#   dpop      the AS has DPoP (RFC 9449) on (uncapped); the TypeScript client binds its tokens to a key and sends
#             proofs (neither SDK does DPoP itself). mcpd's DPoP [auth] lines: $MCPD_DPOP_AUTH_TOML
#             (default: dpop = "allowed").
# Every scenario's mcpd also gets $MCPD_AUTH_TOML (extra [auth] lines) if set.
#
# Installs: the AS's node_modules (npm ci from package-lock.json) into
# ${MCPD_AUTHSERVER_CACHE:-/tmp/mcpd-authserver-cache}; the SDK clients through
# tests/interop/run.sh --install-only (${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache}).
# Logs: $MCPD_AUTHSERVER_CACHE/logs/<scenario>.*
# Prints "PASS ..." / "FAIL ..." / "SKIP ..." lines and finally "oauth: N passed, M failed, K skipped";
# exit status 0 only when nothing failed.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
INTEROP="$REPO/tests/interop"
MCPD_BIN="${MCPD_BIN:-$REPO/target/debug/mcpd}"
case "$MCPD_BIN" in /*) ;; *) MCPD_BIN="$(pwd)/$MCPD_BIN" ;; esac
CACHE="${MCPD_AUTHSERVER_CACHE:-/tmp/mcpd-authserver-cache}"
ICACHE="${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache}"
CLIENT_TIMEOUT="${MCPD_OAUTH_CLIENT_TIMEOUT:-150}"
mkdir -p "$CACHE/logs"
CACHE="$(cd "$CACHE" && pwd)"
LOGS="$CACHE/logs"
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -eq 0 ] && SCENARIOS=(capped uncapped opaque dpop gateway)

# record, run_client
. "$INTEROP/clients.sh"
finish() {
    echo "oauth: $PASSED passed, $FAILED failed, $SKIPPED skipped"
    [ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
    exit $?
}

[ -x "$MCPD_BIN" ] || { record "FAIL oauth:setup: no executable mcpd at $MCPD_BIN (set MCPD_BIN)"; finish; }

# ---- installs -------------------------------------------------------------------------------------
want="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$CACHE/node/.installed" ] || [ "$(cat "$CACHE/node/.installed")" != "$want" ] \
    || [ ! -f "$CACHE/node/node_modules/oidc-provider/package.json" ]; then
    rm -rf "$CACHE/node" && mkdir -p "$CACHE/node"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$CACHE/node/"
    if ! (cd "$CACHE/node" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >"$LOGS/install-as.log" 2>&1; then
        record "FAIL oauth:install: npm ci for the authorization server failed: $(tail -c 300 "$LOGS/install-as.log" | tr '\n' ' ')"
        finish
    fi
    echo "$want" >"$CACHE/node/.installed"
fi
cp "$HERE/server.mjs" "$CACHE/node/"
if ! MCPD_INTEROP_CACHE="$ICACHE" "$INTEROP/run.sh" --install-only >"$LOGS/install-clients.log" 2>&1; then
    record "FAIL oauth:install: the SDK clients did not install: $(tail -c 300 "$LOGS/install-clients.log" | tr '\n' ' ')"
    finish
fi
cp "$INTEROP"/client-oauth.mjs "$INTEROP"/common.mjs "$ICACHE/node/"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
PIDS=()
stop_all() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    PIDS=()
}
trap stop_all EXIT

# mcpd introspects the AS's opaque tokens with the client the AS pre-registers for it.
OPAQUE_TOML='introspection_url = "${AS_INTROSPECTION_ENDPOINT}"
introspection_client_id = "${AS_INTROSPECTION_CLIENT_ID}"
introspection_client_secret = "${AS_INTROSPECTION_CLIENT_SECRET}"
introspection_cache_secs = 1'

# start_as NAME RESOURCES [ENV...]: the authorization server for RESOURCES (a comma list), its
# output in $LOGS/NAME.as.*; sets ISSUER, or records the setup failure, stops all and returns 1.
start_as() {
    local name="$1" resources="$2" i
    shift 2
    env AS_PORT=0 AS_RESOURCE="$resources" "$@" node "$CACHE/node/server.mjs" \
        >"$LOGS/$name.as.out" 2>"$LOGS/$name.as.err" &
    PIDS+=("$!")
    for i in $(seq 100); do grep -q '^authserver listening on ' "$LOGS/$name.as.out" && break; sleep 0.1; done
    ISSUER="$(sed -n 's/^authserver listening on //p' "$LOGS/$name.as.out")"
    if [ -z "$ISSUER" ]; then
        record "FAIL $name/oauth:setup: the authorization server did not start: $(tail -c 300 "$LOGS/$name.as.err" | tr '\n' ' ')"
        stop_all
        return 1
    fi
}

# ---- one scenario ---------------------------------------------------------------------------------
run_scenario() {
    local name="$1" as_env=() mcpd_extra="${MCPD_AUTH_TOML:-}" checks expect="" port issuer mcpd_pid i
    case "$name" in
        capped) as_env=(AS_TOKEN_TTL=5); checks=flow,expiry,rotation,cc ;;
        uncapped) as_env=(AS_TOKEN_TTL=5 AS_CLIENT_SCOPE_CAP=0); checks=flow,stepup,expiry,rotation,cc ;;
        opaque) as_env=(AS_TOKEN_FORMAT=opaque AS_CLIENT_SCOPE_CAP=0); checks=flow,cc,revoke; expect=opaque; mcpd_extra+=$'\n'"${MCPD_OPAQUE_AUTH_TOML:-$OPAQUE_TOML}" ;;
        dpop) as_env=(AS_DPOP=1 AS_CLIENT_SCOPE_CAP=0); checks=flow,dpop; mcpd_extra+=$'\n'"${MCPD_DPOP_AUTH_TOML:-dpop = \"allowed\"}" ;;
        *) record "FAIL $name/oauth:setup: unknown scenario $name"; return ;;
    esac
    port="$(free_port)"
    start_as "$name" "http://127.0.0.1:$port/mcp" "${as_env[@]}" || return
    issuer="$ISSUER"
    export AS_INTROSPECTION_ENDPOINT="${issuer%/}/token/introspection"
    export AS_INTROSPECTION_CLIENT_ID="${AS_INTROSPECTION_CLIENT_ID:-mcpd-introspector}"
    export AS_INTROSPECTION_CLIENT_SECRET="${AS_INTROSPECTION_CLIENT_SECRET:-mcpd-introspector-secret}"
    export AS_ISSUER="$issuer" AS_JWKS_URI="${issuer%/}/jwks"
    mcpd_extra="$(python3 -c 'import os,sys; print(os.path.expandvars(sys.stdin.read()))' <<<"$mcpd_extra")"
    cat >"$LOGS/$name.mcpd.toml" <<EOF
[server]
listen = "127.0.0.1:$port"

[auth]
enabled = true
resource = "http://127.0.0.1:$port/mcp"
authorization_servers = ["$issuer"]
issuer = "$issuer"
jwks_url = "${issuer%/}/jwks"
required_scopes = ["mcp:tools"]
scopes_supported = ["mcp:tools", "mcp:admin"]
leeway_seconds = 0
jwks_min_refresh_secs = 1
$mcpd_extra

[auth.tool_scopes]
server_stats = ["mcp:admin"]
EOF
    "$MCPD_BIN" --config "$LOGS/$name.mcpd.toml" >"$LOGS/$name.mcpd.out" 2>"$LOGS/$name.mcpd.err" &
    mcpd_pid=$!
    PIDS+=("$mcpd_pid")
    for i in $(seq 100); do grep -q '^mcpd listening on ' "$LOGS/$name.mcpd.out" && break; sleep 0.1; done
    if ! grep -q '^mcpd listening on ' "$LOGS/$name.mcpd.out"; then
        record "FAIL $name/oauth:setup: mcpd did not start: $(tail -c 300 "$LOGS/$name.mcpd.err" | tr '\n' ' ')"
        stop_all
        return
    fi
    local url="http://127.0.0.1:$port/mcp"
    local cenv=(MCP_URL="$url" OAUTH_CHECKS="$checks" OAUTH_EXPECT_TOKEN="$expect")
    # Each client names its checks "<scenario>/<client>-oauth:…" (OAUTH_PREFIX).
    local p="$name/ts-oauth:"
    run_client "$p" "$LOGS/$name.ts.out" env "${cenv[@]}" OAUTH_PREFIX="$p" bash -c 'cd "$1" && exec node client-oauth.mjs' _ "$ICACHE/node"
    if [ "$name" != dpop ]; then
        p="$name/py-oauth:"
        run_client "$p" "$LOGS/$name.py.out" env "${cenv[@]}" OAUTH_PREFIX="$p" "$ICACHE/venv/bin/python" "$INTEROP/client_oauth.py" modern
        p="$name/py-legacy-oauth:"
        run_client "$p" "$LOGS/$name.py-legacy.out" env "${cenv[@]}" OAUTH_PREFIX="$p" "$ICACHE/venv/bin/python" "$INTEROP/client_oauth.py" legacy
    fi
    stop_all
}

# ---- mcpd as a gateway with credentials of its own (#34) ------------------------------------------
# One AS for two resources: the gateway's and an upstream mcpd's (which takes only tokens for itself).
# The gateway reaches the upstream with a client-credentials token (private_key_jwt, the endpoint
# found from the upstream's metadata), with the caller's token exchanged (RFC 8693), and with a
# wrong secret; gateway_check.py calls through it and reads the upstream's audit log.
run_gateway() {
    local gw up issuer i
    gw="$(free_port)" up="$(free_port)"
    start_as gateway "http://127.0.0.1:$gw/mcp,http://127.0.0.1:$up/mcp" || return
    issuer="$ISSUER"
    curl -fsS "${issuer%/}/_test/info" | python3 -c 'import json,sys; sys.stdout.write(json.load(sys.stdin)["client_credentials_jwt_client"]["private_key_pem"])' \
        >"$LOGS/gateway.ccj.pem"
    local auth
    auth() { printf '[auth]\nenabled = true\nresource = "http://127.0.0.1:%s/mcp"\nauthorization_servers = ["%s"]\nissuer = "%s"\njwks_url = "%s/jwks"\nrequired_scopes = ["mcp:tools"]\nscopes_supported = ["mcp:tools"]\n' "$1" "$issuer" "$issuer" "${issuer%/}"; }
    { printf '[server]\nlisten = "127.0.0.1:%s"\n' "$up"; auth "$up"; } >"$LOGS/gateway.up.toml"
    {
        printf '[server]\nlisten = "127.0.0.1:%s"\ntoolset = "none"\n' "$gw"; auth "$gw"
        printf '[[upstream]]\nid = "cc"\nurl = "http://127.0.0.1:%s/mcp"\n' "$up"
        printf '[upstream.credentials]\ntype = "client_credentials"\nclient_id = "mcp-cc-jwt-client"\nprivate_key_file = "%s"\nsigning_alg = "ES256"\nscope = "mcp:tools"\n' "$LOGS/gateway.ccj.pem"
        # The upstream binds its sessions to their principal: each downstream session its own.
        printf '[[upstream]]\nid = "tx"\nurl = "http://127.0.0.1:%s/mcp"\nshare = "session"\n' "$up"
        printf '[upstream.credentials]\ntype = "token_exchange"\nclient_id = "mcpd-exchanger"\nclient_secret_env = "MCPD_TEST_TX_SECRET"\nscope = "mcp:tools"\nissuer = "%s"\n' "$issuer"
        printf '[[upstream]]\nid = "tx26"\nurl = "http://127.0.0.1:%s/mcp"\nprotocol = "stateless"\n' "$up"
        printf '[upstream.credentials]\ntype = "token_exchange"\nclient_id = "mcpd-exchanger"\nclient_secret_env = "MCPD_TEST_TX_SECRET"\nscope = "mcp:tools"\nissuer = "%s"\n' "$issuer"
        printf '[[upstream]]\nid = "bad"\nurl = "http://127.0.0.1:%s/mcp"\naggregate = false\n' "$up"
        printf '[upstream.credentials]\ntype = "client_credentials"\nclient_id = "mcp-cc-client"\nclient_secret = "not-the-secret"\n'
    } >"$LOGS/gateway.gw.toml"
    "$MCPD_BIN" --config "$LOGS/gateway.up.toml" >"$LOGS/gateway.up.out" 2>"$LOGS/gateway.up.err" &
    PIDS+=("$!")
    MCPD_TEST_TX_SECRET=mcpd-exchanger-secret "$MCPD_BIN" --config "$LOGS/gateway.gw.toml" \
        >"$LOGS/gateway.gw.out" 2>"$LOGS/gateway.gw.err" &
    PIDS+=("$!")
    for i in $(seq 100); do
        grep -q '^mcpd listening on ' "$LOGS/gateway.up.out" && grep -q '^mcpd listening on ' "$LOGS/gateway.gw.out" && break
        sleep 0.1
    done
    if ! grep -q '^mcpd listening on ' "$LOGS/gateway.gw.out"; then
        record "FAIL gateway/oauth:setup: mcpd did not start: $(tail -c 300 "$LOGS/gateway.gw.err" "$LOGS/gateway.up.err" | tr '\n' ' ')"
        stop_all
        return
    fi
    run_client "gateway/" "$LOGS/gateway.check.out" env AS_ISSUER="$issuer" GW_URL="http://127.0.0.1:$gw/mcp" \
        UP_LOG="$LOGS/gateway.up.err" python3 "$HERE/gateway_check.py"
    stop_all
}

for s in "${SCENARIOS[@]}"; do
    case "$s" in
        gateway) run_gateway ;;
        *) run_scenario "$s" ;;
    esac
done
finish
