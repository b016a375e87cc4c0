#!/usr/bin/env bash
# Issue 9: 10,000 concurrent change-event subscribers held by nginx (nchan), memory of
# nginx and the workers, commit-to-event latency (when the subscriber read the event and
# when it reached its socket, with the server's and the subscribers' CPU), and a fan-out to
# 1,000 subscribers. EVENTS_LATENCY_ONLY=1 stops after the latency.
# Then the latency again with the other number of nginx instances (1 or 2, stack.sh
# NGINX_INSTANCES: two single-worker nginx sharing the port), the stack restarted for it and
# restarted as it was afterwards; EVENTS_ONE_WAY=1 skips that.
# Then, as root, the latency with one and with two instances and the subscribers behind a veth
# pair (Bench/veth_clients.py), the stand-in for clients on another machine: their TCP receive
# half then runs in their own kernel thread, not inside nginx's writes as over loopback.
set -euo pipefail
source "$(dirname "$0")/common.sh"
ulimit -n "$(ulimit -Hn)"  # as many streams as this machine allows
/usr/bin/python3 Bench/events_bench.py
[[ -z ${EVENTS_ONE_WAY:-} ]] || exit 0

# bench.sh exported STATE and the ports stack.sh needs.
instances=$(find "$TIDEWAY_BENCH_STATE/run" -maxdepth 1 -regex '.*/nginx\(-[0-9]+\)?\.pid' | wc -l)
other=$((instances == 1 ? 2 : 1))
Deploy/dev/stack.sh down >/dev/null
NGINX_INSTANCES=$other Deploy/dev/stack.sh up >/dev/null
printf '\n--- the same with NGINX_INSTANCES=%s (latency only; the run above had %s)\n' "$other" "$instances"
EVENTS_LATENCY_ONLY=1 /usr/bin/python3 Bench/events_bench.py || failed=1
if [[ $(id -u) == 0 ]] && command -v ip >/dev/null; then
    # One namespace and /30 per bench port, so that checkouts benching at once do not meet.
    ns=twb$HTTPS_PORT prefix=10.$((HTTPS_PORT >> 8 & 255)).$((HTTPS_PORT & 255))
    listen="127.0.0.1 $prefix.1"
    ! grep -q ' lo$' /proc/net/if_inet6 2>/dev/null || listen+=" [::1]"
    trap '/usr/bin/python3 Bench/veth_clients.py down "$ns"' EXIT
    /usr/bin/python3 Bench/veth_clients.py down "$ns"
    /usr/bin/python3 Bench/veth_clients.py up "$ns" "$prefix.1" "$prefix.2"
    for n in 1 2; do
        Deploy/dev/stack.sh down >/dev/null
        LISTEN_ADDRS=$listen NGINX_INSTANCES=$n Deploy/dev/stack.sh up >/dev/null
        printf '\n--- NGINX_INSTANCES=%s, the subscribers behind a veth pair (clients elsewhere; latency only)\n' "$n"
        EVENTS_LATENCY_ONLY=1 EVENTS_NETNS=$ns EVENTS_ADDRESS=$prefix.1 /usr/bin/python3 Bench/events_bench.py || failed=1
    done
fi
Deploy/dev/stack.sh down >/dev/null
NGINX_INSTANCES=$instances Deploy/dev/stack.sh up >/dev/null
exit "${failed:-0}"
