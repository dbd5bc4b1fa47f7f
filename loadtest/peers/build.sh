#!/usr/bin/env bash
# Build the peers mcpd is measured against in loadtest/bench.sh, each in its
# own directory under PEERS_DIR (default /tmp/mcpd-peers), never in the mcpd
# workspace:
#   rmcp-echo   the Rust SDK (rmcp 3.9.0, stateful LocalSessionManager, axum,
#               TCP_NODELAY, single-threaded tokio)     -> rmcp-echo/target/release/rmcp-echo
#   tower-mcp-echo  tower-mcp 0.25.0 (`http` feature, its defaults, TCP_NODELAY,
#               single-threaded tokio)                  -> tower-mcp-echo/target/release/tower-mcp-echo
#   ts-sdk      the TypeScript SDK (@modelcontextprotocol/sdk 1.32.2, stateful,
#               node:http)                              -> node ts-sdk/server.mjs
#   actix-bare  actix-web 4.18.1, one worker, parse JSON + fixed answer (the
#               HTTP ceiling)                           -> actix-bare/target/release/actix-bare
# Versions are pinned in the copied Cargo.toml / package.json files. Cargo
# runs under `nice -n 19`, one build at a time, with CARGO_TARGET_DIR inside
# each peer's directory. Idempotent: an up-to-date peer is not rebuilt.
#
# Usage: loadtest/peers/build.sh [PEERS_DIR]
set -euo pipefail
SRC=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-${PEERS_DIR:-/tmp/mcpd-peers}}
mkdir -p "$OUT"
for p in rmcp-echo tower-mcp-echo actix-bare; do
  mkdir -p "$OUT/$p/src"
  cp -u "$SRC/$p/Cargo.toml" "$OUT/$p/Cargo.toml"
  cp -u "$SRC/$p/src/main.rs" "$OUT/$p/src/main.rs"
  echo "peers: building $p in $OUT/$p" >&2
  (cd "$OUT/$p" && CARGO_TARGET_DIR="$OUT/$p/target" nice -n 19 cargo build --release -q)
done
mkdir -p "$OUT/ts-sdk"
cp -u "$SRC/ts-sdk/package.json" "$SRC/ts-sdk/server.mjs" "$OUT/ts-sdk/"
if [ ! -d "$OUT/ts-sdk/node_modules/@modelcontextprotocol/sdk" ]; then
  echo "peers: npm install in $OUT/ts-sdk" >&2
  (cd "$OUT/ts-sdk" && nice -n 19 npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi
echo "$OUT"
