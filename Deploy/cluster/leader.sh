#!/usr/bin/env bash
# Run a command only while this process holds a PostgreSQL advisory lock: one leader
# among the nodes of a cluster (`tideway events`, the change-event publisher).
#
#   leader.sh <conninfo> <lock name> -- <command> [args...]
#
# <conninfo> in key=value form (host=... dbname=...): the TCP keepalive settings are appended.
# Waits for the session-level lock pg_advisory_lock(hashtext(<lock name>)), then runs
# the command. The lock lives as long as the psql session holding it: when this node
# dies (kill -9, power, network), PostgreSQL ends the session (at once for a closed
# socket, after the TCP keepalives below for a silent peer) and another node's leader.sh,
# waiting in pg_advisory_lock, takes over. This side checks its session every second;
# when the session is gone or does not answer within 10 s, it stops the command and
# exits, so the supervisor starts it over: waiting for the lock again.
# On TERM: the command gets TERM, then the lock is released.
set -euo pipefail

conninfo=$1 name=$2
[[ ${3:-} == -- ]] || { echo "usage: leader.sh <conninfo> <lock name> -- <command...>" >&2; exit 2; }
shift 3

note() { printf '%s leader.sh[%s]: %s\n' "$(date '+%F %T')" "$name" "$*" >&2; }

# Keepalives both ways: this side notices a silent server, and the server a silent node
# (the session settings, so that no server-wide setting is needed).
coproc LOCK { exec psql -X -q -A -t -v ON_ERROR_STOP=1 \
    "$conninfo keepalives=1 keepalives_idle=3 keepalives_interval=1 keepalives_count=3" 2>&1; }
lock_pid=$LOCK_PID
child=''
stop() {
    [[ -z $child ]] || { kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null || true; }
    kill "$lock_pid" 2>/dev/null || true
    exit "${1:-0}"
}
trap 'stop 0' TERM INT

ask() { # ask <sql> <expected reply> <timeout s>: false when the session does not answer so
    local reply
    printf '%s\n' "$1" >&"${LOCK[1]}" 2>/dev/null || return 1
    while IFS= read -r -t "$3" reply <&"${LOCK[0]}"; do
        [[ $reply != "$2" ]] || return 0
    done
    return 1
}

ask "set tcp_keepalives_idle = 3; set tcp_keepalives_interval = 1; set tcp_keepalives_count = 3; select 'ready';" ready 15 ||
    { note "cannot reach PostgreSQL"; sleep 2; stop 1; }
note "waiting for the lock"
# Waits as long as another node leads (read -t 86400: a day, then the supervisor retries).
ask "select pg_advisory_lock(hashtext('$name')); select 'locked';" locked 86400 ||
    { note "lost the session while waiting"; stop 1; }
note "holding the lock: starting $*"

"$@" &
child=$!
while sleep 1; do
    if ! kill -0 "$child" 2>/dev/null; then
        status=0
        wait "$child" || status=$?
        child=''
        note "the command exited with status $status; releasing the lock"
        stop "$status"
    fi
    if ! ask "select 'alive';" alive 10; then
        note "lost the session holding the lock: stopping the command"
        stop 1
    fi
done
