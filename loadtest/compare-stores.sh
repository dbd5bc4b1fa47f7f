#!/usr/bin/env bash
# tools/call answered as SSE, mcpd with the memory store vs the Redis store,
# side by side in one run, same load. Prints a Markdown table and the raw
# JSON lines. Loopback only; bounded (two runs of DURATION seconds).
#
# Usage: loadtest/compare-stores.sh [DURATION] [SESSIONS] [WORKERS]
# mcpd is pinned to core 0 (one worker); the load generator and redis-server
# share core 1, so the store's own CPU is not counted against mcpd's core.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}; SESSIONS=${2:-8}; WORKERS=${3:-8}
command -v redis-server >/dev/null || { echo "redis-server is missing: apt-get install -y redis-server" >&2; exit 1; }
cargo build --release -q -p mcpd-server -p mcpd-loadtest
TMP=$(mktemp -d /tmp/mcpd-compare.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
taskset -c 1 redis-server --port 0 --unixsocket "$TMP/redis.sock" --save "" --appendonly no >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$TMP/redis.sock" ] && break; sleep 0.1; done

run() {  # run LABEL MCPD-ARGS...
  local label=$1; shift
  MCPD_SERVER_WORKERS=1 taskset -c 0 target/release/mcpd --listen 127.0.0.1:0 "$@" >"$TMP/$label.out" 2>"$TMP/$label.err" &
  local pid=$!; PIDS+=($pid)
  local url=""
  for _ in $(seq 100); do url=$(sed -n 's/^mcpd listening on //p' "$TMP/$label.out"); [ -n "$url" ] && break; sleep 0.1; done
  [ -n "$url" ] || { echo "mcpd ($label) did not start: $(cat "$TMP/$label.err")" >&2; exit 1; }
  taskset -c 1 target/release/mcpd-loadtest --url "$url" --label "$label" --sessions "$SESSIONS" --concurrency "$WORKERS" \
    --duration "$DURATION" --tool countdown --arguments '{"steps":1,"interval_ms":0}' --progress --pid "$pid" | tail -1 || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
}
MEM=$(run memory --store memory)
RED=$(run redis --store redis --redis-url "redis+unix://$TMP/redis.sock")
echo "| store | calls/s | p50 ms | p99 ms | p99.9 ms | calls per mcpd CPU-second | errors |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for j in "$MEM" "$RED"; do
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("| %s | %.0f | %.2f | %.2f | %.2f | %s | %d |" % (r["label"], r["per_s"], r["p50_ms"], r["p99_ms"], r["p999_ms"], "%.0f" % r["per_cpu_s"] if r["per_cpu_s"] else "n/a", r["errors"]))' "$j"
done
echo
echo "$MEM"
echo "$RED"
