#!/usr/bin/env bash
# Photo throughput through nginx: upload (PUT /api/v1/blobs/<id>, streamed by a worker to
# the blob store) and download (GET, authorized by a worker, sent by nginx through
# X-Accel-Redirect) of a 2 MB photo, against nginx serving a static file of the same size
# from /static/. Bounded runs (wrk, a few seconds each); prints a table; never fails on
# numbers. Needs the stack of Deploy/dev/bench.sh (TIDEWAY_BENCH_URL, _CA, _STATE).
set -euo pipefail
source "$(dirname "$0")/common.sh"
url=$TIDEWAY_BENCH_URL ca=$TIDEWAY_BENCH_CA
seconds=${BENCH_SECONDS:-3}
connections=${BENCH_CONNECTIONS:-16}
size=$((2 * 1024 * 1024))
command -v wrk >/dev/null || { echo "blobs: wrk not installed, skipped"; exit 0; }

work=$(mktemp -d)
static_name=.bench-blob-$$.bin
trap 'rm -rf "$work" "$repo/Static/$static_name"' EXIT

# A 2 MB "photo": JPEG magic bytes, then noise (incompressible, like a real photo).
{ printf '\xff\xd8\xff\xe0'; head -c $((size - 4)) /dev/urandom; } >"$work/photo.jpg"
cp "$work/photo.jpg" "$repo/Static/$static_name"

# A signed-in officer and photo documents to attach the bytes to (uploads go to
# different photos, as from many devices; one photo's uploads queue on its row lock).
read -r token photos < <(/usr/bin/python3 - "$url" "$ca" <<'PY'
import sys, uuid, requests
url, ca = sys.argv[1], sys.argv[2]
r = requests.post(url + "/api/v1/auth/login", json={"email": "gabon.officer1@demo.tideway", "password": "tideway-demo"}, verify=ca)
tok = r.json()["accessToken"]
ids = ["bench-" + uuid.uuid4().hex for _ in range(64)]
r = requests.post(url + "/api/v1/sync/push", headers={"Authorization": "Bearer " + tok}, verify=ca, json={
    "clientId": "bench", "changes": [{"changeId": pid, "collection": "photos", "partition": "agency=Gabon", "id": pid,
                                      "op": "insert", "doc": {"date": "2026-01-01T00:00:00Z"}} for pid in ids]})
assert all(x["status"] == "applied" for x in r.json()["results"]), r.text
print(tok, ",".join(ids))
PY
)

cat >"$work/put.lua" <<'LUA'
local f = assert(io.open(os.getenv("BENCH_FILE"), "rb"))
wrk.method = "PUT"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "image/jpeg"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_TOKEN")
local ids, n = {}, 0
for id in string.gmatch(os.getenv("BENCH_PHOTOS"), "[^,]+") do table.insert(ids, id) end
request = function()
    n = n + 1
    return wrk.format(nil, "/api/v1/blobs/" .. ids[n % #ids + 1])
end
LUA
photo=${photos%%,*}

# Requests per second of one wrk run; "-" when wrk saw errors.
run() {
    local out
    out=$(BENCH_FILE=$work/photo.jpg BENCH_TOKEN=$token BENCH_PHOTOS=$photos wrk -t2 -c"$connections" -d"${seconds}s" --timeout 10s "$@" 2>&1) || true
    if grep -q 'Non-2xx\|Socket errors' <<<"$out"; then
        echo "$out" | grep 'Non-2xx\|Socket errors' >&2
    fi
    awk '/^Requests\/sec:/ { print $2 }' <<<"$out"
}
mbps() { awk -v r="${1:-0}" -v s="$size" 'BEGIN { printf "%.1f", r * s / 1e6 }'; }

# One upload first, so the download has bytes to send.
curl -sf --cacert "$ca" -X PUT -H "Authorization: Bearer $token" -H "Content-Type: image/jpeg" \
    --data-binary "@$work/photo.jpg" "$url/api/v1/blobs/$photo" >/dev/null
curl -sf --cacert "$ca" -H "Authorization: Bearer $token" "$url/api/v1/blobs/$photo" -o "$work/back.jpg"
cmp -s "$work/photo.jpg" "$work/back.jpg" || { echo "blobs: downloaded bytes differ from the upload" >&2; exit 1; }

# Static and blob downloads alternate, and each figure is the median of its rounds, so
# that load from elsewhere on the machine weighs on both sides alike.
rounds=${BENCH_ROUNDS:-3}
statics=() downs=()
for ((i = 0; i < rounds; i++)); do
    statics+=("$(run "$url/static/$static_name")")
    downs+=("$(run -H "Authorization: Bearer $token" "$url/api/v1/blobs/$photo")")
done
up_rps=$(run -s "$work/put.lua" "$url/api/v1/blobs/$photo")
static_rps=$(printf '%s\n' "${statics[@]}" | median) down_rps=$(printf '%s\n' "${downs[@]}" | median)

static=$(mbps "$static_rps") down=$(mbps "$down_rps") up=$(mbps "$up_rps")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.0f%%", 100 * a / b; else print "n/a" }'; }
printf '\nblobs: 2 MB photos, %s connections, %s s per run, median of %s rounds (upload: 1 run)\n' "$connections" "$seconds" "$rounds"
printf '%-44s %10s %10s %8s\n' "what" "req/s" "MB/s" "vs static"
printf '%-44s %10s %10s %8s\n' "static file from nginx (baseline)" "$static_rps" "$static" "100%"
printf '%-44s %10s %10s %8s\n' "GET /api/v1/blobs/<id> (X-Accel-Redirect)" "$down_rps" "$down" "$(ratio "$down" "$static")"
printf '%-44s %10s %10s %8s\n' "PUT /api/v1/blobs/<id> (streamed, fsync)" "$up_rps" "$up" "$(ratio "$up" "$static")"
echo "(download aims at >= 80% of the static baseline; upload is compared with the same baseline)"
