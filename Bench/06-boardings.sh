#!/usr/bin/env bash
# Issue 6: boardings list and report view p50/p95 through nginx with 100,000 reports, and
# the CSV export of all of them: time and the worker's peak memory. Prints a table; the
# numbers never fail the run.
set -euo pipefail
source "$(dirname "$0")/common.sh"
exec /usr/bin/python3 Bench/boardings_bench.py
