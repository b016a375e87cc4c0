#!/usr/bin/env bash
# The dev stack: a private PostgreSQL cluster, FastCGI workers under
# supervise.sh, and nginx with TLS, all living in $STATE.
#
#   stack.sh up | down | status | pg-up | migrate | tls | rotate-tickets | psql [psql args]
#
#   up      start what is not running yet (safe to repeat)
#   tls     only the dev CA, the server certificate and the session-ticket keys (in $TLS_DIR)
#   rotate-tickets  a new session-ticket key (Deploy/tls-ticket-keys.sh rotate), then a
#           reload of every running nginx instance
#   down    stop what this $STATE started: nginx, workers, PostgreSQL
#   status  show what runs
#   pg-up   only the cluster and the tideway database (no schema), for tests
#   migrate tideway migrate and seed-demo on that database
#   psql    a psql shell on the tideway database as superuser
#
# Settings (environment): STATE (<repo>/.state/dev), HTTPS_PORT (8443),
# HTTP_PORT (8080), WORKERS (2), THREADS (32), TIDEWAY_BIN_DIR
# (<repo>/.build/release), SMTP_SINK_PORT (unset: no mail; set: a mail sink,
# Deploy/dev/smtp_sink.py, listens there and keeps every message in
# $STATE/mail, and the workers mail through it; test.sh sets it), TRUSTED_PROXIES
# (127.0.0.1: loopback stands for a proxy in front, whose X-Forwarded-For nginx
# believes; see Deploy/render-nginx.sh). TIDEWAY_SMTP_*
# in the environment reach the workers too, for a real relay.
#
# Settings for a node of a cluster (Deploy/cluster/cluster.sh sets them; unset, the
# stack is the one-machine stack above):
#   WORKER_DATABASE  conninfo of the workers: the stack then has no PostgreSQL of its
#                    own and does not migrate (the database host does)
#   REPLICA_DATABASE the workers' conninfo of a streaming replica that pulls may read
#                    (TIDEWAY_REPLICA_DATABASE; none by default)
#   LISTEN_ADDRS     nginx's addresses (default 127.0.0.1 and ::1)
#   STACK_URL        where `up` checks /healthz (https://localhost:$HTTPS_PORT)
#   PUBLIC_URL       the workers' TIDEWAY_PUBLIC_URL ($STACK_URL)
#   TLS_DIR          CA, server certificate and session-ticket keys ($STATE/tls; the
#                    cluster's nodes share one, so a client resumes on either); TLS_SAN adds
#                    names to the certificate, e.g. "IP:10.77.0.11"
#   BLOB_ROOT        photo bytes ($STATE/blobs), a folder every node reaches
#   NCHAN_REDIS      Redis URL for nchan (Deploy/render-nginx.sh)
#   NGINX_WORKERS    nginx worker processes (1; see nginx_conf: more crash nchan 1.3.6)
#   NGINX_INSTANCES  nginx instances sharing the ports (SO_REUSEPORT), each one worker and
#                    its own nchan, so an event's fan-out runs on that many cores (1;
#                    Deploy/dev/test.sh runs 2; only 1 with NCHAN_REDIS; render-nginx.sh).
#                    Instance 1 lives in $STATE/nginx, N in $STATE/nginx-N (pid
#                    run/nginx[-N].pid); all log to the same files.
#   EVENTS_LEADER    set: `tideway events` runs only while it holds the PostgreSQL
#                    advisory lock (Deploy/cluster/leader.sh), so one node publishes
#   PG_LISTEN, PG_TRUST_NET  (pg-up) addresses PostgreSQL listens on, and a network
#                    whose hosts it trusts, replication included (the cluster's db host)
#
# Run as root, PostgreSQL runs as the `postgres` user (initdb refuses root),
# while workers and nginx workers run as root: nginx must reach the worker
# sockets and read Static/ and the blobs inside the checkout, and one shared
# user is the simplest way. Production splits these users (Deploy/README.md).
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${STATE:-$repo/.state/dev}
HTTPS_PORT=${HTTPS_PORT:-8443}
HTTP_PORT=${HTTP_PORT:-8080}
WORKERS=${WORKERS:-2}
# One nginx instance unless asked (the test stack runs two; with NCHAN_REDIS only one works).
NGINX_INSTANCES=${NGINX_INSTANCES:-1}
THREADS=${THREADS:-32}
bin_dir=${TIDEWAY_BIN_DIR:-$repo/.build/release}
TIDEWAY=$bin_dir/tideway
WORKER=$bin_dir/tideway-worker

pg_bin=/usr/lib/postgresql/15/bin
nginx=$(command -v nginx || echo /usr/sbin/nginx)
run=$STATE/run logs=$STATE/log pgdata=$STATE/pg tls=${TLS_DIR:-$STATE/tls}
tickets=$tls/session-tickets
ngx_dir=$STATE/nginx
url=${STACK_URL:-https://localhost:$HTTPS_PORT}
public_url=${PUBLIC_URL:-$url}
blobs=${BLOB_ROOT:-$STATE/blobs}
WORKER_DATABASE=${WORKER_DATABASE:-}

if [[ $(id -u) == 0 ]]; then
    pg_user=postgres
    as_pg() { runuser -u postgres -- "$@"; }
else
    pg_user=$(id -un)
    as_pg() { "$@"; }
fi
admin_db="host=$run dbname=tideway user=$pg_user"
worker_db=${WORKER_DATABASE:-"host=$run dbname=tideway user=tideway_worker"}
SMTP_SINK_PORT=${SMTP_SINK_PORT:-}
if [[ -n $SMTP_SINK_PORT ]]; then
    # Inherited by the workers started below.
    export TIDEWAY_SMTP_HOST=127.0.0.1 TIDEWAY_SMTP_PORT=$SMTP_SINK_PORT TIDEWAY_SMTP_TLS=none \
        TIDEWAY_SMTP_FROM="Tideway test <noreply@test.tideway>"
fi

say() { printf '%s\n' "$*"; }
die() { printf 'stack.sh: %s\n' "$*" >&2; exit 1; }

# True when the pid in file $1 is alive and its command line contains $2 (a
# path inside this $STATE), so a stale pid file or another STATE's process is
# never taken for ours.
running() {
    local pid
    [[ -r $1 ]] && pid=$(<"$1") && [[ -n $pid ]] &&
        grep -qF -- "$2" "/proc/$pid/cmdline" 2>/dev/null
}

pg_running() { [[ -d $pgdata ]] && as_pg "$pg_bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; }

make_dirs() {
    mkdir -p "$STATE" "$run" "$logs" "$blobs"
    if [[ $(id -u) == 0 ]]; then
        # postgres puts its socket and lock file in $run and writes its log.
        chown postgres: "$run"
        touch "$logs/postgres.log" && chown postgres: "$logs/postgres.log"
        runuser -u postgres -- test -x "$STATE" ||
            die "the postgres user cannot reach $STATE; every folder above it needs o+x"
    fi
}

pg_up() {
    make_dirs
    if [[ ! -f $pgdata/PG_VERSION ]]; then
        say "initdb $pgdata"
        mkdir -p "$pgdata"
        [[ $(id -u) != 0 ]] || chown postgres: "$pgdata"
        as_pg "$pg_bin/initdb" -D "$pgdata" -U "$pg_user" --auth-local=trust --auth-host=reject \
            -E UTF8 --locale=C.UTF-8 >"$logs/initdb.log"
        echo "include = 'tideway.conf'" | as_pg tee -a "$pgdata/postgresql.conf" >/dev/null
    fi
    # Rewritten on every up so edits here reach existing clusters (at their
    # next start). Durability is tested, so fsync stays on.
    as_pg tee "$pgdata/tideway.conf" >/dev/null <<CONF
listen_addresses = '${PG_LISTEN:-}'
unix_socket_directories = '$run'
max_connections = 200
shared_buffers = 256MB
fsync = on
synchronous_commit = on
full_page_writes = on
# How the WAL is flushed at COMMIT: Linux's default, chosen by measurement (docs/performance/round-05.md,
# "A lone push's fixed cost": open_datasync won pg_test_fsync's one-write test on this disk but
# not the acknowledged write). Every method is as durable; production measures its own disk.
wal_sync_method = fdatasync
log_min_duration_statement = 500ms
log_line_prefix = '%m [%p] %q%u@%d '
# Top-level statements counted, as a production server would; the extension itself is
# created by whoever reads it. Nested statements and PL/pgSQL function timing are for
# profiles only (docs/performance/round-03.md, "The push path, third round"): Bench/push_profile.py
# turns them on (ALTER SYSTEM) only while it profiles.
shared_preload_libraries = 'pg_stat_statements'
CONF
    if [[ -n ${PG_TRUST_NET:-} ]] && ! grep -qF "$PG_TRUST_NET" "$pgdata/pg_hba.conf"; then
        printf 'host all all %s trust\nhost replication all %s trust\n' "$PG_TRUST_NET" "$PG_TRUST_NET" |
            as_pg tee -a "$pgdata/pg_hba.conf" >/dev/null
    fi
    if pg_running; then
        say "PostgreSQL already running"
    else
        say "starting PostgreSQL"
        as_pg "$pg_bin/pg_ctl" -D "$pgdata" -l "$logs/postgres.log" -w -t 60 start >/dev/null ||
            { tail -n 20 "$logs/postgres.log" >&2; die "PostgreSQL did not start"; }
    fi
    if [[ -z $(psql_super postgres -tAc "select 1 from pg_database where datname = 'tideway'") ]]; then
        say "creating database tideway"
        psql_super postgres -qc 'create database tideway'
    fi
}

psql_super() { local db=$1; shift; "$pg_bin/psql" -X -v ON_ERROR_STOP=1 -h "$run" -U "$pg_user" -d "$db" "$@"; }

migrate_and_seed() {
    if [[ ! -x $TIDEWAY ]]; then
        say "skipping migrate and seed-demo: $TIDEWAY not built yet (make build)"
        return
    fi
    say "tideway migrate; tideway seed-demo"
    TIDEWAY_ADMIN_DATABASE=$admin_db TIDEWAY_HOME=$repo "$TIDEWAY" migrate
    TIDEWAY_ADMIN_DATABASE=$admin_db TIDEWAY_HOME=$repo "$TIDEWAY" seed-demo
}

make_tls() {
    mkdir -p "$tls"
    if [[ ! -f $tls/ca.crt ]]; then
        say "creating dev CA $tls/ca.crt"
        (umask 077 && openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=Tideway dev CA" \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
            -keyout "$tls/ca.key" -out "$tls/ca.crt" 2>/dev/null)
        chmod 644 "$tls/ca.crt" # only the keys stay private
        rm -f "$tls/server.crt"
    fi
    # Browsers refuse server certificates valid for more than 398 days, so
    # this one is short-lived and remade when it nears its end.
    if [[ ! -f $tls/server.crt ]] || ! openssl x509 -checkend 86400 -noout -in "$tls/server.crt" >/dev/null; then
        say "creating server certificate for localhost"
        (umask 077 && openssl req -newkey rsa:2048 -nodes -subj /CN=localhost \
            -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null)
        openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.crt" -CAkey "$tls/ca.key" \
            -set_serial "0x$(openssl rand -hex 16)" -days 397 -out "$tls/server.crt" 2>/dev/null \
            -extfile <(printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1${TLS_SAN:+,$TLS_SAN}" \
                "basicConstraints=CA:FALSE" "extendedKeyUsage=serverAuth")
        rm -f "$tls/server.csr"
    fi
    # Shared by every nginx instance (and the cluster's nodes): docs/operations.md, "TLS sessions".
    "$repo/Deploy/tls-ticket-keys.sh" make "$tickets"
}

workers_up() {
    if [[ ! -x $WORKER ]]; then
        say "skipping workers: $WORKER not built yet (make build)"
        return
    fi
    local i
    for ((i = 1; i <= WORKERS; i++)); do
        if running "$run/supervise-$i.pid" "$run/worker-$i.pid"; then continue; fi
        rm -f "$run/worker-$i.sock" # stale from a crash; the worker binds it anew
        say "starting worker $i"
        # setsid: the supervisor outlives this script and ignores its terminal.
        TIDEWAY_SOCKET=$run/worker-$i.sock TIDEWAY_DATABASE=$worker_db TIDEWAY_THREADS=$THREADS \
            TIDEWAY_REPLICA_DATABASE=${REPLICA_DATABASE:-} \
            TIDEWAY_HOME=$repo TIDEWAY_BLOB_ROOT=$blobs TIDEWAY_PUBLIC_URL=$public_url TIDEWAY_STATE=$STATE \
            TIDEWAY_METRICS_DIR=$STATE/metrics \
            setsid "$repo/Deploy/dev/supervise.sh" "$run/worker-$i.pid" "$logs/worker-$i.log" "$WORKER" \
            </dev/null >>"$logs/worker-$i.log" 2>&1 &
        echo $! >"$run/supervise-$i.pid"
    done
}

# The test mail sink, supervised like a worker; only when SMTP_SINK_PORT is set.
mail_sink_up() {
    [[ -n $SMTP_SINK_PORT ]] || return 0
    if running "$run/supervise-mail.pid" "$run/mail.pid"; then return; fi
    say "starting the mail sink on 127.0.0.1:$SMTP_SINK_PORT ($STATE/mail)"
    setsid "$repo/Deploy/dev/supervise.sh" "$run/mail.pid" "$logs/mail.log" \
        /usr/bin/python3 "$repo/Deploy/dev/smtp_sink.py" "$SMTP_SINK_PORT" "$STATE/mail" \
        </dev/null >>"$logs/mail.log" 2>&1 &
    echo $! >"$run/supervise-mail.pid"
}

# The change-event publisher (tideway events), supervised like a worker. It needs nginx's
# publisher socket, so it starts after nginx; until then it retries on its own.
events_up() {
    [[ -x $TIDEWAY ]] || return 0
    # Every nginx instance's publisher socket: an event is published in each. A publisher
    # started with another list (NGINX_INSTANCES changed) is restarted.
    local sockets=$run/events-publish.sock n
    for ((n = 2; n <= NGINX_INSTANCES; n++)); do sockets+=":$run/events-publish-$n.sock"; done
    if running "$run/supervise-events.pid" "$run/events.pid"; then
        [[ $(cat "$run/events.sockets" 2>/dev/null) != "$sockets" ]] || return 0
        say "restarting the event publisher for $NGINX_INSTANCES nginx instances"
        local pid
        pid=$(<"$run/supervise-events.pid")
        kill -TERM "$pid"
        wait_gone "$pid"
    fi
    printf '%s\n' "$sockets" >"$run/events.sockets"
    say "starting the event publisher${EVENTS_LEADER:+ (when it holds the leader lock)}"
    local leader=()
    [[ -z ${EVENTS_LEADER:-} ]] || leader=("$repo/Deploy/cluster/leader.sh" "$worker_db" tideway-events --)
    TIDEWAY_DATABASE=$worker_db TIDEWAY_EVENTS_SOCKET=$sockets TIDEWAY_METRICS_DIR=$STATE/metrics \
        setsid "$repo/Deploy/dev/supervise.sh" "$run/events.pid" "$logs/events.log" "${leader[@]}" "$TIDEWAY" events \
        </dev/null >>"$logs/events.log" 2>&1 &
    echo $! >"$run/supervise-events.pid"
}

# The job runner (`tideway jobs`: photo offload, blob sweep), supervised like the workers.
jobs_up() {
    if [[ ! -x $TIDEWAY ]]; then
        say "skipping jobs: $TIDEWAY not built yet (make build)"
        return
    fi
    if running "$run/supervise-jobs.pid" "$run/jobs.pid"; then return; fi
    say "starting jobs"
    TIDEWAY_DATABASE=$worker_db TIDEWAY_HOME=$repo TIDEWAY_BLOB_ROOT=$blobs TIDEWAY_STATE=$STATE \
        TIDEWAY_METRICS_DIR=$STATE/metrics \
        setsid "$repo/Deploy/dev/supervise.sh" "$run/jobs.pid" "$logs/jobs.log" "$TIDEWAY" jobs \
        </dev/null >>"$logs/jobs.log" 2>&1 &
    echo $! >"$run/supervise-jobs.pid"
}

# Instance $1's folder and pid file (1: the ones a single nginx always had).
ngx_dir_of() { if (($1 == 1)); then echo "$ngx_dir"; else echo "$ngx_dir-$1"; fi; }
ngx_pid_of() { if (($1 == 1)); then echo "$run/nginx.pid"; else echo "$run/nginx-$1.pid"; fi; }

# Writes instance $1's nginx.conf and tideway.conf into its folder.
nginx_conf() {
    local modules=/usr/lib/nginx/modules instance=$1 dir
    dir=$(ngx_dir_of "$instance")
    # cores: where a crashed nginx worker leaves its core (below); it must exist before a
    # worker starts, or every worker exits at once ("chdir() failed", fatal).
    mkdir -p "$dir/tmp" "$dir/cores"
    {
        # nchan will carry /api/v1/sync/events.
        [[ ! -f $modules/ngx_nchan_module.so ]] || echo "load_module $modules/ngx_nchan_module.so;"
        [[ $(id -u) != 0 ]] || echo "user root; # see the header of Deploy/dev/stack.sh"
        # One nginx worker: nchan 1.3.6 crashes workers when a deleted channel (a revoked
        # login's) has subscribers in another worker (docs/operations.md, "nchan").
        cat <<CONF
worker_processes ${NGINX_WORKERS:-1};
# Change-event streams are long-lived connections: as many as this machine allows.
worker_rlimit_nofile $(ulimit -Hn);
pid $(ngx_pid_of "$instance");
# A crashed worker leaves a core here (kernel.core_pattern "core"; systemd-coredump keeps it
# itself): docs/operations.md, "When nginx's worker dies".
worker_rlimit_core 4g;
working_directory $dir/cores;
error_log $logs/nginx-error.log;
events { worker_connections $(( $(ulimit -Hn) - 100 )); }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    # Buffered: one write per 64 KB or per second, not one per request.
    access_log $logs/nginx-access.log combined buffer=64k flush=1s;
    client_body_temp_path $dir/tmp/client_body;
    fastcgi_temp_path $dir/tmp/fastcgi;
    proxy_temp_path $dir/tmp/proxy;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    include $dir/tideway.conf;
}
CONF
    } >"$dir/nginx.conf"
    local listen=${LISTEN_ADDRS:-}
    if [[ -z $listen ]]; then
        listen="127.0.0.1"
        # Listen on ::1 too when the loopback has IPv6, as "localhost" may resolve to it.
        ! grep -q ' lo$' /proc/net/if_inet6 2>/dev/null || listen+=" [::1]"
    fi
    SERVER_NAME=localhost HTTPS_PORT=$HTTPS_PORT HTTP_PORT=$HTTP_PORT LISTEN_ADDRS=$listen \
        TLS_CERT=$tls/server.crt TLS_KEY=$tls/server.key TLS_TICKETS=$tickets RUN_DIR=$run WORKERS=$WORKERS \
        STATIC_DIR=$repo/Static BLOB_ROOT=$blobs NGINX=$nginx TRUSTED_PROXIES=${TRUSTED_PROXIES-127.0.0.1} \
        NGINX_INSTANCES=$NGINX_INSTANCES NGINX_INSTANCE=$instance \
        "$repo/Deploy/render-nginx.sh" >"$dir/tideway.conf"
}

# nginx_ctl <instance> [nginx args]
nginx_ctl() {
    local dir
    dir=$(ngx_dir_of "$1")
    shift
    "$nginx" -p "$dir/" -c "$dir/nginx.conf" -e "$logs/nginx-error.log" "$@"
}

nginx_up() {
    local i dir
    # Instances past NGINX_INSTANCES, left by an earlier up with more (events_up then
    # restarts the publisher with the new list of sockets).
    nginx_down $((NGINX_INSTANCES + 1))
    for ((i = 1; i <= NGINX_INSTANCES; i++)); do
        nginx_conf "$i"
        dir=$(ngx_dir_of "$i")
        nginx_ctl "$i" -t -q || die "nginx rejects $dir/nginx.conf"
        if running "$(ngx_pid_of "$i")" "$dir/"; then
            say "reloading nginx $i"
            nginx_ctl "$i" -s reload
        else
            say "starting nginx $i of $NGINX_INSTANCES"
            nginx_ctl "$i"
        fi
    done
}

# The numbers of the instances running now, from number $1 on.
nginx_running() {
    local f i
    for f in "$run/nginx.pid" "$run"/nginx-*.pid; do
        [[ -e $f ]] || continue
        i=${f##*/nginx} i=${i%.pid} i=${i#-} i=${i:-1}
        ((i >= $1)) || continue
        ! running "$f" "$(ngx_dir_of "$i")/" || echo "$i"
    done
}

# Stops every running instance from number $1 on.
nginx_down() {
    local i pid
    for i in $(nginx_running "$1"); do
        say "stopping nginx $i"
        pid=$(<"$(ngx_pid_of "$i")")
        nginx_ctl "$i" -s quit
        wait_gone "$pid"
    done
}

# A rotation of the session-ticket keys, then every running instance reloaded to read them
# (their order does not matter: each already accepts the key the others now encrypt with).
cmd_rotate_tickets() {
    local i
    "$repo/Deploy/tls-ticket-keys.sh" rotate "$tickets"
    for i in $(nginx_running 1); do
        say "reloading nginx $i"
        nginx_ctl "$i" -s reload
    done
}

wait_ready() {
    local path=/healthz what="healthz 200"
    if [[ ! -x $WORKER ]]; then
        # Without workers only nginx itself can answer.
        path=/static/ what="nginx answering"
    fi
    local deadline=$((SECONDS + 30)) code
    while ((SECONDS < deadline)); do
        code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$tls/ca.crt" "$url$path" || true)
        if [[ $path == /healthz && $code == 200 ]] || [[ $path != /healthz && $code != 000 ]]; then
            return 0
        fi
        sleep 0.25
    done
    say "timed out after 30 s waiting for $what at $url$path; log tails:" >&2
    local f
    for f in "$logs"/nginx-error.log "$logs"/worker-*.log "$logs"/postgres.log; do
        [[ -f $f ]] && { printf '\n== %s\n' "$f"; tail -n 15 "$f"; } >&2
    done
    exit 1
}

cmd_up() {
    if [[ -z $WORKER_DATABASE ]]; then
        pg_up
        migrate_and_seed
    else
        make_dirs
    fi
    make_tls
    mail_sink_up
    workers_up
    jobs_up
    nginx_up
    events_up
    wait_ready
    cat <<MSG

Tideway dev stack is up: $url
  CA certificate: $tls/ca.crt  (curl --cacert $tls/ca.crt $url/healthz)
  logs: $logs    database: $0 psql
  password for every demo login: tideway-demo
    admin@demo.tideway (globalAdmin)
MSG
    local slug
    for slug in wildaid gabon parquenacionalgalapagos ecuadoriangalapagos; do
        say "    $slug.admin@demo.tideway  $slug.officer1@demo.tideway  $slug.officer2@demo.tideway"
    done
    [[ -x $WORKER ]] || say "  (no worker binary yet: only /static/ works; run make build, then up again)"
}

# A process that ended but waits to be reaped (a zombie) counts as gone: our
# detached processes belong to PID 1, which may reap them late.
alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat:0:1} != Z ]]
}

# Wait up to 15 s for process $1 to end.
wait_gone() {
    local pid=$1 n
    for ((n = 0; n < 150; n++)); do alive "$pid" || return 0; sleep 0.1; done
    say "pid $pid still running after 15 s" >&2
}

cmd_down() {
    local pid
    nginx_down 1
    local f
    for f in "$run"/supervise-*.pid; do
        [[ -e $f ]] || continue
        if running "$f" "$run/"; then
            say "stopping $(basename "$f" .pid) and its child"
            pid=$(<"$f")
            kill -TERM "$pid"
            wait_gone "$pid"
        fi
        rm -f "$f"
    done
    rm -f "$run"/worker-*.sock
    if pg_running; then
        say "stopping PostgreSQL"
        as_pg "$pg_bin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
    fi
}

cmd_status() {
    say "state: $STATE"
    if pg_running; then say "postgres: running (socket in $run)"; else say "postgres: stopped"; fi
    local f i
    for f in "$run"/supervise-*.pid; do
        [[ -e $f ]] || continue
        i=${f##*supervise-} i=${i%.pid}
        local child=$run/worker-$i.pid
        [[ $i != events ]] || child=$run/events.pid
        [[ $i != jobs ]] || child=$run/jobs.pid
        [[ $i != mail ]] || child=$run/mail.pid
        if running "$f" "$child"; then
            say "worker $i: supervisor $(<"$f"), pid $(cat "$child" 2>/dev/null || echo none)"
        else
            say "worker $i: stopped"
        fi
    done
    local n=0
    for f in "$run/nginx.pid" "$run"/nginx-*.pid; do
        [[ -e $f ]] || continue
        i=${f##*/nginx} i=${i%.pid} i=${i#-} i=${i:-1}
        # The port it was started with, from its rendered site: `status` may run without
        # the HTTPS_PORT that `up` had (`make status` after `HTTPS_PORT=9643 make run`).
        local port
        port=$(grep -om1 ':[0-9]* ssl' "$(ngx_dir_of "$i")/tideway.conf" 2>/dev/null | tr -dc 0-9) || true
        if running "$f" "$(ngx_dir_of "$i")/"; then say "nginx $i: running, ${STACK_URL:-https://localhost:${port:-$HTTPS_PORT}}"; n=1; fi
    done
    ((n)) || say "nginx: stopped"
}

case ${1:-} in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    pg-up) pg_up ;;
    migrate) migrate_and_seed ;;
    tls) make_tls ;;
    rotate-tickets) cmd_rotate_tickets ;;
    psql) shift; psql_super tideway "$@" ;;
    *) die "usage: stack.sh up|down|status|pg-up|migrate|tls|rotate-tickets|psql" ;;
esac
