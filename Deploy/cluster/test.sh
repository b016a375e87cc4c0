#!/usr/bin/env bash
# `make test-cluster`: a throwaway cluster (Deploy/cluster/cluster.sh) in .state/cluster-test,
# the tests of Tests/Cluster against it (real processes: nodes killed with -9, the
# replica promoted), then the cluster down. Front port: TEST_HTTPS_PORT (8743).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
export STATE=$repo/.state/cluster-test FRONT_HTTPS_PORT=${TEST_HTTPS_PORT:-8743}
cluster=$repo/Deploy/cluster/cluster.sh

[[ ! -d $STATE ]] || "$cluster" down >/dev/null 2>&1 || true
rm -rf "$STATE"
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT

started=$SECONDS
"$cluster" up
export TIDEWAY_CLUSTER_STATE=$STATE TIDEWAY_CLUSTER_URL=https://localhost:$FRONT_HTTPS_PORT \
    TIDEWAY_CLUSTER_NODE_A=https://${CLUSTER_NET:-10.77.0}.11 TIDEWAY_CLUSTER_NODE_B=https://${CLUSTER_NET:-10.77.0}.12 \
    TIDEWAY_CLUSTER_SCRIPT=$cluster
status=0
/usr/bin/python3 -m pytest -q -p no:cacheprovider Tests/Cluster || status=$?
printf '\n=== cluster figures\n'
cat "$STATE/figures.txt" 2>/dev/null || true
printf '=== test-cluster took %d s (status %d)\n' $((SECONDS - started)) "$status"
exit "$status"
