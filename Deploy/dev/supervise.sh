#!/usr/bin/env bash
# Keep one process running for the dev stack: restart it 0.2 s after it
# dies; on SIGTERM (or SIGINT) pass TERM on to it, wait for it, and exit.
#
#   supervise.sh <child pid file> <log file> <command> [args...]
#
# The child inherits the environment. Its pid goes to the pid file so that
# tests can kill it and watch the restart.
set -euo pipefail

pidfile=$1 log=$2
shift 2
stop_grace=10 # seconds the child gets to finish after TERM, then KILL

child='' stopping=''
note() { printf '%s supervise: %s\n' "$(date '+%F %T')" "$*" >>"$log"; }
on_stop() {
    stopping=1
    [[ -z $child ]] || kill -TERM "$child" 2>/dev/null || true
}
trap on_stop TERM INT

while [[ -z $stopping ]]; do
    "$@" >>"$log" 2>&1 &
    child=$!
    echo "$child" >"$pidfile"
    note "started pid $child: $*"
    # A trapped signal interrupts wait; the loop below then waits for real.
    status=0
    wait "$child" || status=$?
    [[ -z $stopping ]] || break
    note "pid $child exited with status $status; restarting in 0.2 s"
    sleep 0.2
done

if kill -0 "$child" 2>/dev/null; then
    # A worker that ignores TERM must not keep `stack.sh down` waiting forever.
    (sleep "$stop_grace" && kill -KILL "$child" 2>/dev/null) &
    killer=$!
    while kill -0 "$child" 2>/dev/null; do wait "$child" || true; done
    kill "$killer" 2>/dev/null || true
fi
note "stopped"
rm -f "$pidfile"
