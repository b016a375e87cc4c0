#!/usr/bin/env bash
# Issue 22, the read side and events: full pull of one agency's 5,000 reports, the pull of
# the 100 changed, 32 clients idle-polling, write -> event at one subscriber, worker RSS
# after a mixed load, authorized blob download vs nginx -- each against PostgreSQL alone
# (or nginx alone) in the same run, with server CPU per operation. Run by
# Deploy/dev/bench.sh (`BENCH=22 make bench`); never fails on numbers. The rows measure a
# settled stack, as BENCH=09 does; the start's first 75 s (autovacuum's first pass) are a
# row of their own, first (reads_bench.py's "start" path; BENCH_SETTLE=0: no settling).
# BENCH_PATHS=idle (or any list of reads_bench.py's paths) measures only those; reads_bench.py
# can also be run on its own against a stack that is up.
set -euo pipefail
source "$(dirname "$0")/common.sh"
command -v pgbench >/dev/null && command -v wrk >/dev/null || { echo "22-reads: pgbench and wrk are needed"; exit 1; }
seed_reports 5000
exec /usr/bin/python3 Bench/reads_bench.py
