#!/usr/bin/env bash
# Issue 9: 10,000 concurrent change-event subscribers held by nginx (nchan), memory of
# nginx and the workers, commit-to-event latency (when the subscriber read the event and
# when it reached its socket, with the server's and the subscribers' CPU), and a fan-out to
# 1,000 subscribers. EVENTS_LATENCY_ONLY=1 stops after the latency.
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n "$(ulimit -Hn)"  # as many streams as this machine allows
superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
export TIDEWAY_BENCH_ADMIN_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=$superuser"
exec /usr/bin/python3 Bench/events_bench.py
