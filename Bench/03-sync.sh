#!/usr/bin/env bash
# Sync benchmark (issue 3), run by Deploy/dev/bench.sh against .state/bench:
# 4 agencies x 5,000 reports, then over HTTPS through nginx
#   (a) initial pull of one agency vs PostgreSQL running the pull's own SQL (pgbench),
#   (b) push of 1,000 new reports in batches of 100 vs plain INSERTs of the same rows,
#   (c) 32 clients polling with a current cursor (wrk) vs /healthz in the same run.
# Prints figures and ratios; never fails on numbers.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
: "${TIDEWAY_BENCH_URL:?run through Deploy/dev/bench.sh (make bench)}"
superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
export BENCH_ADMIN_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=$superuser"
export BENCH_WORKER_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=tideway_worker"

echo "seeding 5,000 reports per agency (idempotent)..."
"$repo/.build/release/tideway" seed-demo --reports 5000 --database "$BENCH_ADMIN_DATABASE" --home "$repo"

exec /usr/bin/python3 "$repo/Bench/sync_bench.py"
