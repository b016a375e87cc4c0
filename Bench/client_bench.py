"""Drives Bench/16-client.sh: the tideway-device binary (TidewayClient) against the
server's own rates, on an agency of its own. Medians of a few runs; never fails on numbers."""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import queue
import time
import uuid

import psycopg2
import requests

from bench_support import median_time

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
ADMIN = os.environ["BENCH_ADMIN_DATABASE"]
REPO = os.environ["BENCH_REPO"]
DEVICE = os.path.join(REPO, ".build/release/tideway-device")
TIDEWAY = os.path.join(REPO, ".build/release/tideway")
PASSWORD = "tideway-demo"
REPORTS = int(os.environ.get("BENCH_CLIENT_REPORTS", "5000"))
SEA_REPORTS = int(os.environ.get("BENCH_CLIENT_SEA_REPORTS", "150"))
SEA_PHOTOS = int(os.environ.get("BENCH_CLIENT_PHOTOS", "300"))
RUNS = int(os.environ.get("BENCH_RUNS", "3"))


def new_officer(agency):
    email = f"bench-{uuid.uuid4().hex[:10]}@bench.tideway"
    subprocess.run([TIDEWAY, "create-user", "--database", ADMIN, "--email", email, "--role", "officer",
                    "--first-name", "Bench", "--last-name", "Officer", "--agency", agency],
                   check=True, env={**os.environ, "TIDEWAY_PASSWORD": PASSWORD}, capture_output=True)
    return email


def new_agency():
    key = "Bench " + uuid.uuid4().hex[:8]
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute("insert into app.agencies (key, name) values (%s, %s)", (key, key))
    return key


class Device:
    def __init__(self, folder):
        self.folder = folder

    def run(self, *args):
        verb = 2 if args[0] == "chat" else 1
        done = subprocess.run([DEVICE, *args[:verb], "--store", self.folder, "--url", URL, "--ca", CA, *args[verb:]],
                              capture_output=True, text=True, timeout=3600)
        assert done.returncode == 0, (args, done.stderr)
        return json.loads(done.stdout) if done.stdout.strip() else None


class Api:
    def __init__(self, email):
        self.http = requests.Session()
        self.http.trust_env = False
        self.http.verify = CA
        r = self.http.post(URL + "/api/v1/auth/login", json={"email": email, "password": PASSWORD})
        r.raise_for_status()
        self.http.headers["Authorization"] = "Bearer " + r.json()["accessToken"]

    def pull_all(self, partition):
        cursor, pages, changes = None, 0, 0
        while True:
            r = self.http.post(URL + "/api/v1/sync/pull", json={"partitions": {partition: cursor}, "limit": 1000},
                               timeout=300)
            r.raise_for_status()
            answer = r.json()["partitions"][partition]
            pages += 1
            changes += len(answer["changes"])
            cursor = answer["cursor"]
            if not answer["more"]:
                return changes

    def push(self, changes):
        r = self.http.post(URL + "/api/v1/sync/push", json={"clientId": "bench-" + uuid.uuid4().hex, "changes": changes},
                           timeout=600)
        r.raise_for_status()
        assert all(x["status"] == "applied" for x in r.json()["results"])


def jpeg_like(size):
    return b"\xff\xd8\xff\xe0" + os.urandom(size - 4)


def main():
    work = tempfile.mkdtemp(prefix="tideway-client-bench-")
    try:
        agency = new_agency()
        partition = f"agency={agency}"
        email = new_officer(agency)
        print(f"client bench: agency {agency!r}, filing {REPORTS} reports through a device...")
        filer = Device(os.path.join(work, "filer"))
        filer.run("login", email)
        filer.run("open", partition)
        filer.run("file-report", "--count", str(REPORTS))
        filer.run("sync")
        api = Api(email)
        assert api.pull_all(partition) == REPORTS

        # (a) initial sync
        server = median_time(lambda: api.pull_all(partition), RUNS)
        folders = iter(range(1000))

        def device_sync():
            device = Device(os.path.join(work, f"fresh-{next(folders)}"))
            device.run("login", email)
            device.run("open", partition)
            start = time.perf_counter()
            report = device.run("sync", "--no-photos")
            assert report["pulled"] == REPORTS, report
            return time.perf_counter() - start
        device = statistics.median(device_sync() for _ in range(RUNS))

        # (b) back from sea
        sizes = [1_000_000 + (i * 7919 % 2_000_001) for i in range(SEA_PHOTOS)]
        megabytes = sum(sizes) / 1e6
        sea = Device(os.path.join(work, "sea"))
        sea.run("login", email)
        sea.run("open", partition)
        sea.run("sync", "--no-photos")
        sea.run("offline")
        per_report = max(1, SEA_PHOTOS // max(1, SEA_REPORTS))
        filed = sea.run("file-report", "--count", str(SEA_REPORTS), "--photos", str(per_report),
                        "--photo-size", "1000000", "--photo-size-max", "3000000")
        sea.run("online")
        start = time.perf_counter()
        report = sea.run("sync")
        sea_total = time.perf_counter() - start
        sea_docs = report["pushed"]
        sea_mb = report["photos"]["bytes"] / 1e6
        sea_records, sea_photos = report["pushSeconds"], report["seconds"]["photos"]
        assert report["photos"]["uploaded"] == len(filed["photos"]), report

        # The server's own rates: one push of as many documents, then PUTs of as many photos.
        template = sea.run("get", "reports", filed["ids"][0])["doc"]
        ids = [uuid.uuid4().hex[:24] for _ in range(SEA_REPORTS)]
        photo_ids = [uuid.uuid4().hex[:24] for _ in range(len(filed["photos"]))]
        changes = [{"changeId": i, "collection": "reports", "partition": partition, "id": i, "op": "insert",
                    "doc": dict(template, _id=i)} for i in ids]
        changes += [{"changeId": p, "collection": "photos", "partition": partition, "id": p, "op": "insert",
                     "doc": {"_id": p, "date": "2026-01-01T00:00:00Z"}} for p in photo_ids]
        start = time.perf_counter()
        for i in range(0, len(changes), 500):
            api.push(changes[i:i + 500])
        server_push = time.perf_counter() - start
        blobs = [jpeg_like(sizes[i % len(sizes)]) for i in range(len(photo_ids))]
        server_mb = sum(len(b) for b in blobs) / 1e6
        start = time.perf_counter()
        for pid, data in zip(photo_ids, blobs):
            r = api.http.put(URL + "/api/v1/blobs/" + pid, data=data, headers={"Content-Type": "image/jpeg"}, timeout=300)
            r.raise_for_status()
        server_put = time.perf_counter() - start

        # (c) back office -> device store, through the event stream
        watcher = Device(os.path.join(work, "watcher"))
        watcher.run("login", email)
        watcher.run("open", partition)
        watcher.run("sync", "--no-photos")
        process = subprocess.Popen([DEVICE, "watch", "--store", watcher.folder, "--url", URL, "--ca", CA, "--seconds", "120"],
                                   stdout=subprocess.PIPE, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(json.loads(x)) for x in process.stdout], daemon=True).start()
        opened = synced = False
        while not (opened and synced):
            event = lines.get(timeout=60)
            opened |= event["event"] == "open"
            synced |= event["event"] == "synced"
        latencies = []
        target = filed["ids"][0]
        for n in range(30):
            time.sleep(0.1)
            sent = time.time()
            api.push([{"changeId": uuid.uuid4().hex, "collection": "reports", "partition": partition, "id": target,
                       "op": "update", "patch": {"vessel": {"homePort": f"Port {n}"}}}])
            while True:
                event = lines.get(timeout=60)
                if event["event"] == "synced" and event["pulled"] > 0 and event["at"] >= sent:
                    latencies.append(event["at"] - sent)
                    break
        process.kill()
        latencies.sort()
        p50 = latencies[len(latencies) // 2]
        p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]

        print(f"\nclient (TidewayClient via tideway-device), median of {RUNS} runs where repeated")
        print(f"{'what':58} {'device':>10} {'server':>10} {'ratio':>8} {'aim':>6}")
        print(f"{'(a) initial sync of %d reports (s)' % REPORTS:58} {device:10.2f} {server:10.2f} "
              f"{device / server:7.2f}x {'<= 2x':>6}")
        print(f"{'(b) back from sea: %d docs, push (docs/s)' % sea_docs:58} {sea_docs / sea_records:10.0f} "
              f"{len(changes) / server_push:10.0f} {100 * (sea_docs / sea_records) / (len(changes) / server_push):7.0f}% {'>= 80%':>6}")
        print(f"{'(b) back from sea: %d photos, %.0f MB (MB/s)' % (len(filed['photos']), sea_mb):58} {sea_mb / sea_photos:10.1f} "
              f"{server_mb / server_put:10.1f} {100 * (sea_mb / sea_photos) / (server_mb / server_put):7.0f}% {'>= 80%':>6}")
        print(f"{'(b) back from sea: time to fully synced (s)':58} {sea_total:10.2f}")
        print(f"{'(c) back-office change -> device store, p50 / p99 (ms)':58} {1000 * p50:10.0f} {1000 * p99:10.0f}")
        print("(server: a plain HTTPS client of the same API: pulls of 1,000, pushes of 500, one PUT at a time)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
