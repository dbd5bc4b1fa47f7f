# Sourced by loadtest/callgrind.sh and loadtest/heap.sh (after they set TMP,
# MCPD and the PID / REDIS_PID their exit trap kills): the store mcpd runs
# on, and mcpd started under valgrind.

# open_store: STORE=redis starts a redis-server of its own on a unix socket
# in $TMP (no persistence; REDIS_PID); sets STORE_ARGS either way.
open_store() {
  STORE_ARGS=(--store memory)
  if [ "${STORE:-memory}" = redis ]; then
    redis-server --port 0 --unixsocket "$TMP/redis.sock" --save "" --appendonly no >/dev/null 2>&1 &
    REDIS_PID=$!
    for _ in $(seq 50); do [ -S "$TMP/redis.sock" ] && break; sleep 0.1; done
    STORE_ARGS=(--store redis --redis-url "redis+unix://$TMP/redis.sock")
  fi
}

# under_valgrind OUT ERR VALGRIND-FLAGS...: mcpd (one worker, warn logs, the
# per-client session limits lifted: the load generator is one client) under
# valgrind, its stdout in OUT and stderr in ERR; sets PID, and URL once it
# listens.
under_valgrind() {
  local out=$1 err=$2; shift 2
  MCPD_RATE_LIMIT_SESSIONS_PER_MINUTE=0 MCPD_LIMITS_MAX_SESSIONS_PER_CLIENT=100000 \
  MCPD_SERVER_WORKERS=1 MCPD_LOG_LEVEL=warn valgrind "$@" \
    "$MCPD" --listen 127.0.0.1:0 "${STORE_ARGS[@]}" ${MCPD_ARGS[@]+"${MCPD_ARGS[@]}"} >"$out" 2>"$err" &
  PID=$!
  URL=""
  for _ in $(seq 600); do URL=$(sed -n 's/^mcpd listening on //p' "$out"); [ -n "$URL" ] && break; sleep 0.1; done
  [ -n "$URL" ] || { echo "mcpd did not start under valgrind: $(tail -5 "$err")" >&2; exit 1; }
}
