#!/usr/bin/env bash
# Runs every test mcpd has: formatting and lints, unit and integration tests
# (cargo), the official MCP conformance suite, interop with the official
# TypeScript and Python SDK clients (also through OAuth with a real
# authorization server). Installs what is missing (Debian
# packages, pinned npm/PyPI packages) on first use.
#
# Usage: scripts/test.sh            (from anywhere)
# Env:   MCPD_SKIP_LINT=1  skip cargo fmt --check, the module-cycle check and clippy
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN_DIR=${CARGO_TARGET_DIR:-$ROOT/target}/debug
export MCPD_BIN="$BIN_DIR/mcpd"
LOGDIR=$(mktemp -d /tmp/mcpd-test.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; }
trap cleanup EXIT

say() { printf '[test] %s\n' "$*" >&2; }
PASSED=0; FAILED=0
count() { PASSED=$((PASSED + $1)); FAILED=$((FAILED + $2)); }

apt_install() {  # apt_install PKG... : install Debian packages if apt-get is there
  command -v apt-get >/dev/null || { say "cannot install $* (no apt-get): install them by hand"; return 1; }
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  say "installing $* (apt-get)"
  $sudo apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# --- prerequisites -----------------------------------------------------------
command -v cargo >/dev/null || { echo "cargo not found: install Rust (rustup) first"; exit 1; }
command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm
command -v python3 >/dev/null || apt_install python3
python3 -c 'import venv, ensurepip' 2>/dev/null || apt_install python3-venv
command -v curl >/dev/null || apt_install curl
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || apt_install redis-server redis-tools
command -v promtool >/dev/null || apt_install prometheus
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || apt_install nginx  # mcpd doctor's tests put it in front of mcpd
command -v chromium >/dev/null || apt_install chromium

# --- lints -------------------------------------------------------------------
if [ "${MCPD_SKIP_LINT:-0}" != 1 ]; then
  say "cargo fmt --check"
  if cargo fmt --all -- --check >"$LOGDIR/fmt.log" 2>&1; then count 1 0; echo "PASS fmt"; else count 0 1; echo "FAIL fmt: run cargo fmt --all"; cat "$LOGDIR/fmt.log" | head -20; fi
  say "module cycles (scripts/check-module-cycles.py)"
  if python3 "$ROOT/scripts/check-module-cycles.py" >"$LOGDIR/cycles.log" 2>&1; then count 1 0; echo "PASS module cycles"; else count 0 1; echo "FAIL module cycles (every edge's line in $LOGDIR/cycles.log)"; grep -E '^(cycle |module cycles)' "$LOGDIR/cycles.log" | head -40; fi
  if python3 "$ROOT/scripts/check-module-cycles.py" --sizes >"$LOGDIR/sizes.log" 2>&1; then count 1 0; echo "PASS file sizes ($(tail -1 "$LOGDIR/sizes.log"))"; else count 0 1; echo "FAIL file sizes: no source file over 500 lines, median at most 160"; cat "$LOGDIR/sizes.log" | head -20; fi
  say "cargo clippy"
  if cargo clippy --workspace --all-targets -- -D warnings >"$LOGDIR/clippy.log" 2>&1; then count 1 0; echo "PASS clippy"; else count 0 1; echo "FAIL clippy"; grep -E '^(error|warning)' -A5 "$LOGDIR/clippy.log" | head -40; fi
fi

# --- pinned SDK clients (the cargo tests use the Python one too) ---------------
say "installing the pinned SDK clients (once per cache)"
bash "$ROOT/tests/interop/run.sh" --install-only || { echo "FAIL interop install"; count 0 1; }

# --- cargo tests -------------------------------------------------------------
say "cargo test --workspace"
cargo test --workspace --no-fail-fast 2>&1 | tee "$LOGDIR/cargo-test.log"
cargo_rc=${PIPESTATUS[0]}
read -r p f < <(awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed;/) p += $i; if ($(i+1) ~ /^failed;/) f += $i } } END { print p+0, f+0 }' "$LOGDIR/cargo-test.log")
[ -n "$p" ] || p=0; [ -n "$f" ] || f=0
if [ "$cargo_rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # a build failure counts
count "$p" "$f"
echo "cargo: $p passed, $f failed"

# --- a real server for the black-box suites ------------------------------------
cargo build -q -p mcpd-server --bin mcpd --features conformance || { echo "FAIL build of the mcpd binary"; count 0 1; }
start_mcpd() {  # start_mcpd NAME ARGS... ; sets URL
  local name=$1; shift
  "$BIN_DIR/mcpd" --listen 127.0.0.1:0 "$@" >"$LOGDIR/$name.out" 2>"$LOGDIR/$name.err" &
  PIDS+=($!)
  URL=""
  for _ in $(seq 1 100); do
    URL=$(sed -n 's/^mcpd listening on //p' "$LOGDIR/$name.out")
    [ -n "$URL" ] && return 0
    sleep 0.1
  done
  echo "FAIL $name: mcpd did not start (see $LOGDIR/$name.err)"; return 1
}

# --- official conformance suite (strict: warnings fail) ----------------------------
# Line 0.1 (32 session-era scenarios), then line 0.2 at 2025-11-25 and
# 2026-07-28 (both eras), then line 0.2's Tasks-extension scenarios, all
# against one mcpd process; both lines are pinned in
# tests/conformance (see its NOTES.md).
run_conformance() {  # run_conformance LABEL ENV...
  local label=$1; shift
  say "conformance $label against $URL"
  env CONFORMANCE_STRICT=1 "$@" bash "$ROOT/tests/conformance/run.sh" "$URL" "$LOGDIR/conformance-$label" \
    2>"$LOGDIR/conformance-$label.err" | sed "s/^/[$label] /" | tee "$LOGDIR/conformance-$label.log"
  local line cp cf
  line=$(grep -E 'conformance: [0-9]+ passed, [0-9]+ failed' "$LOGDIR/conformance-$label.log" | tail -1)
  cp=$(echo "$line" | sed -E 's/.*conformance: ([0-9]+) passed.*/\1/'); cf=$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')
  [ -n "$line" ] || { cp=0; cf=1; }
  count "$cp" "$cf"
}
if start_mcpd conformance-server --toolset conformance; then
  run_conformance line-0.1
  run_conformance line-0.2 CONFORMANCE_LINE=0.2 CONFORMANCE_SPEC_VERSION="2025-11-25 2026-07-28"
  # The Tasks extension's scenarios (extensions are never picked by a
  # revision; cargo test runs the same nine through nginx over 3 replicas).
  run_conformance tasks CONFORMANCE_LINE=0.2 CONFORMANCE_SCENARIOS="tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-required-task-error tasks-mrtr-composition"
  # The Skills extension's scenarios (SEP-2640; the suite still lists them
  # as pending), against the conformance toolset's two skills.
  run_conformance skills CONFORMANCE_LINE=0.2 CONFORMANCE_SCENARIOS="sep-2640-skills-directory sep-2640-skills-enumeration sep-2640-skills-manifest"
else count 0 1; fi

summarise() {  # summarise LABEL LOG : count "LABEL: N passed, M failed"
  local line p f
  line=$(grep -E "^$1: [0-9]+ passed, [0-9]+ failed" "$2" | tail -1)
  p=$(echo "$line" | sed -E "s/$1: ([0-9]+) passed.*/\1/"); f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed.*/\1/')
  [ -n "$line" ] || { p=0; f=1; echo "FAIL $1: no summary line (see $2)"; }
  count "$p" "$f"
}

# --- the same suite through mcpd as a gateway (pass-through to a fixture upstream) ---
# 2025-11-25 to a stdio upstream, 2026-07-28 to an HTTP one spoken to in
# 2026-07-28; each excludes its known gaps (tests/conformance/NOTES.md).
say "conformance through the gateway (an upstream of each era behind /mcp/fx)"
bash "$ROOT/tests/conformance/gateway.sh" "$BIN_DIR/mcpd" "$LOGDIR/conformance-gateway" \
  2>"$LOGDIR/conformance-gateway.err" | tee "$LOGDIR/conformance-gateway.log"
for label in gateway-session gateway-stateless gateway-tasks gateway-aggregated-session gateway-aggregated-stateless; do
  summarise "\[$label\] conformance" "$LOGDIR/conformance-gateway.log"
done

# --- the suite's client scenarios against mcpd's upstream client ---------------------
# Each scenario's test server behind mcpd (/mcp/fx), called through by
# tests/conformance/client-driver.mjs (tests/conformance/NOTES.md).
say "conformance client scenarios through the gateway (mcpd's upstream client)"
bash "$ROOT/tests/conformance/gateway-client.sh" "$BIN_DIR/mcpd" "$LOGDIR/conformance-client" \
  2>"$LOGDIR/conformance-client.err" | sed "s/^/[gateway-client] /" | tee "$LOGDIR/conformance-client.log"
summarise '\[gateway-client\] conformance' "$LOGDIR/conformance-client.log"

# --- interop with the official SDK clients -------------------------------------------
if start_mcpd interop-server --toolset demo; then
  say "SDK interop against $URL"
  bash "$ROOT/tests/interop/run.sh" "$URL" 2>"$LOGDIR/interop.err" | tee "$LOGDIR/interop.log"
  line=$(grep -E '^interop: [0-9]+ passed, [0-9]+ failed' "$LOGDIR/interop.log" | tail -1)
  ip=$(echo "$line" | sed -E 's/interop: ([0-9]+) passed.*/\1/'); if_=$(echo "$line" | sed -E 's/.* ([0-9]+) failed/\1/')
  [ -n "$line" ] || { ip=0; if_=1; tail -20 "$LOGDIR/interop.err"; }
  count "$ip" "$if_"
else count 0 1; fi

# --- a real browser: CORS from an allowed and a foreign origin ----------------
say "browser (headless Chromium) against its own mcpd"
NODE_DIR="${MCPD_INTEROP_CACHE:-/tmp/mcpd-interop-cache}/node"
cp "$ROOT/tests/interop/browser.mjs" "$NODE_DIR/" 2>/dev/null
(cd "$NODE_DIR" && MCPD_BIN="$MCPD_BIN" timeout 120 node browser.mjs) 2>"$LOGDIR/browser.err" | tee "$LOGDIR/browser.log"
summarise browser "$LOGDIR/browser.log"

# --- the tool-author examples, called by the Python SDK client in both eras -----
say "tool-author examples (crates/mcpd/examples) with the Python SDK, both eras"
timeout 600 bash "$ROOT/tests/interop/examples.sh" 2>"$LOGDIR/examples.err" | tee "$LOGDIR/examples.log"
summarise examples "$LOGDIR/examples.log"

# --- the gateway: SDK client -> mcpd -> server-everything (stdio) + PyPI mcp (HTTP) ---
say "gateway interop (upstream MCP servers behind mcpd)"
MCPD_BIN="$MCPD_BIN" timeout 300 bash "$ROOT/tests/interop/gateway.sh" 2>"$LOGDIR/gateway.err" | tee "$LOGDIR/gateway.log"
summarise gateway "$LOGDIR/gateway.log"

# --- OAuth with a real authorization server (npm oidc-provider) and the SDK clients ---
say "OAuth flows against oidc-provider (JWT, opaque + introspection, DPoP)"
MCPD_BIN="$MCPD_BIN" timeout 900 bash "$ROOT/tests/authserver/run.sh" 2>"$LOGDIR/oauth.err" | tee "$LOGDIR/oauth.log"
summarise oauth "$LOGDIR/oauth.log"

# --- deploy assets: Helm chart (lint, render, validate), rules, dashboard ----------
say "deploy checks (helm chart, manifests, alert rules)"
MCPD_BIN="$MCPD_BIN" bash "$ROOT/scripts/check-deploy.sh" 2>"$LOGDIR/deploy.err" | tee "$LOGDIR/deploy.log"
summarise deploy "$LOGDIR/deploy.log"

# --- chaos: 3 replicas, Redis and nginx under faults, invariants per call --------
say "chaos scenario (60 s of faults: SIGKILL, SIGTERM, Redis restart and pause)"
timeout 300 python3 "$ROOT/loadtest/chaos.py" --duration 60 --mcpd "$MCPD_BIN" --out "$LOGDIR/chaos" \
  2>"$LOGDIR/chaos.err" | tee "$LOGDIR/chaos.log"
if [ "${PIPESTATUS[0]}" -eq 0 ]; then count 1 0; echo "PASS chaos"; else
  count 0 1; echo "FAIL chaos (see $LOGDIR/chaos)"; tail -20 "$LOGDIR/chaos.err"; fi

say "logs in $LOGDIR"
echo "all: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ]
