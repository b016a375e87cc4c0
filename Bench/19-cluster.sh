#!/usr/bin/env bash
# Issue 19: one node vs two nodes of a cluster on this machine (Deploy/cluster/cluster.sh,
# its own STATE .state/bench-cluster and front port BENCH_CLUSTER_PORT, 8743): idle polls/s
# and pushes/s through node A alone vs A and B at once (the ratio shows what the shared
# database host takes), and a fan-out to CLUSTER_STREAMS (10,000) event streams split over
# both nodes: commit -> event p50/p99. Root only (network namespaces); never fails on numbers.
set -euo pipefail
source "$(dirname "$0")/common.sh"
if [[ $(id -u) != 0 ]]; then echo "skipped: the cluster needs root (ip netns)"; exit 0; fi
ulimit -n "$(ulimit -Hn)"
export STATE=$PWD/.state/bench-cluster FRONT_HTTPS_PORT=${BENCH_CLUSTER_PORT:-8743}
cluster=$PWD/Deploy/cluster/cluster.sh
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
"$cluster" up >/dev/null
export TIDEWAY_CLUSTER_STATE=$STATE TIDEWAY_CLUSTER_NET=${CLUSTER_NET:-10.77.0}
/usr/bin/python3 Bench/cluster_bench.py
