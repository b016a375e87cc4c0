#!/usr/bin/env bash
# Run every executable Bench/*.sh and Tests/Bench/* against a stack of its
# own in .state/bench (ports 8643 and 8280, or BENCH_HTTPS_PORT and
# BENCH_HTTP_PORT so that several checkouts can run it), kept between runs so
# its data is reused. Each benchmark gets TIDEWAY_BENCH_URL, TIDEWAY_BENCH_CA
# and TIDEWAY_BENCH_STATE. They run in the order of their names (NN-issue.sh):
# later ones add data (100,000 reports) that would change the earlier figures.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export STATE=$repo/.state/bench HTTPS_PORT=${BENCH_HTTPS_PORT:-8643} HTTP_PORT=${BENCH_HTTP_PORT:-8280}
stack=$repo/Deploy/dev/stack.sh

benches=()
for f in Bench/${BENCH:-}*.sh Tests/Bench/*; do
    [[ -f $f && -x $f ]] && benches+=("$f")
done
if ((${#benches[@]} == 0)); then
    echo "no benchmarks yet: add executable Bench/*.sh or Tests/Bench/* files"
    exit 0
fi

trap '"$stack" down >/dev/null' EXIT
"$stack" up
export TIDEWAY_BENCH_URL=https://localhost:$HTTPS_PORT TIDEWAY_BENCH_CA=$STATE/tls/ca.crt TIDEWAY_BENCH_STATE=$STATE

failed=0
for b in "${benches[@]}"; do
    printf '\n=== %s\n' "$b"
    "./$b" || { echo "FAILED: $b"; failed=1; }
done
exit "$failed"
