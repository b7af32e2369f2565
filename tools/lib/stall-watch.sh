# Sourced by tools/test: turns a test run that hangs into a failure that says where, long before
# CI's own time limit ends the job with nothing to go on.
#
#   run_watched SECONDS COMMAND...   runs COMMAND with its output (stdout and stderr) shown and
#                                    watched; when it prints nothing for SECONDS while a test
#                                    process runs, prints every thread of that process and of its
#                                    children (with gdb, when the machine has it), kills the test
#                                    process, and the run fails. Returns COMMAND's status.

_stall_report() {
    local pid=$1
    echo "--- threads of process $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
    if command -v gdb >/dev/null 2>&1; then
        gdb -p "$pid" -batch -ex "set pagination off" -ex "thread apply all bt 30" 2>&1 | grep -E '^(Thread |#)' | cut -c1-300
    else
        local task
        for task in /proc/"$pid"/task/*; do
            echo "$(cat "$task/comm" 2>/dev/null) waits in $(cat "$task/wchan" 2>/dev/null)"
        done
    fi
}

_stall_watch() {
    local output=$1 limit=$2 parent=$3
    while sleep 10; do
        kill -0 "$parent" 2>/dev/null || return 0
        local age=$(( $(date +%s) - $(stat -c %Y "$output") ))
        [ "$age" -lt "$limit" ] && continue
        local pid
        pid=$(pgrep -P "$parent" -f 'PackageTests.xctest' | head -1)
        [ -n "$pid" ] || continue
        {
            echo
            echo "tools/test: the tests printed nothing for $age s (the limit is $limit s): process $pid hangs."
            _stall_report "$pid"
            local child
            for child in $(pgrep -P "$pid"); do _stall_report "$child"; done
            echo "tools/test: killing process $pid; the run fails."
        } >&2
        kill -9 "$pid"
        return 0
    done
}

run_watched() {
    local limit=$1
    shift
    local output
    output=$(mktemp /tmp/workflow-test-output.XXXXXX)
    "$@" > >(tee "$output") 2>&1 &
    local command=$!
    _stall_watch "$output" "$limit" "$command" &
    local watcher=$!
    local status=0
    wait "$command" || status=$?
    kill "$watcher" 2>/dev/null || true
    wait "$watcher" 2>/dev/null || true
    rm -f "$output"
    return "$status"
}
