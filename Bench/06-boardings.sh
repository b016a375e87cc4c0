#!/usr/bin/env bash
# Issue 6: boardings list and report view p50/p95 through nginx with 100,000 reports, and
# the CSV export of all of them: time and the worker's peak memory. Prints a table; the
# numbers never fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
export TIDEWAY_BENCH_ADMIN_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=$superuser"
exec /usr/bin/python3 Bench/boardings_bench.py
