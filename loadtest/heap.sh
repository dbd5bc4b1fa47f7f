#!/usr/bin/env bash
# What a held GET stream and an idle session allocate, by the layer that
# allocated it: valgrind's DHAT over mcpd built with the system allocator
# (`--features system-alloc`; DHAT sees only malloc), under mcpd-loadtest's
# `idle` scenario, once with sessions only and once with a GET stream held
# on each. The heap at its peak (every session and stream open) is split
# by the first frame of each allocation's stack that belongs to a named
# layer (mcpd's crates, actix, tokio, redis, ...); the difference between
# the two runs, divided by N, is what one stream holds.
#
# DHAT counts the bytes asked for: the allocator's rounding and the pages a
# buffer touches (what RSS counts) come on top; `bench.sh`'s idle scenario
# gives the RSS.
#
# Usage: [STORE=redis] loadtest/heap.sh [MCPD_SYSALLOC_BIN] [LOADTEST_BIN] [N]
# KEEP=1 keeps the DHAT files (their directory is printed).
# (defaults: target/release/mcpd built with --features system-alloc,
# target/release/mcpd-loadtest, 200). Loopback only; needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-target}
MCPD=${1:-$TARGET/release/mcpd}; LOADTEST=${2:-$TARGET/release/mcpd-loadtest}; N=${3:-200}
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install -y valgrind" >&2; exit 1; }
TMP=$(mktemp -d /tmp/mcpd-heap.XXXXXX)
PID=""; REDIS_PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$TMP"' EXIT
. loadtest/valgrind-lib.sh
open_store

run() {  # run NAME [LOADTEST FLAGS]: leaves $TMP/NAME.json
  local name=$1; shift
  under_valgrind "$TMP/$name.out" "$TMP/$name.err" --tool=dhat --dhat-out-file="$TMP/$name.json"
  "$LOADTEST" --url "$URL" --pid "$PID" --scenario idle --sessions "$N" --settle 2 \
    --setup-concurrency 16 "$@" >"$TMP/$name.load" 2>&1
  kill -TERM "$PID"; wait "$PID" 2>/dev/null || true; PID=""
}

[ -n "${KEEP:-}" ] && echo "DHAT files in $TMP" >&2
run sessions --no-streams
run streams
python3 - "$TMP/sessions.json" "$TMP/streams.json" "$N" <<'PY'
import collections, json, re, sys

# Frames that only carry an allocation through (containers, the runtime's
# plumbing): the layer is the first frame past them.
PASS = re.compile(r"^(<?(alloc|core|std|hashbrown|bytes|smallvec|slab|indexmap|"
                   r"foldhash|itoa|serde|serde_json|futures_util|futures_core|pin_project_lite|"
                   r"parking_lot|lock_api|once_cell)::|<?&|malloc|calloc|realloc|"
                   r"memalign|posix_memalign|aligned_alloc|__rust|_ZN|rust_)")

def layer(frame):
    fn = frame.split(": ", 1)[-1]
    fn = re.sub(r" \(.*\)$", "", fn)
    if PASS.match(fn):
        return None
    m = re.match(r"^<?([a-z0-9_]+)::([a-z0-9_]+)?", fn)
    if not m:
        return None
    crate, module = m.group(1), m.group(2) or ""
    return f"{crate}::{module}" if crate.startswith("mcpd") else crate

def at_peak(path):
    d = json.load(open(path))
    ftbl = d["ftbl"]
    out = collections.Counter()
    for pp in d["pps"]:
        where = "(unattributed)"
        for i in pp["fs"]:
            l = layer(ftbl[i])
            if l:
                where = l
                break
        out[where] += pp.get("gb", 0)
    return out

n = int(sys.argv[3])
a, b = at_peak(sys.argv[1]), at_peak(sys.argv[2])
total_a, total_b = sum(a.values()), sum(b.values())
print(f"heap at its peak: {total_a / 1024:,.0f} KiB with {n} sessions, "
      f"{total_b / 1024:,.0f} KiB with a GET stream on each")
print(f"per idle session: {total_a / n / 1024:.2f} KiB; per GET stream: {(total_b - total_a) / n / 1024:.2f} KiB (bytes asked for)")
print()
print("| layer | per session, bytes | per GET stream, bytes |")
print("| --- | ---: | ---: |")
rows = sorted(set(a) | set(b), key=lambda k: -(b[k] - a[k]))
for k in rows:
    s, g = a[k] / n, (b[k] - a[k]) / n
    if abs(s) >= 8 or abs(g) >= 8:
        print(f"| {k} | {s:,.0f} | {g:,.0f} |")
PY
