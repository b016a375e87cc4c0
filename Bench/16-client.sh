#!/usr/bin/env bash
# Client library benchmark (issue 16), run by Deploy/dev/bench.sh: the real tideway-device
# (TidewayClient: GRDB store, outgoing queue, photo uploads) against the server's own rates:
#   (a) initial sync of one agency's 5,000 reports into a new device's store vs a plain
#       HTTPS pull of the same pages (aim: <= 2x),
#   (b) "back from sea": 150 queued reports with 300 photos (1-3 MB) sent after reconnecting
#       vs a plain push of as many reports and PUTs of as many photos (aim: >= 80%),
#   (c) a back-office change -> the connected device's store (event stream), p50/p99.
# Prints figures and ratios; never fails on numbers. BENCH_CLIENT_REPORTS, _PHOTOS scale it.
set -euo pipefail
source "$(dirname "$0")/common.sh"
exec /usr/bin/python3 Bench/client_bench.py
