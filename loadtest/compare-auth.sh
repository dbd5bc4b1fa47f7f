#!/usr/bin/env bash
# The cost of bearer-token validation: mcpd with auth off vs auth on (RS256
# JWT checked against a key file on every request), same load, interleaved
# runs. Prints a Markdown table of medians (min–max). Loopback only.
#
# Usage: loadtest/compare-auth.sh [DURATION] [RUNS]
# mcpd is pinned to core 0 (one worker), the load generator to core 1.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-8}; RUNS=${2:-3}
command -v openssl >/dev/null || { echo "openssl is missing" >&2; exit 1; }
cargo build --release -q -p mcpd-server -p mcpd-loadtest
TMP=$(mktemp -d /tmp/mcpd-auth-bench.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
openssl genrsa -out "$TMP/as.key" 2048 2>/dev/null
openssl rsa -in "$TMP/as.key" -pubout -out "$TMP/as.pub" 2>/dev/null
RESOURCE=http://127.0.0.1/mcp; ISS=https://as.example
H=$(printf '{"alg":"RS256","typ":"at+jwt","kid":"bench"}' | b64url)
P=$(printf '{"iss":"%s","sub":"bench","aud":"%s","scope":"mcp","exp":%d}' "$ISS" "$RESOURCE" $(( $(date +%s) + 3600 )) | b64url)
S=$(printf '%s.%s' "$H" "$P" | openssl dgst -sha256 -sign "$TMP/as.key" | b64url)
TOKEN="$H.$P.$S"

run() {  # run LABEL auth(0|1)
  local env=(MCPD_SERVER_WORKERS=1 MCPD_LOG_LEVEL=warn)
  local hdr=()
  if [ "$2" = 1 ]; then
    env+=(MCPD_AUTH_ENABLED=true MCPD_AUTH_RESOURCE=$RESOURCE MCPD_AUTH_ISSUER=$ISS
          MCPD_AUTH_AUTHORIZATION_SERVERS=$ISS MCPD_AUTH_KEY_FILES=$TMP/as.pub MCPD_AUTH_AUDIT_LOG=false)
    hdr=(--header "Authorization: Bearer $TOKEN")
  fi
  env "${env[@]}" taskset -c 0 target/release/mcpd --listen 127.0.0.1:0 >"$TMP/out" 2>"$TMP/err" &
  local pid=$! url=""
  for _ in $(seq 100); do url=$(sed -n 's/^mcpd listening on //p' "$TMP/out"); [ -n "$url" ] && break; sleep 0.1; done
  [ -n "$url" ] || { cat "$TMP/err" >&2; exit 1; }
  taskset -c 1 target/release/mcpd-loadtest --url "$url" --label "$1" --sessions 32 --concurrency 1 \
    --duration "$DURATION" --pid "$pid" "${hdr[@]}" | tail -1
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
for _ in $(seq "$RUNS"); do
  run "auth off" 0 >>"$TMP/results.jsonl"
  run "auth on (RS256 JWT, every request)" 1 >>"$TMP/results.jsonl"
done
python3 - "$TMP/results.jsonl" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r = json.loads(line); rows.setdefault(r["label"], []).append(r)
def fmt(v): return f"{statistics.median(v):,.0f} ({min(v):,.0f}–{max(v):,.0f})"
def fms(v): return f"{statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})"
print("| mcpd, tools/call echo, 32 sessions | calls per server CPU-s | calls/s | p99 ms | errors |")
print("| --- | ---: | ---: | ---: | ---: |")
for label, rs in rows.items():
    print(f"| {label} | {fmt([r['per_cpu_s'] for r in rs])} | {fmt([r['per_s'] for r in rs])} | {fms([r['p99_ms'] for r in rs])} | {sum(r['errors'] for r in rs)} |")
PY
