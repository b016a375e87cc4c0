#!/usr/bin/env bash
# Issue 4: messages/s into one 20-member conversation with unread counts kept, against the
# same pushes with the effects switched off; and how soon a member's long poll sees a message.
set -euo pipefail
cd "$(dirname "$0")/.."
superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
export TIDEWAY_BENCH_ADMIN_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=$superuser"
exec /usr/bin/python3 Bench/chat_bench.py
