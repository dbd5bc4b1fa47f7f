#!/usr/bin/env bash
# tools/call answered as SSE through 1 mcpd replica vs 3 replicas sharing one
# Redis, every session's requests spread over the replicas round-robin (no
# affinity), in one run with the same load. Prints a Markdown table and the
# raw JSON lines. Loopback only; bounded.
#
# Usage: loadtest/compare-replicas.sh [DURATION] [SESSIONS] [WORKERS]
# All replicas are pinned to core 0 (one worker each), so both runs have the
# same CPU budget and the difference is the cost of spreading a session over
# processes; the load generator and redis-server share core 1.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}; SESSIONS=${2:-8}; WORKERS=${3:-8}
command -v redis-server >/dev/null || { echo "redis-server is missing: apt-get install -y redis-server" >&2; exit 1; }
cargo build --release -q -p mcpd-server -p mcpd-loadtest
TMP=$(mktemp -d /tmp/mcpd-replicas.XXXXXX)
PIDS=()
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
taskset -c 1 redis-server --port 0 --unixsocket "$TMP/redis.sock" --save "" --appendonly no >/dev/null 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$TMP/redis.sock" ] && break; sleep 0.1; done

start() {  # start NAME -> sets URL and PID
  MCPD_SERVER_WORKERS=1 taskset -c 0 target/release/mcpd --listen 127.0.0.1:0 \
    --store redis --redis-url "redis+unix://$TMP/redis.sock" >"$TMP/$1.out" 2>"$TMP/$1.err" &
  PID=$!; PIDS+=($PID); URL=""
  for _ in $(seq 100); do URL=$(sed -n 's/^mcpd listening on //p' "$TMP/$1.out"); [ -n "$URL" ] && return 0; sleep 0.1; done
  echo "mcpd $1 did not start: $(cat "$TMP/$1.err")" >&2; exit 1
}
load() {  # load LABEL (--url U --pid P)...
  local label=$1; shift
  taskset -c 1 target/release/mcpd-loadtest --label "$label" --sessions "$SESSIONS" --concurrency "$WORKERS" \
    --duration "$DURATION" --tool countdown --arguments '{"steps":1,"interval_ms":0}' --progress "$@" | tail -1 || true
}
start one; ONE=$(load "1 replica" --url "$URL" --pid "$PID"); kill "$PID"
args=()
for n in a b c; do start "$n"; args+=(--url "$URL" --pid "$PID"); done
THREE=$(load "3 replicas, round robin" "${args[@]}")
echo "| setup | calls/s | p50 ms | p99 ms | p99.9 ms | calls per mcpd CPU-second | errors |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for j in "$ONE" "$THREE"; do
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("| %s | %.0f | %.2f | %.2f | %.2f | %s | %d |" % (r["label"], r["per_s"], r["p50_ms"], r["p99_ms"], r["p999_ms"], "%.0f" % r["per_cpu_s"] if r["per_cpu_s"] else "n/a", r["errors"]))' "$j"
done
echo
echo "$ONE"
echo "$THREE"
