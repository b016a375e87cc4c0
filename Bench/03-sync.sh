#!/usr/bin/env bash
# Sync benchmark (issue 3), run by Deploy/dev/bench.sh against .state/bench:
# 4 agencies x 5,000 reports, then over HTTPS through nginx
#   (a) initial pull of one agency vs PostgreSQL running the pull's own SQL (pgbench),
#   (b) push of 1,000 new reports in batches of 100 vs plain INSERTs of the same rows,
#   (c) 32 clients polling with a current cursor (wrk) vs /healthz in the same run.
# Prints figures and ratios; never fails on numbers.
set -euo pipefail
source "$(dirname "$0")/common.sh"
seed_reports 5000
exec /usr/bin/python3 Bench/sync_bench.py
