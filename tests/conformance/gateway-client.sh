#!/usr/bin/env bash
# The conformance suite's *client* scenarios against mcpd's upstream client: for each scenario
# the suite starts its test server and runs client-driver.mjs, which starts mcpd as a gateway in
# front of that server (/mcp/fx) and calls through it; the suite then checks what mcpd sent.
#
#   tests/conformance/gateway-client.sh MCPD_BIN [OUTDIR]
#
# stdout: `PASS NAME@REV` or `FAIL NAME@REV: reason` per run, then exactly
# `conformance: N passed, M failed`. WARNING checks fail (strict). Line 0.2, installed by run.sh
# into ${MCPD_CONFORMANCE_CACHE:-/tmp/mcpd-conformance-cache} (run.sh installs it when missing).
# The scenarios and why others are not run: tests/conformance/NOTES.md.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${1:?usage: gateway-client.sh MCPD_BIN [OUTDIR]}"
OUT="${2:-$(mktemp -d /tmp/mcpd-conformance-client.XXXXXX)}"
mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
CACHE="${MCPD_CONFORMANCE_CACHE:-/tmp/mcpd-conformance-cache}"
CLI="$CACHE/line-0.2/node_modules/@modelcontextprotocol/conformance/dist/index.js"

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
find_node() {
  NODE="$(command -v node || true)"
  if [ -z "$NODE" ] || [ "$(node_major "$NODE")" -lt 22 ]; then NODE="$CACHE/node/node_modules/.bin/node"; fi
}
find_node
if [ ! -f "$CLI" ] || [ ! -x "$NODE" ]; then
  # run.sh installs the pinned suite and Node; a run against nothing does just that.
  CONFORMANCE_LINE=0.2 CONFORMANCE_SCENARIOS=none bash "$HERE/run.sh" http://127.0.0.1:9/ "$OUT/install" \
    >/dev/null 2>&1 || true
  find_node
fi
if [ ! -f "$CLI" ] || [ ! -x "$NODE" ]; then
  echo "FAIL setup: the conformance suite (line 0.2) or Node >= 22 is not installed in $CACHE"
  echo "conformance: 0 passed, 1 failed"
  exit 1
fi
export NODE_COMPILE_CACHE="$CACHE/compile-cache"

# NAME@REVISION: each scenario at each revision it applies to (the suite's `list`).
RUNS=(
  initialize@2025-11-25
  tools_call@2025-11-25
  tools_call@2026-07-28
  sse-retry@2025-11-25
  request-metadata@2026-07-28
  sep-2322-client-request-state@2026-07-28
  http-standard-headers@2026-07-28
  http-custom-headers@2026-07-28
  json-schema-2020-12-preservation@2025-11-25
  json-schema-2020-12-preservation@2026-07-28
  elicitation-sep1034-client-defaults@2025-11-25
  auth/client-credentials-jwt@2025-11-25
  auth/client-credentials-basic@2025-11-25
)

passed=0
failed=0
export MCPD_BIN="$BIN" DRIVER_LOG_DIR="$OUT/logs"
for run in "${RUNS[@]}"; do
  name="${run%@*}" rev="${run#*@}"
  log="$OUT/logs/${name//\//_}@$rev.log"
  # The auth scenarios are an extension's (io.modelcontextprotocol/oauth-client-credentials): the
  # suite skips them at a named revision unless forced.
  force=()
  case "$name" in auth/*) force=(--force) ;; esac
  timeout -k 5 90 "$NODE" "$CLI" client --command "node $HERE/client-driver.mjs" \
    --scenario "$name" --spec-version "$rev" "${force[@]}" -o "$OUT/results" >"$log" 2>&1
  status=$?
  if [ "$status" = 0 ] && grep -q "OVERALL: PASSED" "$log"; then
    echo "PASS $run"
    passed=$((passed + 1))
  else
    why="$(grep -E '\] (FAILURE|WARNING)' "$log" | head -3 | sed 's/^[^[]*//' | tr '\n' ';')"
    [ -n "$why" ] || why="$(grep -E 'driver:|Error' "$log" | head -2 | tr '\n' ';')"
    echo "FAIL $run: exit $status ${why:-see $log}"
    failed=$((failed + 1))
  fi
done
echo "conformance: $passed passed, $failed failed"
[ "$failed" = 0 ]
