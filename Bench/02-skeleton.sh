#!/usr/bin/env bash
# The walking skeleton's benchmark (issue 2), against the stack Deploy/dev/bench.sh
# started (TIDEWAY_BENCH_URL, TIDEWAY_BENCH_CA, TIDEWAY_BENCH_STATE):
#
#  (a) GET /healthz through nginx to a worker (and its `select 1`) vs nginx serving a
#      static file (Static/tideway.css): the cost of the FastCGI round trip.
#  (b) GET /api/v1/me through nginx and a worker vs pgbench running the very statements
#      the worker sends, the same way: one pipeline (extended protocol, one sync) of
#        begin read only; select * from app.authenticate($1, $2);
#        select id, email, display_name, role, agency from app.users where id = app.uid(); commit
#      as tideway_worker over the unix socket: the cost of everything that is not PostgreSQL.
#
# wrk and pgbench on loopback, BENCH_RUNS (3) runs of BENCH_SECONDS (10) s each with
# BENCH_CONNECTIONS (32) connections and 2 threads, after a short warm-up; medians of
# requests/s and of p99. Prints figures and ratios against the issue's aims; never fails
# on numbers (only when it cannot measure).
set -euo pipefail
source "$(dirname "$0")/common.sh"
url=$TIDEWAY_BENCH_URL ca=$TIDEWAY_BENCH_CA state=$TIDEWAY_BENCH_STATE
runs=${BENCH_RUNS:-3} seconds=${BENCH_SECONDS:-10} connections=${BENCH_CONNECTIONS:-32} warmup=2
email=${BENCH_EMAIL:-gabon.officer1@demo.tideway}

for tool in wrk pgbench curl python3; do
    command -v "$tool" >/dev/null || { echo "02-skeleton.sh: $tool not found (make deps)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# wrk prints latencies as 812.00us, 1.20ms or 1.05s; answers milliseconds.
to_ms() { awk '{ v = $1 + 0; if ($1 ~ /us$/) v /= 1000; else if ($1 ~ /ms$/) v = v; else if ($1 ~ /m$/) v *= 60000; else if ($1 ~ /s$/) v *= 1000; print v }'; }

# wrk_runs <label> <path> [header]: prints "<label>\t<req/s>\t<p99 ms>" (medians).
wrk_runs() {
    local label=$1 path=$2 header=${3:-} i rps=() p99=() args=(-t2 "-c$connections" --latency)
    [[ -z $header ]] || args+=(-H "$header")
    wrk "${args[@]}" "-d${warmup}s" "$url$path" >/dev/null
    for ((i = 1; i <= runs; i++)); do
        wrk "${args[@]}" "-d${seconds}s" "$url$path" >"$tmp/wrk.out"
        if grep -q 'Non-2xx' "$tmp/wrk.out"; then
            echo "  warning: $label: $(grep 'Non-2xx' "$tmp/wrk.out")" >&2
        fi
        rps+=("$(awk '/^Requests\/sec:/ { print $2 }' "$tmp/wrk.out")")
        p99+=("$(awk '$1 == "99%" { print $2 }' "$tmp/wrk.out" | to_ms)")
        echo "  $label run $i: ${rps[-1]} req/s, p99 ${p99[-1]} ms" >&2
    done
    printf '%s\t%s\t%s\n' "$label" "$(printf '%s\n' "${rps[@]}" | median)" "$(printf '%s\n' "${p99[@]}" | median)"
}

# pgbench_runs <label> <script>: the same, from pgbench's tps and its per-transaction log.
pgbench_runs() {
    local label=$1 script=$2 i rps=() p99=()
    local args=(-n -M extended "-c$connections" -j2 -f "$script" -D "hash=$token_hash" -D kind=access
                -h "$state/run" -U tideway_worker tideway)
    pgbench "${args[@]}" "-T$warmup" >/dev/null 2>&1
    for ((i = 1; i <= runs; i++)); do
        rm -f "$tmp"/pgb.*
        pgbench "${args[@]}" "-T$seconds" --log --log-prefix="$tmp/pgb" >"$tmp/pgbench.out" 2>&1 ||
            { cat "$tmp/pgbench.out" >&2; exit 1; }
        rps+=("$(awk '/^tps = / { print $3; exit }' "$tmp/pgbench.out")")
        # Log lines: client, transaction, latency (us), script, epoch s, us.
        p99+=("$(cat "$tmp"/pgb.* | awk '{ print $3 / 1000 }' | sort -g |
                 awk '{ v[NR] = $1 } END { i = int(NR * 0.99); if (i < 1) i = 1; print v[i] }')")
        echo "  $label run $i: ${rps[-1]} tx/s, p99 ${p99[-1]} ms" >&2
    done
    printf '%s\t%s\t%s\n' "$label" "$(printf '%s\n' "${rps[@]}" | median)" "$(printf '%s\n' "${p99[@]}" | median)"
}

# A real access token, and its hash as the worker binds it (bytea in hex text form).
curl -sf --cacert "$ca" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$email\",\"password\":\"tideway-demo\",\"device\":\"bench\"}" \
    "$url/api/v1/auth/login" >"$tmp/login.json" || { echo "02-skeleton.sh: cannot sign in as $email" >&2; exit 1; }
token=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["accessToken"])' <"$tmp/login.json")
token_hash='\x'$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)
code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer $token" "$url/api/v1/me")
[[ $code == 200 ]] || { echo "02-skeleton.sh: /api/v1/me answered $code" >&2; exit 1; }

# Exactly the worker's statements for /api/v1/me (MeRoute, RequestContext.withAPIClaims,
# Transaction): one pipeline, parameters bound as text.
cat >"$tmp/me.sql" <<'SQL'
\startpipeline
begin read only;
select * from app.authenticate(:hash, :kind);
select id, email, display_name, role, agency from app.users where id = app.uid();
commit;
\endpipeline
SQL
# Prove the script runs and finds the user before timing it.
pgbench -n -M extended -c1 -t1 -f "$tmp/me.sql" -D "hash=$token_hash" -D kind=access \
    -h "$state/run" -U tideway_worker tideway >"$tmp/check.out" 2>&1 ||
    { cat "$tmp/check.out" >&2; echo "02-skeleton.sh: the pgbench script fails" >&2; exit 1; }

echo "skeleton benchmark: $runs runs x ${seconds}s, $connections connections, 2 threads; medians ($(nproc) cores, all on one machine)"
{
    wrk_runs "healthz (nginx > worker > select 1)" /healthz
    wrk_runs "static file (nginx)" /static/tideway.css
    wrk_runs "GET /api/v1/me (nginx > worker > PG)" /api/v1/me "Authorization: Bearer $token"
    pgbench_runs "pgbench, the same statements" "$tmp/me.sql"
} >"$tmp/results.tsv"

awk -F'\t' '
    { label[NR] = $1; rps[NR] = $2; p99[NR] = $3 }
    END {
        printf "\n%-40s %12s %10s\n", "", "requests/s", "p99 ms"
        for (i = 1; i <= NR; i++) printf "%-40s %12.0f %10.2f\n", label[i], rps[i], p99[i]
        printf "\nhealthz / static nginx:     %5.1f%%  (aim >= 45%%)\n", 100 * rps[1] / rps[2]
        printf "worker /api/v1/me / pgbench: %5.1f%%  (aim >= 95%%)\n", 100 * rps[3] / rps[4]
    }' "$tmp/results.tsv"
