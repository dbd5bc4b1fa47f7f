# Sourced by tests/interop/run.sh and tests/authserver/run.sh: counted PASS/FAIL/SKIP lines, and
# one test client run under a timeout. Set CLIENT_TIMEOUT (seconds) before calling run_client.

PASSED=0 FAILED=0 SKIPPED=0
record() { # record "<PASS|FAIL|SKIP line>"
    echo "$1"
    case "$1" in
        PASS\ *) PASSED=$((PASSED + 1)) ;;
        FAIL\ *) FAILED=$((FAILED + 1)) ;;
        SKIP\ *) SKIPPED=$((SKIPPED + 1)) ;;
    esac
}

# run_client <prefix> <log> <command...>: runs one client (its checks are named "<prefix>…"),
# relays its PASS/FAIL/SKIP lines, and adds "FAIL <prefix>client" when it timed out, or exited
# non-zero without a failed check to show for it.
run_client() {
    local prefix="$1" log="$2" rc line seen=0
    shift 2
    timeout --kill-after=10 "$CLIENT_TIMEOUT" "$@" >"$log" 2>"$log.stderr"
    rc=$?
    while IFS= read -r line; do
        case "$line" in
            PASS\ *|FAIL\ *|SKIP\ *) record "$line"; seen=$((seen + 1)) ;;
        esac
    done <"$log"
    local stderr
    stderr="stderr: $(tail -c 300 "$log.stderr" | tr '\n' ' ')"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        record "FAIL ${prefix}client: timed out after ${CLIENT_TIMEOUT} s (after $seen checks); $stderr"
    elif [ "$rc" -ne 0 ] && [ "$seen" -eq 0 ]; then
        record "FAIL ${prefix}client: exited with status $rc and reported no checks; $stderr"
    elif [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$log"; then
        record "FAIL ${prefix}client: exited with status $rc although no check failed; $stderr"
    fi
}
