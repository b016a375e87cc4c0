#!/usr/bin/env bash
# Issue 8: each dashboard page's server time (p50/p95 through nginx) with 100,000 reports
# (4 agencies x 25,000) and about 20,000 duty changes, default range (last 12 months).
# Run by Deploy/dev/bench.sh; prints a table; never fails on numbers.
set -euo pipefail
source "$(dirname "$0")/common.sh"
seed_reports "${BENCH_DASHBOARD_REPORTS:-25000}"
exec /usr/bin/python3 Bench/dashboards_bench.py
