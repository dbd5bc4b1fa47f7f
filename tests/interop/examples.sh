#!/usr/bin/env bash
# The tool-author examples (crates/mcpd/examples: minimal, weather, confirm,
# counter, report, station)
# built, each started on its own port, and called by the official Python
# SDK client (tests/interop/examples.py) in both eras: 2026-07-28
# (mode="auto") and the 2025 session era (mode="legacy").
#
#   tests/interop/examples.sh        (after tests/interop/run.sh --install-only)
#
# Prints one PASS/FAIL line per check, then "examples: N passed, M failed".
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache}"
PY="$CACHE/venv/bin/python"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
LOG=$(mktemp -d /tmp/mcpd-examples.XXXXXX)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$LOG"' EXIT
passed=0; failed=0
fail() { echo "FAIL examples:$1: $2"; failed=$((failed + 1)); }

(cd "$ROOT" && cargo build -q -p mcpd --examples) || { fail build "cargo build -p mcpd --examples failed"; echo "examples: $passed passed, $failed failed"; exit 1; }
for ex in minimal weather confirm counter report station; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  "$TARGET/debug/examples/$ex" --listen "127.0.0.1:$port" >"$LOG/$ex.out" 2>"$LOG/$ex.err" &
  PID=$!
  url=""
  for _ in $(seq 100); do url=$(sed -n 's/^mcpd listening on //p' "$LOG/$ex.out"); [ -n "$url" ] && break; sleep 0.1; done
  if [ -z "$url" ]; then fail "$ex:start" "$(tail -3 "$LOG/$ex.err")"; kill "$PID" 2>/dev/null; PID=""; continue; fi
  for mode in modern legacy; do
    out=$(cd "$HERE" && timeout 60 "$PY" examples.py "$url" "$ex" "$mode" 2>"$LOG/$ex-$mode.err")
    echo "$out"
    p=$(echo "$out" | grep -c '^PASS'); f=$(echo "$out" | grep -c '^FAIL')
    [ "$p" -gt 0 ] || { f=$((f + 1)); echo "FAIL examples:$ex:$mode: no check ran ($(tail -2 "$LOG/$ex-$mode.err" | tr '\n' ' '))"; }
    passed=$((passed + p)); failed=$((failed + f))
  done
  kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; PID=""
done

# The examples are built on mcpd without its optional features: a setting
# that needs one is refused at start, naming the feature, not ignored.
printf '[[upstream]]\nid = "up"\nurl = "http://127.0.0.1:1/mcp"\n' >"$LOG/upstream.toml"
refused() {  # name, feature, then the environment and arguments to start with
  local name=$1 feature=$2; shift 2
  local err rc
  err=$(env "$@" 2>&1 >/dev/null); rc=$?
  if [ "$rc" -ne 0 ] && echo "$err" | grep -q "built without mcpd's \`$feature\` feature"; then
    echo "PASS examples:minimal:refuses_$name (exit $rc: $(echo "$err" | head -1 | cut -c1-120))"; passed=$((passed + 1))
  else
    fail "minimal:refuses_$name" "exit $rc: $(echo "$err" | head -2)"
  fi
}
MIN="$TARGET/debug/examples/minimal"
refused redis redis MCPD_STORE_BACKEND=redis MCPD_STORE_REDIS_URL=redis://127.0.0.1:6379 "$MIN" --listen 127.0.0.1:0
refused auth auth MCPD_AUTH_ENABLED=true "$MIN" --listen 127.0.0.1:0
refused tls tls MCPD_TLS_CERT_FILE=/nonexistent.pem MCPD_TLS_KEY_FILE=/nonexistent.key "$MIN" --listen 127.0.0.1:0
refused upstream gateway MCPD_UNUSED=1 "$MIN" --config "$LOG/upstream.toml" --listen 127.0.0.1:0
refused skills skills MCPD_SKILLS_DIR="$LOG" "$MIN" --listen 127.0.0.1:0

echo "examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
