#!/usr/bin/env bash
# Issue 8: each dashboard page's server time (p50/p95 through nginx) with 100,000 reports
# (4 agencies x 25,000) and about 20,000 duty changes, default range (last 12 months).
# Run by Deploy/dev/bench.sh; prints a table; never fails on numbers.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
: "${TIDEWAY_BENCH_URL:?run through Deploy/dev/bench.sh (make bench)}"
superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
export BENCH_ADMIN_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=$superuser"

echo "seeding 25,000 reports per agency (idempotent)..."
"$repo/.build/release/tideway" seed-demo --reports "${BENCH_DASHBOARD_REPORTS:-25000}" \
    --database "$BENCH_ADMIN_DATABASE" --home "$repo"

exec /usr/bin/python3 "$repo/Bench/dashboards_bench.py"
