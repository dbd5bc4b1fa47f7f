#!/usr/bin/env bash
# Instructions per `tools/call echo` answered in JSON, counted by callgrind:
# the figure docs/performance.md judges core changes by (repeatable to ~1 %
# however busy the machine is, unlike wall-clock rates).
#
# mcpd runs under valgrind (one worker, memory store, MCPD_LOG_LEVEL=warn)
# twice, loaded by mcpd-loadtest's `calls` scenario (32 sessions, one call
# in flight each) for SHORT and LONG seconds; the difference in
# instructions over the difference in calls served is the cost of one call,
# with start-up, session set-up and shutdown cancelled out. Printed twice:
# all instructions, and without memset (actix-http zeroes a 3 KiB header
# table per parse attempt with `rep stosb`, which callgrind counts per byte).
#
# Usage: [STORE=redis] [TOOL=echo] loadtest/callgrind.sh [MCPD_BIN] [LOADTEST_BIN] [SHORT] [LONG]
# (defaults: target/release/mcpd, target/release/mcpd-loadtest, 5, 15).
# STORE=redis runs mcpd on the Redis store (a redis-server of its own on a
# unix socket, no persistence); TOOL=countdown measures the SSE call
# (countdown, one step, one progress notification) instead of echo;
# SCENARIO=sessions measures a session's whole life instead of a call
# (initialize + notifications/initialized + DELETE, 32 workers looping),
# printed per session.
# AUTH=1 runs mcpd with auth on (a fresh RSA key of this run; every request
# carries a JWT signed with it, whose `groups` claim is `analysts`);
# POLICY=FILE adds that Cedar policy file (`[policy]`, auth implied): the
# pair measures what the policy adds to an authenticated call
# (loadtest/policy-20.cedar: 20 rules).
# Loopback only; needs valgrind (apt-get install -y valgrind) and openssl.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
MCPD=${1:-$TARGET/release/mcpd}; LOADTEST=${2:-$TARGET/release/mcpd-loadtest}
SHORT=${3:-5}; LONG=${4:-15}
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 1; }
TMP=$(mktemp -d /tmp/mcpd-callgrind.XXXXXX)
PID=""
REDIS_PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
. loadtest/valgrind-lib.sh
open_store
TOOL_ARGS=(--tool echo --arguments '{"message":"hello"}')
[ "${TOOL:-echo}" = countdown ] && TOOL_ARGS=(--tool countdown --arguments '{"steps":1,"interval_ms":0}' --progress)
LOAD_ARGS=(--sessions 32 --concurrency 1 "${TOOL_ARGS[@]}"); UNIT=call
[ "${SCENARIO:-calls}" = sessions ] && { LOAD_ARGS=(--scenario sessions --sessions 4 --concurrency 8); UNIT=session; }
MCPD_ARGS=()
if [ -n "${AUTH:-}${POLICY:-}" ]; then
  openssl genrsa -out "$TMP/key.pem" 2048 2>/dev/null
  openssl rsa -in "$TMP/key.pem" -pubout -out "$TMP/pub.pem" 2>/dev/null
  b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
  head=$(printf '{"alg":"RS256","typ":"JWT"}' | b64url)
  body=$(printf '{"iss":"https://as.invalid","sub":"load","aud":"http://127.0.0.1/mcp","scope":"mcp","groups":["analysts"],"exp":%d}' "$(( $(date +%s) + 86400 ))" | b64url)
  sig=$(printf '%s.%s' "$head" "$body" | openssl dgst -sha256 -sign "$TMP/key.pem" | b64url)
  LOAD_ARGS+=(--header "authorization: Bearer $head.$body.$sig")
  {
    printf '[auth]\nenabled = true\nresource = "http://127.0.0.1/mcp"\n'
    printf 'authorization_servers = ["https://as.invalid"]\nissuer = "https://as.invalid"\n'
    printf 'key_files = ["%s"]\n' "$TMP/pub.pem"
    [ -n "${POLICY:-}" ] && printf '[policy]\nfiles = ["%s"]\nreload_secs = 0\n' "$(realpath "$POLICY")"
  } > "$TMP/auth.toml"
  MCPD_ARGS=(--config "$TMP/auth.toml")
fi

run() {  # run SECONDS: prints "instructions memset_instructions calls"
  local secs=$1 out="$TMP/cg.$1"
  under_valgrind "$TMP/stdout.$secs" "$TMP/stderr.$secs" --tool=callgrind --callgrind-out-file="$out"
  local calls
  calls=$("$LOADTEST" --url "$URL" --warmup 0 --duration "$secs" \
    "${LOAD_ARGS[@]}" | tail -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["ok"])')
  kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; PID=""
  callgrind_annotate --threshold=100 "$out" 2>/dev/null | python3 -c '
import re, sys
total = memset = 0
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+)\s+(\([^)]*\)\s+)?(\S.*)$", line)
    if not m:
        continue
    n = int(m.group(1).replace(",", ""))
    what = m.group(3)
    if "PROGRAM TOTALS" in what:
        total = n
    elif "memset" in what:
        memset += n
print(total, memset, sys.argv[1])' "$calls"
}

read -r I1 M1 C1 < <(run "$SHORT")
read -r I2 M2 C2 < <(run "$LONG")
python3 - "$I1" "$M1" "$C1" "$I2" "$M2" "$C2" "$UNIT" <<'PY'
import sys
i1, m1, c1, i2, m2, c2 = map(int, sys.argv[1:7])
unit = sys.argv[7]
calls = c2 - c1
if calls <= 0:
    sys.exit(f"the long run served no more calls than the short one ({c2} vs {c1})")
print(f"{unit}s served: {c1} and {c2}")
print(f"instructions per {unit}: {(i2 - i1) / calls:,.0f}")
print(f"instructions per {unit} without memset: {((i2 - m2) - (i1 - m1)) / calls:,.0f}")
PY
