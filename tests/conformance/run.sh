#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance,
# its server scenarios) against a running Streamable HTTP MCP server.
#
#   tests/conformance/run.sh URL [OUTDIR]
#     URL     the MCP endpoint, e.g. http://127.0.0.1:8080/mcp (the server must be up)
#     OUTDIR  where results go (default: a new /tmp/mcpd-conformance-out.XXXXXX):
#             summary.txt, warnings.txt, scenarios/LABEL/*/checks.json,
#             logs/LABEL.log (the suite's own output), logs/_install.log
#
# stdout: one line per scenario run, `PASS LABEL` or `FAIL LABEL: reason`, then
#         exactly `conformance: N passed, M failed`. Exit status 0 only when M is 0
#         (2 for a usage error). A failure before any scenario ran is still reported
#         that way: `FAIL setup: reason`, `conformance: 0 passed, 1 failed`.
# stderr: progress, and a `warn LABEL: ...` line for every WARNING check.
#
# The suite's two lines are pinned in this directory, each by a package.json and
# its package-lock.json (line-0.1/, line-0.2/; NOTES.md says what each covers).
# The suite needs Node >= 22: the system's node when it is that new, otherwise
# the Node pinned in node/. Each is installed with `npm ci` into
# ${MCPD_CONFORMANCE_CACHE:-/tmp/mcpd-conformance-cache}, again only when the
# hash of its package.json and package-lock.json changes.
#
# Environment (all optional):
#   CONFORMANCE_LINE=0.1|0.2        suite line (default 0.1)
#   CONFORMANCE_SPEC_VERSION=REVS   spec revisions, space- or comma-separated, or `all`:
#                                   only the scenarios that apply to them. Line 0.2 also
#                                   speaks that revision's wire (2026-07-28, alias `draft`,
#                                   is stateless) and, given several, runs each scenario once
#                                   per revision, labelled NAME@REVISION. Line 0.1 takes one.
#   CONFORMANCE_SUITE=all           which scenarios: all (default), active (all but the
#                                   suite's pending ones, line-*/pending.txt), pending;
#                                   0.2 also extensions (tasks-*, sep-2640-*, which a
#                                   revision never selects) and required (the frozen
#                                   requirement set of each revision in CONFORMANCE_SPEC_VERSION)
#   CONFORMANCE_SCENARIOS="a b"     exactly these scenarios instead of a suite
#   CONFORMANCE_EXCLUDE="a b"       not these (each named on stderr as `excluded NAME`):
#                                   a known gap of a setup, with its reason in NOTES.md
#   CONFORMANCE_STRICT=1            WARNING checks fail too (the test command sets it)
#   CONFORMANCE_SCENARIO_TIMEOUT=90 seconds per scenario (killed 5 s later)
#   CONFORMANCE_DEADLINE=1200       seconds for the whole run; scenarios not started by then fail
#   CONFORMANCE_WAIT=15             seconds to wait for URL to accept connections
#   CONFORMANCE_ALLOW_NON_LOOPBACK=1  allow a host other than 127.x, localhost, [::1]
#   MCPD_CONFORMANCE_CACHE=DIR      install cache (default /tmp/mcpd-conformance-cache)
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

log() { printf '[conformance] %s\n' "$*" >&2; }
die_early() { # die_early REASON: fail before any scenario ran, keeping the output contract
    printf 'FAIL setup: %s\n' "$1"
    printf 'conformance: 0 passed, 1 failed\n'
    exit 1
}

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0" >&2
    exit 2
fi
URL="$1"
OUTDIR="${2:-}"
LINE="${CONFORMANCE_LINE:-0.1}"
SUITE="${CONFORMANCE_SUITE:-all}"
STRICT="${CONFORMANCE_STRICT:-0}"
SCENARIO_TIMEOUT="${CONFORMANCE_SCENARIO_TIMEOUT:-90}"
DEADLINE="${CONFORMANCE_DEADLINE:-1200}"
WAIT="${CONFORMANCE_WAIT:-15}"
CACHE="${MCPD_CONFORMANCE_CACHE:-/tmp/mcpd-conformance-cache}"

# ---- the line: its pins, the suite's version, its pending list -------------------
# Line 0.1's CLI has neither --timeout nor a wire per revision (its --spec-version
# only filters); line 0.2 has both.
case "$LINE" in
    0.1) WIRE_PER_REVISION=0 ;;
    0.2) WIRE_PER_REVISION=1 ;;
    *) die_early "unknown CONFORMANCE_LINE '$LINE' (0.1 or 0.2)" ;;
esac
PINS="$HERE/line-$LINE"
SUITE_VERSION="$(sed -n 's|.*"@modelcontextprotocol/conformance": *"\([^"]*\)".*|\1|p' "$PINS/package.json")"
[ -n "$SUITE_VERSION" ] || die_early "no @modelcontextprotocol/conformance pin in $PINS/package.json"
PENDING="$(awk '!/^#/ && NF { print $1 }' "$PINS/pending.txt")"
is_pending() { printf '%s\n' "$PENDING" | grep -qx -- "$1"; }

# ---- the URL: http(s), loopback unless allowed ------------------------------------
case "$URL" in
    http://* | https://*) ;;
    *) die_early "URL must start with http:// or https:// (got '$URL')" ;;
esac
HOSTPORT="${URL#*://}"
HOSTPORT="${HOSTPORT%%/*}"
HOSTPORT="${HOSTPORT##*@}"
case "$HOSTPORT" in
    \[*) HOST="${HOSTPORT%%]*}]" ;;
    *) HOST="${HOSTPORT%%:*}" ;;
esac
case "$HOST" in
    127.* | localhost | "[::1]") ;;
    *) [ "${CONFORMANCE_ALLOW_NON_LOOPBACK:-0}" = 1 ] \
        || die_early "refusing non-loopback host '$HOST' (set CONFORMANCE_ALLOW_NON_LOOPBACK=1 to allow it)" ;;
esac

if [ -z "$OUTDIR" ]; then
    OUTDIR="$(mktemp -d /tmp/mcpd-conformance-out.XXXXXX)" || die_early "cannot create an output directory"
fi
mkdir -p "$OUTDIR/logs" "$OUTDIR/scenarios" || die_early "cannot create $OUTDIR"
OUTDIR="$(cd "$OUTDIR" && pwd)"
INSTALL_LOG="$OUTDIR/logs/_install.log"

# ---- install: npm ci of the pins into the cache, skipped when they are there ---------
# pinned_install PINS_DIR CACHE_DIR PROBE: CACHE_DIR holds `npm ci` of PINS_DIR's
# package.json + package-lock.json, stamped with their hash; PROBE (a path under
# CACHE_DIR) must exist afterwards.
pinned_install() {
    local pins="$1" dir="$2" probe="$3" want
    want="$(cat "$pins/package.json" "$pins/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [ -f "$dir/.installed" ] && [ "$(cat "$dir/.installed")" = "$want" ] && [ -e "$dir/$probe" ]; then
        return 0
    fi
    command -v npm >/dev/null 2>&1 || { log "npm not found (needed to install $pins)"; return 1; }
    log "installing ${pins#"$HERE"/} into $dir (npm ci)"
    rm -rf "$dir" && mkdir -p "$dir" || return 1
    cp "$pins/package.json" "$pins/package-lock.json" "$dir/" || return 1
    (cd "$dir" && timeout -k 10 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) \
        >>"$INSTALL_LOG" 2>&1 || return 1
    [ -e "$dir/$probe" ] || return 1
    echo "$want" >"$dir/.installed"
}
node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

mkdir -p "$CACHE" || die_early "cannot create the cache $CACHE"
SUITE_DIR="$CACHE/line-$LINE"
CLI_IN_SUITE=node_modules/@modelcontextprotocol/conformance/dist/index.js
CLI="$SUITE_DIR/$CLI_IN_SUITE"
if command -v flock >/dev/null 2>&1; then # one install at a time per cache
    exec 9>"$CACHE/.lock"
    flock -w 900 9 || die_early "timed out waiting for the install lock $CACHE/.lock"
fi
pinned_install "$PINS" "$SUITE_DIR" "$CLI_IN_SUITE" \
    || die_early "installing @modelcontextprotocol/conformance@$SUITE_VERSION failed (see $INSTALL_LOG)"
NODE="$(command -v node || true)"
if [ -z "$NODE" ] || [ "$(node_major "$NODE")" -lt 22 ]; then
    pinned_install "$HERE/node" "$CACHE/node" node_modules/.bin/node \
        || die_early "no Node >= 22 here, and installing the pinned one (tests/conformance/node) failed (see $INSTALL_LOG)"
    NODE="$CACHE/node/node_modules/.bin/node"
fi
exec 9>&- # releases the lock
# Node >= 22.1 keeps compiled code here: each scenario is its own process, and starts faster.
export NODE_COMPILE_CACHE="$CACHE/compile-cache"
log "suite $SUITE_VERSION (line $LINE), node $("$NODE" --version), url $URL, out $OUTDIR"

# ---- which scenarios, at which revisions ------------------------------------------
# `list --server` prints `  - NAME [REV,REV]` or `  - NAME [extension]`.
TAGGED="$(timeout 60 "$NODE" "$CLI" list --server 2>>"$INSTALL_LOG" | sed -n 's/^  - \([^ ]*\) \[\([^]]*\)\]$/\1 \2/p')"
[ -n "$TAGGED" ] || die_early "could not list the server scenarios (see $INSTALL_LOG)"
tags_of() { printf '%s\n' "$TAGGED" | awk -v n="$1" '$1 == n { print $2; exit }'; }
KNOWN_REVISIONS="$(printf '%s\n' "$TAGGED" | awk '{ print $2 }' | tr ',' '\n' | grep -vx extension | sort -u | tr '\n' ' ')"

REVISIONS=""
for r in $(printf '%s' "${CONFORMANCE_SPEC_VERSION:-}" | tr ',' ' '); do
    case "$r" in
        all) REVISIONS="$REVISIONS $KNOWN_REVISIONS"; continue ;;
        draft) r=2026-07-28 ;;
    esac
    case " $KNOWN_REVISIONS " in
        *" $r "*) REVISIONS="$REVISIONS $r" ;;
        *) die_early "unknown CONFORMANCE_SPEC_VERSION '$r' (suite $SUITE_VERSION knows: ${KNOWN_REVISIONS% }, all)" ;;
    esac
done
REVISIONS="$(printf '%s' "$REVISIONS" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | tr '\n' ' ')"
REVISIONS="${REVISIONS% }"
MULTI=0
if [ "$(wc -w <<<"$REVISIONS")" -gt 1 ]; then
    [ "$WIRE_PER_REVISION" = 1 ] || die_early "line $LINE takes one revision (its wire does not change with it), got '$REVISIONS'"
    MULTI=1
fi

is_extension() { case ",$(tags_of "$1")," in *,extension,*) return 0 ;; esac; return 1; }
# applies_at NAME REV: whether NAME runs at REV ("" = none asked for). Extension
# scenarios run at their own default wire, 2026-07-28.
applies_at() {
    [ -z "$2" ] && return 0
    case ",$(tags_of "$1")," in
        *",$2,"*) return 0 ;;
        *,extension,*) [ "$2" = 2026-07-28 ] ;;
        *) return 1 ;;
    esac
}
case "$SUITE" in
    all | active | pending) ;;
    extensions | required) [ "$WIRE_PER_REVISION" = 1 ] \
        || die_early "CONFORMANCE_SUITE=$SUITE needs line 0.2 (line $LINE has no extension scenarios or requirement sets)" ;;
    *) die_early "unknown CONFORMANCE_SUITE '$SUITE' (all, active, pending, extensions, required)" ;;
esac
if [ "$SUITE" = required ] && [ -z "$REVISIONS" ] && [ -z "${CONFORMANCE_SCENARIOS:-}" ]; then
    die_early "CONFORMANCE_SUITE=required needs CONFORMANCE_SPEC_VERSION (2025-11-25 or 2026-07-28)"
fi
# selected REV: the scenarios CONFORMANCE_SUITE picks at REV ("" = no revision), like
# the suite itself: a revision selects the scenarios tagged with it, never the
# extension ones (only CONFORMANCE_SUITE=extensions does).
selected() {
    local rev="$1" s tags
    if [ "$SUITE" = required ]; then
        timeout 60 "$NODE" "$CLI" list --server --requirements "$rev" 2>>"$INSTALL_LOG" \
            | awk '/^Server scenarios/ { on = 1; next } on && /^$/ { exit } on { sub(/^  - /, ""); print $1 }'
        return
    fi
    while read -r s tags; do
        if [ -n "$rev" ]; then
            case ",$tags," in
                *,extension,*) [ "$SUITE" = extensions ] || continue ;;
                *",$rev,"*) ;;
                *) continue ;;
            esac
        fi
        case "$SUITE" in
            all) echo "$s" ;;
            active) is_pending "$s" || echo "$s" ;;
            pending) is_pending "$s" && echo "$s" ;;
            extensions) is_extension "$s" && echo "$s" ;;
        esac
    done <<<"$TAGGED"
}

# RUNS: one `NAME|REV|KIND` per line, in output order; KIND is run, unknown (not in
# this suite) or na (named in CONFORMANCE_SCENARIOS, applies to none of the revisions).
RUNS=""
add_run() { case $'\n'"$RUNS" in *$'\n'"$1"$'\n'*) ;; *) RUNS="$RUNS$1"$'\n' ;; esac; }
for rev in ${REVISIONS:-""}; do
    if [ -n "${CONFORMANCE_SCENARIOS:-}" ]; then
        candidates="$CONFORMANCE_SCENARIOS"
    else
        candidates="$(selected "$rev")"
        [ "$SUITE" != required ] || [ -n "$candidates" ] \
            || die_early "suite $SUITE_VERSION has no requirement set for $rev (see $INSTALL_LOG)"
    fi
    for s in $candidates; do
        case " ${CONFORMANCE_EXCLUDE:-} " in
            *" $s "*) log "excluded $s${rev:+@$rev} (CONFORMANCE_EXCLUDE)"; continue ;;
        esac
        if [ -z "$(tags_of "$s")" ]; then
            add_run "$s||unknown"
        elif applies_at "$s" "$rev"; then
            add_run "$s|$rev|run"
        elif [ -n "${CONFORMANCE_SCENARIOS:-}" ]; then
            applicable=0
            for r in $REVISIONS; do applies_at "$s" "$r" && applicable=1; done
            [ "$applicable" = 1 ] || add_run "$s||na"
        fi
    done
done

# ---- wait for the server -----------------------------------------------------------
if [ "$WAIT" -gt 0 ] 2>/dev/null; then
    end=$(($(date +%s) + WAIT))
    up=0
    while [ "$(date +%s)" -lt "$end" ]; do
        # Any HTTP answer (even 4xx/405) or a GET that stays open (curl 28) means the port
        # is up; curl 7 is "connection refused".
        rc=0
        curl -s -o /dev/null --max-time 2 "$URL" || rc=$?
        [ "$rc" -ne 7 ] && { up=1; break; }
        sleep 0.5
    done
    [ "$up" = 1 ] || log "WARNING: $URL not reachable after ${WAIT}s; running anyway"
fi

# ---- run them, one process each ------------------------------------------------------
PASSED=0
FAILED=0
START=$(date +%s)
: >"$OUTDIR/summary.txt"
: >"$OUTDIR/warnings.txt"
emit() { # emit LINE: count it, print it, keep it
    case "$1" in PASS*) PASSED=$((PASSED + 1)) ;; *) FAILED=$((FAILED + 1)) ;; esac
    echo "$1"
    echo "$1" >>"$OUTDIR/summary.txt"
}
# The suite's own per-scenario limit (line 0.2, --timeout) sits 2 s under ours, so that it
# still writes checks.json, with a scenario-timeout FAILURE, before the hard kill.
SUITE_TIMEOUT_MS=$(((SCENARIO_TIMEOUT > 3 ? SCENARIO_TIMEOUT - 2 : 1) * 1000))

# run_one NAME REV: runs one scenario and prints its PASS/FAIL line.
run_one() {
    local s="$1" rev="$2" label="$1" dir log rc checks verdict first
    [ "$MULTI" = 1 ] && label="$s@$rev"
    if [ $(($(date +%s) - START)) -ge "$DEADLINE" ]; then
        echo "FAIL $label: not run, overall deadline of ${DEADLINE}s exceeded"
        return
    fi
    dir="$OUTDIR/scenarios/$label"
    log="$OUTDIR/logs/$label.log"
    rm -rf "$dir" && mkdir -p "$dir"
    local args=(server --url "$URL" --scenario "$s" -o "$dir")
    if [ "$WIRE_PER_REVISION" = 1 ]; then
        args+=(--timeout "$SUITE_TIMEOUT_MS")
        # Extension scenarios carry no revision of their own: they keep their default wire.
        is_extension "$s" || [ -z "$rev" ] || args+=(--spec-version "$rev")
    fi
    log "running $label"
    timeout -k 5 "$SCENARIO_TIMEOUT" "$NODE" "$CLI" "${args[@]}" >"$log" 2>&1
    rc=$?
    checks="$(find "$dir" -mindepth 2 -maxdepth 2 -name checks.json | head -n1)"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "FAIL $label: timed out after ${SCENARIO_TIMEOUT}s (log: $log)"
    elif [ -z "$checks" ] && grep -q '^SKIPPED: scenario' "$log"; then
        echo "FAIL $label: the suite skipped it: $(grep -m1 '^SKIPPED: scenario' "$log" | cut -c10-200)"
    elif [ -z "$checks" ]; then
        echo "FAIL $label: no checks.json (exit $rc; log: $log; last: $(tail -n 3 "$log" | tr '\n' ' ' | cut -c1-200))"
    else
        verdict="$("$NODE" "$HERE/verdict.mjs" "$checks" "$STRICT" 2>&1)"
        first="$(printf '%s\n' "$verdict" | head -n1)"
        printf '%s\n' "$verdict" | sed -n "s/^WARN\t/  warn $label: /p" | tee -a "$OUTDIR/warnings.txt" >&2
        case "$first" in
            PASS) if [ "$rc" -eq 0 ]; then echo "PASS $label"; else echo "FAIL $label: the suite exited $rc with no failing check (log: $log)"; fi ;;
            FAIL*) echo "FAIL $label: ${first#FAIL$'\t'}" ;;
            *) echo "FAIL $label: could not judge checks.json: $(printf '%s' "$first" | cut -c1-200)" ;;
        esac
    fi
}

while IFS='|' read -r s rev kind; do
    [ -n "$s" ] || continue
    case "$kind" in
        unknown) emit "FAIL $s: unknown scenario (not in 'list --server' of suite $SUITE_VERSION)" ;;
        na) emit "FAIL $s: not applicable at ${REVISIONS// /, } (applies to: $(tags_of "$s"))" ;;
        run) emit "$(run_one "$s" "$rev" </dev/null)" ;;
    esac
done <<<"$RUNS"

if [ $((PASSED + FAILED)) -eq 0 ]; then
    emit "FAIL setup: no scenarios selected (suite=$SUITE revisions=${REVISIONS:-any} scenarios=${CONFORMANCE_SCENARIOS:-})"
fi
log "results in $OUTDIR (summary.txt, warnings.txt, scenarios/*/*/checks.json, logs/)"
echo "conformance: $PASSED passed, $FAILED failed" | tee -a "$OUTDIR/summary.txt"
[ "$FAILED" -eq 0 ]
