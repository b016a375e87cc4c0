# Sourced by every Bench/NN-*.sh (not run on its own): what each benchmark that
# Deploy/dev/bench.sh runs starts with, in one place.
#   - the checkout as $repo and the working directory (the scripts and the Python
#     benches name files from there);
#   - the bench stack bench.sh started (TIDEWAY_BENCH_URL, _CA, _STATE), or a clear stop;
#   - BENCH_ADMIN_DATABASE (superuser: postgres as root, else the cluster's owner) and
#     BENCH_WORKER_DATABASE (the workers' role) on that stack's socket, and BENCH_REPO,
#     which the Python benches read;
#   - seed_reports N: the demo agencies with N reports each (idempotent: a kept
#     .state/bench keeps its seed, and seeding again only tops it up);
#   - median: the median of the numbers on stdin, one a line.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
: "${TIDEWAY_BENCH_URL:?run through Deploy/dev/bench.sh (make bench)}"
: "${TIDEWAY_BENCH_CA:?run through Deploy/dev/bench.sh (make bench)}"
: "${TIDEWAY_BENCH_STATE:?run through Deploy/dev/bench.sh (make bench)}"
superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
export BENCH_ADMIN_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=$superuser"
export BENCH_WORKER_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=tideway_worker"
export BENCH_REPO=$repo

seed_reports() {
    echo "seeding $1 reports per agency (idempotent)..."
    "$repo/.build/release/tideway" seed-demo --reports "$1" --database "$BENCH_ADMIN_DATABASE" --home "$repo"
}

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
