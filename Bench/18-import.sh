#!/usr/bin/env bash
# Import benchmark (issue 18), run by Deploy/dev/bench.sh against .state/bench:
# `tideway import` of a mongodump of 100,000 O-FISH reports with their ChangeHistory,
# reports per second against the sync push path's bulk insert rate (the same reports
# pushed over HTTPS in batches of 1,000). BENCH_IMPORT_REPORTS changes the size.
# Prints figures and the ratio; never fails on numbers.
set -euo pipefail
source "$(dirname "$0")/common.sh"
exec /usr/bin/python3 Bench/import_bench.py
