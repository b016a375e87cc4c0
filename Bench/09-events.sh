#!/usr/bin/env bash
# Issue 9: 10,000 concurrent change-event subscribers held by nginx (nchan), memory of
# nginx and the workers, commit-to-event latency (when the subscriber read the event and
# when it reached its socket, with the server's and the subscribers' CPU), and a fan-out to
# 1,000 subscribers. EVENTS_LATENCY_ONLY=1 stops after the latency.
# Then the latency again with the other number of nginx instances (1 or 2, stack.sh
# NGINX_INSTANCES: two single-worker nginx sharing the port), the stack restarted for it and
# restarted as it was afterwards; EVENTS_ONE_WAY=1 skips that.
set -euo pipefail
cd "$(dirname "$0")/.."
ulimit -n "$(ulimit -Hn)"  # as many streams as this machine allows
superuser=$([[ $(id -u) == 0 ]] && echo postgres || id -un)
export TIDEWAY_BENCH_ADMIN_DATABASE="host=$TIDEWAY_BENCH_STATE/run dbname=tideway user=$superuser"
/usr/bin/python3 Bench/events_bench.py
[[ -z ${EVENTS_ONE_WAY:-} ]] || exit 0

# bench.sh exported STATE and the ports stack.sh needs.
instances=$(find "$TIDEWAY_BENCH_STATE/run" -maxdepth 1 -regex '.*/nginx\(-[0-9]+\)?\.pid' | wc -l)
other=$((instances == 1 ? 2 : 1))
Deploy/dev/stack.sh down >/dev/null
NGINX_INSTANCES=$other Deploy/dev/stack.sh up >/dev/null
printf '\n--- the same with NGINX_INSTANCES=%s (latency only; the run above had %s)\n' "$other" "$instances"
EVENTS_LATENCY_ONLY=1 /usr/bin/python3 Bench/events_bench.py || failed=1
Deploy/dev/stack.sh down >/dev/null
NGINX_INSTANCES=$instances Deploy/dev/stack.sh up >/dev/null
exit "${failed:-0}"
