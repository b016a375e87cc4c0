#!/usr/bin/env bash
# Teams benchmark (issue 17), run by Deploy/dev/bench.sh against .state/bench: a team
# partition's pull and idle polls when the caller holds 1 and then 1,000 grants, in a grants
# table of 100,000 rows, against the same pull and polls of an agency partition holding the
# same documents. Prints figures and ratios (aim: within 10%); never fails on numbers.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
: "${TIDEWAY_BENCH_URL:?run through Deploy/dev/bench.sh (make bench)}"
superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
export BENCH_ADMIN_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=$superuser"
export BENCH_REPO=$repo
exec /usr/bin/python3 "$repo/Bench/teams_bench.py"
