#!/usr/bin/env bash
# The one command behind docs/performance.md: mcpd and its peers, one after
# another, under the same load, and the page written from what was measured.
#
#   loadtest/bench.sh [--quick] [--runs N] [--duration S] [--soak S]
#                     [--no-build] [--out FILE] [--only gateway]
#
# Builds mcpd and mcpd-loadtest (release) and the peers
# (loadtest/peers/build.sh: rmcp, tower-mcp, TypeScript SDK, bare actix-web, in
# /tmp/mcpd-peers), then runs, N times over (interleaved, so drift on a
# shared machine hits every server alike), each server on a fresh process
# pinned to core 0 and the load generator pinned to core 1:
#   servers   mcpd (memory store, default configuration, MCPD_SERVER_WORKERS=1;
#             the load generator is one client address, so the per-client
#             session limits are lifted: MCPD_RATE_LIMIT_SESSIONS_PER_MINUTE=0,
#             MCPD_LIMITS_MAX_SESSIONS_PER_CLIENT=10000),
#             mcpd with the Redis store (redis-server on core 1, unix socket),
#             rmcp, tower-mcp, ts-sdk, actix-bare
#   scenarios calls: echo, 32 sessions x 1 worker = 32 calls in flight (every server);
#             calls answered as SSE (countdown, 1 progress event; mcpd);
#             sessions: 32 workers (every server);
#             idle: 2,000 sessions + 2,000 GET streams (every server);
#             resume and mixed (mcpd, both stores)
#   gateway   the echo call through a front mcpd (core 0) to an upstream on
#             core 1: another mcpd over HTTP, and `mcpd --stdio` (its child)
# then 3 mcpd replicas round-robin on one Redis (all on core 0), 10,000 SSE
# streams on mcpd started with a soft fd limit of 1,024, and a soak of mixed
# traffic (600 s; --quick: 60 s). Medians of the runs with min-max go to
# docs/performance.md (or --out). Default: 10 s per run, about 25 minutes
# with the soak; --quick: 5 s per run, about 10 minutes. Loopback only;
# every run is bounded in time.
#
# --only gateway runs the gateway part alone (with mcpd's own echo beside it,
# for the native row), to try it: the page it writes has n/a elsewhere, so
# give it --out, and loadtest/results/ is left as it was.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=3; DUR=10; SOAK=600; QUICK=0; BUILD=1; OUT=docs/performance.md; ONLY=
IDLE_N=2000; MANY_STREAMS=10000; SESS=32; WORKERS=1
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1; DUR=5; SOAK=60 ;;
    --runs) RUNS=$2; shift ;;
    --duration) DUR=$2; shift ;;
    --soak) SOAK=$2; shift ;;
    --no-build) BUILD=0 ;;
    --out) OUT=$2; shift ;;
    --only) [ "$2" = gateway ] || { echo "--only: gateway is the one part that runs alone" >&2; exit 2; }; ONLY=$2; shift ;;
    *) echo "usage: $0 [--quick] [--runs N] [--duration S] [--soak S] [--no-build] [--out FILE] [--only gateway]" >&2; exit 2 ;;
  esac
  shift
done
PEERS_DIR=${PEERS_DIR:-/tmp/mcpd-peers}
for tool in taskset pgrep redis-server node python3; do
  command -v $tool >/dev/null || { echo "$tool is missing (redis-server: apt-get install -y redis-server)" >&2; exit 1; }
done
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores (server on core 0, load generator on core 1)" >&2; exit 1; }

if [ $BUILD = 1 ]; then
  echo "bench: building mcpd and mcpd-loadtest (release)" >&2
  cargo build --release -q -p mcpd-server -p mcpd-loadtest
  [ -n "$ONLY" ] || loadtest/peers/build.sh "$PEERS_DIR" >/dev/null
fi
LT=${CARGO_TARGET_DIR:-target}/release/mcpd-loadtest
MCPD=${CARGO_TARGET_DIR:-target}/release/mcpd
# What was built (others may commit while the bench runs).
MCPD_REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates Cargo.toml Cargo.lock || echo ' with uncommitted changes in crates/'), built $(date -u -r $MCPD +%H:%M) UTC"
WORK=$(mktemp -d /tmp/mcpd-bench.XXXXXX)
RESULTS=$WORK/results.jsonl
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
T0=$(date +%s)
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

taskset -c 1 redis-server --port 0 --unixsocket "$WORK/redis.sock" --save "" --appendonly no >/dev/null 2>&1 &
REDIS_PID=$!; PIDS+=($REDIS_PID)
for _ in $(seq 50); do [ -S "$WORK/redis.sock" ] && break; sleep 0.1; done
REDIS_URL="redis+unix://$WORK/redis.sock"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start SERVER [NAME] -> SPID, SURL. Every server is pinned to core 0; an
# upstream behind the gateway to core 1 (see gateway_hop).
start() {
  local server=$1 name=${2:-$1} port
  local out=$WORK/$name.out err=$WORK/$name.err
  : >"$out"; : >"$err"   # truncated here, not in the child: no stale URL
  # One load generator is one client: lift the per-client session limits.
  export MCPD_RATE_LIMIT_SESSIONS_PER_MINUTE=0 MCPD_LIMITS_MAX_SESSIONS_PER_CLIENT=10000
  case $server in
    mcpd) MCPD_SERVER_WORKERS=1 taskset -c 0 $MCPD --listen 127.0.0.1:0 >"$out" 2>"$err" & ;;
    mcpd-redis) MCPD_SERVER_WORKERS=1 taskset -c 0 $MCPD --listen 127.0.0.1:0 \
                  --store redis --redis-url "$REDIS_URL" >"$out" 2>"$err" & ;;
    mcpd-lowfd) (ulimit -Sn 1024; MCPD_SERVER_WORKERS=1 exec taskset -c 0 $MCPD --listen 127.0.0.1:0) >"$out" 2>"$err" & ;;
    mcpd-upstream) MCPD_SERVER_WORKERS=1 taskset -c 1 $MCPD --listen 127.0.0.1:0 >"$out" 2>"$err" & ;;
    gateway-*) MCPD_SERVER_WORKERS=1 taskset -c 0 $MCPD --listen 127.0.0.1:0 --config "$WORK/$server.toml" >"$out" 2>"$err" & ;;
    rmcp) port=$(free_port); taskset -c 0 "$PEERS_DIR/rmcp-echo/target/release/rmcp-echo" "$port" >"$out" 2>"$err" & ;;
    tower-mcp) port=$(free_port); taskset -c 0 "$PEERS_DIR/tower-mcp-echo/target/release/tower-mcp-echo" "$port" >"$out" 2>"$err" & ;;
    ts-sdk) port=$(free_port); taskset -c 0 node "$PEERS_DIR/ts-sdk/server.mjs" "$port" >"$out" 2>"$err" & ;;
    actix-bare) port=$(free_port); taskset -c 0 "$PEERS_DIR/actix-bare/target/release/actix-bare" "$port" >"$out" 2>"$err" & ;;
  esac
  SPID=$!; PIDS+=($SPID); SURL=""
  for _ in $(seq 100); do
    SURL=$(sed -n 's/^.* listening on \(http[^ ]*\).*$/\1/p' "$out" | head -1)
    [ -n "$SURL" ] && break; sleep 0.1
  done
  [ -n "$SURL" ] || { echo "bench: $name did not start: $(cat "$err")" >&2; exit 1; }
  # mcpd prints its base URL; the others print the endpoint.
  case $SURL in */mcp) ;; *) SURL=${SURL%/}/mcp ;; esac
}
stop() { kill "$SPID" 2>/dev/null || true; wait "$SPID" 2>/dev/null || true; }

# load KEY SERVER RUN LOADTEST-ARGS... : one run, one JSON line in RESULTS.
load() {
  local key=$1 server=$2 run=$3; shift 3
  echo "$key	$*" >>"$WORK/commands.tsv"
  local line
  line=$(taskset -c 1 $LT --label "$server" "$@" 2>>"$WORK/loadtest.err" | tail -1) || true
  case $line in
    "{"*) ;;
    *) line='{"errors":1,"failed":true}' ;;
  esac
  python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.update(key=sys.argv[2], server=sys.argv[3], run=int(sys.argv[4])); print(json.dumps(r))' \
    "$line" "$key" "$server" "$run" >>"$RESULTS"
  printf 'bench: %-12s %-11s run %s: %s\n' "$server" "$key" "$run" \
    "$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("ok=%s errors=%s per_s=%s per_cpu_s=%s p99=%s kib/session=%s kib/stream=%s" % tuple(r.get(k) for k in ("ok","errors","per_s","per_cpu_s","p99_ms","kib_per_session","kib_per_stream")))' "$(tail -1 "$RESULTS")")" >&2
}

CALLS=(--scenario calls --sessions $SESS --concurrency $WORKERS --duration $DUR)
SSE=(--tool countdown --arguments '{"steps":1,"interval_ms":0}' --progress)
SESSIONS=(--scenario sessions --sessions 4 --concurrency 8 --duration $DUR)
IDLE=(--scenario idle --sessions $IDLE_N --settle 2)
RESUME=(--scenario resume --sessions 8 --concurrency 8 --duration $DUR)
MIXED=(--scenario mixed --sessions 8 --concurrency 8 --duration $DUR)

# run_one SERVER KEY RUN ARGS...: a fresh server for each run.
run_one() {
  local server=$1 key=$2 run=$3; shift 3
  [ "$server" = mcpd-redis ] && redis-cli -s "$WORK/redis.sock" flushall >/dev/null
  start "$server"
  local aux=()
  [ "$server" = mcpd-redis ] && aux=(--aux-pid $REDIS_PID)
  load "$key" "$server" "$run" --url "$SURL" --pid "$SPID" "${aux[@]}" "$@"
  stop
}

# The gateway hop: the same echo call through a front mcpd (core 0) to an
# upstream that serves it, declared as `up` in the front's config: another
# mcpd over Streamable HTTP, or `mcpd --stdio` as the front's child. The
# upstream runs on core 1 beside the load generator, as redis-server does, so
# the front has core 0 to itself and each process's CPU is its own
# (--aux-pid: the upstream's). The load goes to /mcp/up, the pass-through
# endpoint, so the tool keeps its name (`echo`, not `up__echo` as on /mcp).
# One upstream connection serves all sessions (share = "shared", the default).
cat >"$WORK/gateway-stdio.toml" <<EOF
[[upstream]]
id = "up"
command = "taskset"   # execs mcpd: the front's child is the upstream itself
args = ["-c", "1", "$(readlink -f "$MCPD")", "--stdio"]
EOF
# up_ready FRONT_ERR: the front starts listening before the upstream's
# handshake is done and logs this when it is, so no call of the warm-up fails.
up_ready() {
  for _ in $(seq 100); do grep -q 'upstream connected upstream="up"' "$1" && return; sleep 0.1; done
  echo "bench: the gateway's upstream did not connect: $(tail -3 "$1")" >&2; exit 1
}
gateway_hop() {
  local run=$1 upid
  # The native row is mcpd's calls-echo, measured with the other servers
  # when everything runs.
  [ -z "$ONLY" ] || run_one mcpd calls-echo "$run" "${CALLS[@]}"
  start mcpd-upstream upstream
  upid=$SPID
  printf '[[upstream]]\nid = "up"\nurl = "%s"\n' "$SURL" >"$WORK/gateway-http.toml"
  start gateway-http
  up_ready "$WORK/gateway-http.err"
  load gateway-echo gateway-http "$run" --url "$SURL/up" --pid "$SPID" --aux-pid "$upid" "${CALLS[@]}"
  stop
  kill "$upid" 2>/dev/null || true; wait "$upid" 2>/dev/null || true
  start gateway-stdio
  up_ready "$WORK/gateway-stdio.err"
  upid=$(pgrep -P "$SPID" | head -1)
  [ -n "$upid" ] || { echo "bench: no stdio upstream under the gateway" >&2; exit 1; }
  load gateway-echo gateway-stdio "$run" --url "$SURL/up" --pid "$SPID" --aux-pid "$upid" "${CALLS[@]}"
  stop   # mcpd stops its child's process group on the way out
}

for run in $(seq "$RUNS"); do
  gateway_hop "$run"
  [ -z "$ONLY" ] || continue
  for server in mcpd mcpd-redis rmcp tower-mcp ts-sdk actix-bare; do
    run_one $server calls-echo "$run" "${CALLS[@]}"
    case $server in mcpd*) run_one $server calls-sse "$run" "${CALLS[@]}" "${SSE[@]}" ;; esac
    run_one $server sessions "$run" "${SESSIONS[@]}"
    run_one $server idle "$run" "${IDLE[@]}"
    case $server in mcpd*)
      run_one $server resume "$run" "${RESUME[@]}"
      run_one $server mixed "$run" "${MIXED[@]}" ;;
    esac
  done
  # Three replicas on one Redis, every request to the next one in turn.
  args=()
  redis-cli -s "$WORK/redis.sock" flushall >/dev/null
  for n in a b c; do start mcpd-redis "replica-$n"; args+=(--url "$SURL" --pid "$SPID"); done
  load calls-echo "3 replicas" "$run" "${args[@]}" --aux-pid $REDIS_PID "${CALLS[@]}"
  load calls-sse "3 replicas" "$run" "${args[@]}" --aux-pid $REDIS_PID "${CALLS[@]}" "${SSE[@]}"
  for p in "${PIDS[@]: -3}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
done

MCPD_SOFT_FD_DEFAULT=n/a; MCPD_SOFT_FD_AFTER=n/a
if [ -z "$ONLY" ]; then
  # 10,000 SSE streams: with the fd limit this shell gives mcpd, then with mcpd
  # started with a soft limit of 1,024 (it must raise it itself).
  MANY=(--scenario idle --sessions $MANY_STREAMS --settle 3 --setup-concurrency 64 --setup-timeout 90)
  start mcpd
  MCPD_SOFT_FD_DEFAULT=$(awk '/Max open files/ {print $4}' /proc/$SPID/limits)
  load streams-10k mcpd 1 --url "$SURL" --pid "$SPID" "${MANY[@]}"
  stop
  start mcpd-lowfd
  sleep 0.5
  MCPD_SOFT_FD_AFTER=$(awk '/Max open files/ {print $4}' /proc/$SPID/limits 2>/dev/null || echo "?")
  load streams-10k-lowfd mcpd 1 --url "$SURL" --pid "$SPID" "${MANY[@]}"
  stop

  # Soak: mixed traffic with session churn, cancellations and resumptions.
  start mcpd
  load soak mcpd 1 --url "$SURL" --pid "$SPID" --scenario soak --sessions 8 --concurrency 8 \
    --duration "$SOAK" --settle 10 --sample-every $(( SOAK >= 300 ? 30 : 10 ))
  stop
fi

T1=$(date +%s)
{
  echo "date=$(date -u +%Y-%m-%d)"
  echo "seconds=$((T1 - T0))"
  echo "runs=$RUNS"; echo "duration=$DUR"; echo "soak=$SOAK"; echo "quick=$QUICK"; echo "only=$ONLY"
  echo "cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
  echo "nproc=$(nproc)"
  echo "mem=$(free -g | awk '/^Mem:/ {print $2}') GiB"
  echo "kernel=$(uname -r)"
  echo "rustc=$(rustc --version)"
  echo "mcpd=$($MCPD --version 2>/dev/null | head -1 || echo mcpd) ($MCPD_REV)"
  echo "node=$(node --version)"
  echo "redis=$(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p')"
  echo "rmcp=$(sed -n 's/^rmcp = { version = "=\([^"]*\)".*/\1/p' loadtest/peers/rmcp-echo/Cargo.toml)"
  echo "tower_mcp=$(sed -n 's/^tower-mcp = { version = "=\([^"]*\)".*/\1/p' loadtest/peers/tower-mcp-echo/Cargo.toml)"
  echo "ts_sdk=$(sed -n 's/.*"@modelcontextprotocol\/sdk": "\([^"]*\)".*/\1/p' loadtest/peers/ts-sdk/package.json)"
  echo "actix=$(sed -n 's/^actix-web = { version = "=\([^"]*\)".*/\1/p' loadtest/peers/actix-bare/Cargo.toml)"
  echo "load_avg=$LOAD_START at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "mcpd_soft_fd_default=$MCPD_SOFT_FD_DEFAULT"
  echo "mcpd_soft_fd_start=1024"
  echo "mcpd_soft_fd_running=$MCPD_SOFT_FD_AFTER"
} >"$WORK/meta.txt"
python3 loadtest/bench-report.py "$WORK" "$OUT"
# The raw results kept beside the page are those of a whole bench.
[ -n "$ONLY" ] || { mkdir -p loadtest/results && cp "$RESULTS" loadtest/results/bench.jsonl && cp "$WORK/meta.txt" loadtest/results/meta.txt; }
echo "bench: wrote $OUT (raw results in $WORK)" >&2
