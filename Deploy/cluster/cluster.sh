#!/usr/bin/env bash
# A Tideway cluster on one machine: three hosts in network namespaces, joined by a
# bridge on a private /24 that this script creates and removes.
#
#   db   (.10)  PostgreSQL primary (:5432), its streaming replica (:5433, pg_basebackup,
#               physical replication through the slot tideway_replica), Redis (:6379)
#   a    (.11)  nginx (nchan on Redis), workers, `tideway jobs`, `tideway events`
#   b    (.12)  the same, from the same release build
#   front       nginx in the root namespace on 127.0.0.1:$FRONT_HTTPS_PORT, spreading
#               requests over a and b (the bridge end is .1)
#
#   cluster.sh up | down | status
#   cluster.sh kill-node a|b     kill -9 of every process of that host (nginx, workers,
#                                supervisors, jobs, events): the node dies
#   cluster.sh node-up a|b       start that node again
#   cluster.sh replica-stop | replica-start
#   cluster.sh promote           the primary dies (immediate stop); the replica is promoted;
#                                the workers' conninfo lists both servers with
#                                target_session_attrs=read-write, so they reconnect to it
#   cluster.sh psql [args] | replica-psql [args]
#
# Each node is Deploy/dev/stack.sh run inside its namespace with the cluster settings
# (WORKER_DATABASE, NCHAN_REDIS, EVENTS_LEADER, shared TLS_DIR and BLOB_ROOT): the same
# pieces as the one-machine stack, nothing copied. With real hosts, run the same steps
# on each host (Deploy/README.md, "Cluster").
#
# Settings (environment): STATE (<repo>/.state/cluster), FRONT_HTTPS_PORT (8743),
# CLUSTER_NET (10.77.0: the first three octets of the /24), CLUSTER_PREFIX (twc: namespace
# names twc-db, twc-a, twc-b, bridge twc-br), WORKERS (2 per node), THREADS (32).
# Needs root (ip netns).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${STATE:-$repo/.state/cluster}
FRONT_HTTPS_PORT=${FRONT_HTTPS_PORT:-8743}
net=${CLUSTER_NET:-10.77.0}
prefix=${CLUSTER_PREFIX:-twc}
export WORKERS=${WORKERS:-2} THREADS=${THREADS:-32}
stack=$repo/Deploy/dev/stack.sh
bin_dir=${TIDEWAY_BIN_DIR:-$repo/.build/release}
pg_bin=/usr/lib/postgresql/15/bin
nginx=$(command -v nginx || echo /usr/sbin/nginx)

bridge=$prefix-br
db_ip=$net.10
declare -A node_ip=([a]=$net.11 [b]=$net.12)
front_dir=$STATE/front
replica=$STATE/db/replica
db_run=$STATE/db/run
front_url=https://localhost:$FRONT_HTTPS_PORT
# libpq tries both servers and keeps the one that accepts writes: after a promotion the
# workers find the new primary on their next connection.
worker_db="host=$db_ip,$db_ip port=5432,5433 dbname=tideway user=tideway_worker target_session_attrs=read-write connect_timeout=3"
# Pulls read the replica once it has replayed the primary's position (docs/scaling.md); after
# a promotion it is the primary, which answers them as well.
replica_db="host=$db_ip port=5433 dbname=tideway user=tideway_worker connect_timeout=2"

say() { printf 'cluster: %s\n' "$*"; }
die() { printf 'cluster.sh: %s\n' "$*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "needs root (ip netns)"

ns() { echo "$prefix-$1"; }
in_ns() { local n=$1; shift; ip netns exec "$(ns "$n")" "$@"; }
as_pg() { runuser -u postgres -- "$@"; }

net_up() {
    ip link show "$bridge" >/dev/null 2>&1 || {
        say "bridge $bridge $net.1/24"
        ip link add "$bridge" type bridge
        ip addr add "$net.1/24" dev "$bridge"
        ip link set "$bridge" up
    }
    local host ip
    for host in db a b; do
        case $host in db) ip=$db_ip ;; *) ip=${node_ip[$host]} ;; esac
        ip netns list | grep -qw "$(ns "$host")" && continue
        say "host $host: namespace $(ns "$host"), $ip"
        ip netns add "$(ns "$host")"
        ip link add "$prefix-$host-h" type veth peer name "$prefix-$host-n"
        ip link set "$prefix-$host-h" master "$bridge" up
        ip link set "$prefix-$host-n" netns "$(ns "$host")"
        in_ns "$host" ip link set lo up
        in_ns "$host" ip addr add "$ip/24" dev "$prefix-$host-n"
        in_ns "$host" ip link set "$prefix-$host-n" up
    done
}

net_down() {
    local host
    for host in a b db; do
        if ip netns list | grep -qw "$(ns "$host")"; then
            kill_ns "$host"
            ip netns del "$(ns "$host")"
        fi
        ip link del "$prefix-$host-h" 2>/dev/null || true
    done
    ! ip link show "$bridge" >/dev/null 2>&1 || ip link del "$bridge"
}

# kill -9 of every process in a host's namespace: all of them were started by this script.
kill_ns() {
    local pids
    pids=$(ip netns pids "$(ns "$1")" 2>/dev/null || true)
    [[ -z $pids ]] || kill -9 $pids 2>/dev/null || true
}

redis_up() {
    mkdir -p "$STATE/db/redis"
    if [[ -r $db_run/redis.pid ]] && kill -0 "$(<"$db_run/redis.pid")" 2>/dev/null; then return; fi
    say "starting Redis on $db_ip:6379"
    # No persistence: nchan keeps only the last minutes of events there, and events are
    # hints (clients pull); a restarted Redis costs streams nothing but a reconnect.
    # protected-mode no: Redis 7 refuses every non-loopback client without a password;
    # here it listens on the private bridge only (production: a password, Deploy/README.md).
    in_ns db redis-server --bind "$db_ip" --port 6379 --protected-mode no --daemonize yes --save '' --appendonly no \
        --pidfile "$db_run/redis.pid" --dir "$STATE/db/redis" --logfile "$STATE/db/log/redis.log"
}

replica_running() { [[ -f $replica/PG_VERSION ]] && as_pg "$pg_bin/pg_ctl" -D "$replica" status >/dev/null 2>&1; }

replica_up() {
    if [[ ! -f $replica/PG_VERSION ]]; then
        say "pg_basebackup: replica in $replica (slot tideway_replica)"
        install -d -o postgres -m 700 "$replica"
        # -C -S: a physical replication slot, so the primary keeps the WAL the replica
        # still needs (while it is stopped, too). -R: standby.signal and primary_conninfo.
        # -c fast: start at once instead of waiting for a spread checkpoint (minutes).
        in_ns db runuser -u postgres -- "$pg_bin/pg_basebackup" -h "$db_ip" -p 5432 -U postgres \
            -D "$replica" -R -X stream -C -S tideway_replica -c fast >/dev/null
        printf '%s\n' "port = 5433" "hot_standby_feedback = on" | as_pg tee -a "$replica/postgresql.auto.conf" >/dev/null
    fi
    replica_running && return
    say "starting the replica on $db_ip:5433"
    touch "$STATE/db/log/replica.log" && chown postgres: "$STATE/db/log/replica.log"
    in_ns db runuser -u postgres -- "$pg_bin/pg_ctl" -D "$replica" -l "$STATE/db/log/replica.log" -w -t 60 start >/dev/null ||
        { tail -n 20 "$STATE/db/log/replica.log" >&2; die "the replica did not start"; }
}

db_up() {
    # The same PostgreSQL setup as the one-machine stack, listening on the bridge too.
    in_ns db env STATE="$STATE/db" PG_LISTEN="$db_ip" PG_TRUST_NET="$net.0/24" "$stack" pg-up
    STATE="$STATE/db" TIDEWAY_BIN_DIR=$bin_dir "$stack" migrate
    redis_up
    replica_up
}

db_down() {
    if replica_running; then say "stopping the replica"; as_pg "$pg_bin/pg_ctl" -D "$replica" -m fast -w stop >/dev/null; fi
    STATE="$STATE/db" "$stack" down >/dev/null
    if [[ -r $db_run/redis.pid ]] && kill -0 "$(<"$db_run/redis.pid")" 2>/dev/null; then
        say "stopping Redis"
        kill "$(<"$db_run/redis.pid")"
    fi
}

# node_stack <a|b> <stack.sh command>: Deploy/dev/stack.sh in that node's namespace, with
# the cluster's settings.
node_stack() {
    local n=$1
    shift
    in_ns "$n" env STATE="$STATE/node-$n" WORKER_DATABASE="$worker_db" REPLICA_DATABASE="$replica_db" LISTEN_ADDRS="${node_ip[$n]}" \
        HTTPS_PORT=443 HTTP_PORT=80 STACK_URL="https://${node_ip[$n]}" PUBLIC_URL="$front_url" \
        TLS_DIR="$STATE/tls" BLOB_ROOT="$STATE/shared/blobs" NCHAN_REDIS="redis://$db_ip:6379" \
        EVENTS_LEADER=1 TIDEWAY_BIN_DIR="$bin_dir" "$stack" "$@"
}

node_up() {
    local n=$1
    [[ -n ${node_ip[$n]:-} ]] || die "no node $n (a or b)"
    # A node killed with -9 leaves nginx's publisher socket behind, and nginx will not
    # bind over it.
    [[ -n $(ip netns pids "$(ns "$n")") ]] || rm -f "$STATE/node-$n/run/events-publish.sock"
    say "node $n (${node_ip[$n]})"
    node_stack "$n" up | sed -e '/^Tideway dev stack is up/,$d' -e '/^$/d' -e "s/^/  $n: /"
}

node_down() {
    local n=$1
    ! ip netns list | grep -qw "$(ns "$n")" || node_stack "$n" down >/dev/null || true
    kill_ns "$n"
}

front_conf() {
    mkdir -p "$front_dir/tmp" "$STATE/front/log"
    local modules=/usr/lib/nginx/modules
    cat >"$front_dir/nginx.conf" <<CONF
# The front of the cluster: spreads clients over the nodes. Production puts a load
# balancer (or DNS with several addresses) here; Deploy/README.md, "Cluster".
user root;
worker_processes auto;
worker_rlimit_nofile $(ulimit -Hn);
pid $front_dir/nginx.pid;
error_log $front_dir/log/error.log;
events { worker_connections $(( $(ulimit -Hn) / 2 - 100 )); }
http {
    access_log $front_dir/log/access.log;
    client_body_temp_path $front_dir/tmp/client_body;
    proxy_temp_path $front_dir/tmp/proxy;
    fastcgi_temp_path $front_dir/tmp/fastcgi;
    uwsgi_temp_path $front_dir/tmp/uwsgi;
    scgi_temp_path $front_dir/tmp/scgi;
    upstream tideway_nodes {
        # A node that refuses a connection is left alone for 3 s, then tried again.
        server ${node_ip[a]}:443 max_fails=1 fail_timeout=3s;
        server ${node_ip[b]}:443 max_fails=1 fail_timeout=3s;
        keepalive 64;
    }
    server {
        listen 127.0.0.1:$FRONT_HTTPS_PORT ssl;
        server_tokens off;
        ssl_certificate $STATE/tls/server.crt;
        ssl_certificate_key $STATE/tls/server.key;
        client_max_body_size 16m;
        location / {
            proxy_pass https://tideway_nodes;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$http_host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_ssl_session_reuse on;
            # Event streams and long polls pass through as they come.
            proxy_buffering off;
            proxy_read_timeout 1h;
            proxy_connect_timeout 2s;
            # Another node only when the request could not be sent: a POST that reached a
            # node is never sent twice by nginx (clients retry with the same changeId).
            proxy_next_upstream error timeout;
        }
    }
}
CONF
}

front_up() {
    front_conf
    "$nginx" -p "$front_dir/" -c "$front_dir/nginx.conf" -t -q || die "nginx rejects $front_dir/nginx.conf"
    if [[ -r $front_dir/nginx.pid ]] && kill -0 "$(<"$front_dir/nginx.pid")" 2>/dev/null; then
        "$nginx" -p "$front_dir/" -c "$front_dir/nginx.conf" -s reload
    else
        say "front nginx on $front_url"
        "$nginx" -p "$front_dir/" -c "$front_dir/nginx.conf"
    fi
}

front_down() {
    [[ -r $front_dir/nginx.pid ]] && kill -0 "$(<"$front_dir/nginx.pid")" 2>/dev/null || return 0
    local pid
    pid=$(<"$front_dir/nginx.pid")
    "$nginx" -p "$front_dir/" -c "$front_dir/nginx.conf" -s quit
    for _ in {1..100}; do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
}

cmd_up() {
    [[ -x $bin_dir/tideway && -x $bin_dir/tideway-worker ]] || die "no release build in $bin_dir (make build)"
    mkdir -p "$STATE/shared/blobs"
    net_up
    db_up
    STATE=$STATE TLS_DIR=$STATE/tls TLS_SAN="IP:${node_ip[a]},IP:${node_ip[b]}" "$stack" tls >/dev/null
    node_up a
    node_up b
    front_up
    local deadline=$((SECONDS + 30))
    until curl -sf -o /dev/null --cacert "$STATE/tls/ca.crt" "$front_url/healthz"; do
        ((SECONDS < deadline)) || die "the front answers no /healthz at $front_url"
        sleep 0.25
    done
    cat <<MSG

Tideway cluster is up: $front_url (CA $STATE/tls/ca.crt)
  node a https://${node_ip[a]}  node b https://${node_ip[b]}  (from the root namespace)
  primary $db_ip:5432, replica $db_ip:5433, Redis $db_ip:6379; logs under $STATE/*/log
  demo logins as in \`make run\` (password tideway-demo)
MSG
}

cmd_down() {
    front_down
    node_down a
    node_down b
    db_down
    net_down
    say "down"
}

cmd_status() {
    local n
    for n in a b; do
        if ip netns list | grep -qw "$(ns "$n")"; then node_stack "$n" status | sed "s/^/$n: /"; else say "node $n: no namespace"; fi
    done
    replica_running && say "replica: running" || say "replica: stopped"
}

case ${1:-} in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    kill-node) [[ -n ${node_ip[${2:-}]:-} ]] || die "kill-node a|b"; say "kill -9 of node $2"; kill_ns "$2" ;;
    node-up) node_up "${2:?a or b}" ;;
    replica-stop) as_pg "$pg_bin/pg_ctl" -D "$replica" -m fast -w stop >/dev/null; say "replica stopped" ;;
    replica-start) replica_up ;;
    promote)
        say "the primary dies (immediate stop)"
        as_pg "$pg_bin/pg_ctl" -D "$STATE/db/pg" -m immediate -w stop >/dev/null
        say "promoting the replica ($db_ip:5433)"
        as_pg "$pg_bin/pg_ctl" -D "$replica" -w promote >/dev/null
        ;;
    psql) shift; "$pg_bin/psql" -X -h "$db_run" -p 5432 -U postgres -d tideway "$@" ;;
    replica-psql) shift; "$pg_bin/psql" -X -h "$db_run" -p 5433 -U postgres -d tideway "$@" ;;
    *) die "usage: cluster.sh up|down|status|kill-node a|b|node-up a|b|replica-stop|replica-start|promote|psql|replica-psql" ;;
esac
