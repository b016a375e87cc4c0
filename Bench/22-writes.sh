#!/usr/bin/env bash
# Write-path benchmark (issue 22), run by Deploy/dev/bench.sh against .state/bench:
# reports of ~2.3 KB pushed into an agency partition over HTTPS through nginx
#   (a) one report per push, (b) batches of 25 per push, (c) write acknowledged p50 on one
#   kept-alive connection, each against PostgreSQL alone doing the same INSERTs as the
#   worker role under the same claims (app.authenticate, so the same RLS and triggers),
#   with server CPU per document from the processes' own counters (/proc/<pid>/stat),
#   the job runner's fold of the reports into the dashboard summaries included in both.
# Prints figures, ratios and the issue's aims; never fails on numbers.
# Bench/22-reads.sh (another helper) covers the read side.
set -euo pipefail
source "$(dirname "$0")/common.sh"
seed_reports 5000
exec /usr/bin/python3 Bench/writes_bench.py
