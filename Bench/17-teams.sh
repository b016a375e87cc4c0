#!/usr/bin/env bash
# Teams benchmark (issue 17), run by Deploy/dev/bench.sh against .state/bench: a team
# partition's pull and idle polls when the caller holds 1 and then 1,000 grants, in a grants
# table of 100,000 rows, against the same pull and polls of an agency partition holding the
# same documents. Prints figures and ratios (aim: within 10%); never fails on numbers.
set -euo pipefail
source "$(dirname "$0")/common.sh"
exec /usr/bin/python3 Bench/teams_bench.py
