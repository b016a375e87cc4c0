"""Drives Bench/18-import.sh: `tideway import` of a mongodump of 100,000 O-FISH boarding
reports, each with one ChangeHistory entry, against the sync push path's bulk insert rate
(the same reports pushed over HTTPS in batches of 1,000, the push limit). Prints one table;
never fails on numbers."""
import datetime
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import bson
import psycopg2
import requests
from bson import ObjectId

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
ADMIN = os.environ["BENCH_ADMIN_DATABASE"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIDEWAY = os.path.join(REPO, ".build/release/tideway")
REPORTS = int(os.environ.get("BENCH_IMPORT_REPORTS", "100000"))
PUSHED = int(os.environ.get("BENCH_IMPORT_PUSHED", "10000"))
OFFICER, PASSWORD = "gabon.officer1@demo.tideway", "tideway-demo"
NAMES = ["Ana", "Luis", "Marta", "Jean", "Aïcha", "Pedro", "Nadia", "Omar"]
BASE = datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc)


def report(rnd, agency):
    when = BASE + datetime.timedelta(milliseconds=rnd.randrange(400 * 86_400_000))
    crew = lambda: {"name": rnd.choice(NAMES) + " " + rnd.choice(NAMES), "license": f"L-{rnd.randrange(10000)}"}
    return {
        "_id": ObjectId(), "agency": agency, "draft": False, "timestamp": when, "date": when,
        "location": [round(rnd.uniform(-92, -89), 5), round(rnd.uniform(-2, 1), 5)],
        "reportingOfficer": {"name": {"first": rnd.choice(NAMES), "last": rnd.choice(NAMES)}, "email": "o@fish.example"},
        "vessel": {"name": f"Gaviota {rnd.randrange(1000)}", "homePort": "Manta", "nationality": "EC",
                   "permitNumber": f"EC-{rnd.randrange(10000)}",
                   "ems": [{"emsType": "Automatic Identification System (AIS)", "emsDescription": "", "registryNumber": "R-1"}],
                   "lastDelivery": {"date": when, "location": "Manta", "business": "Mercado"}},
        "captain": crew(), "crew": [crew() for _ in range(rnd.randrange(1, 5))],
        "notes": [{"note": "Calm sea, boarding without incident", "photoIDs": []}],
        "inspection": {"activity": {"name": "Fishing"}, "fishery": {"name": "Tuna"}, "gearType": {"name": "Longline"},
                       "actualCatch": [{"fish": "Tuna", "number": rnd.randrange(1, 50), "weight": rnd.randrange(1, 4000) / 4,
                                        "unit": "kg"} for _ in range(rnd.randrange(1, 4))],
                       "summary": {"safetyLevel": {"level": "Green", "amberReason": ""},
                                   "violations": [{"disposition": rnd.choice(["", "Warning", "Citation"]),
                                                   "offence": {"code": "C1", "explanation": "Fishing without a license"},
                                                   "crewMember": crew()}],
                                   "seizures": {"text": ""}}}}


def write_dump(folder, agency):
    rnd = random.Random(18)
    db = os.path.join(folder, "wildaid")
    os.makedirs(db)
    with open(os.path.join(db, "Agency.bson"), "wb") as f:
        f.write(bson.encode({"_id": ObjectId(), "name": agency, "description": "bench", "email": "", "site": "", "active": True}))
    docs = []
    with open(os.path.join(db, "BoardingReports.bson"), "wb") as reports, \
         open(os.path.join(db, "ChangeHistory.bson"), "wb") as history:
        for _ in range(REPORTS):
            doc = report(rnd, agency)
            reports.write(bson.encode(doc))
            older = dict(doc, draft=True)
            history.write(bson.encode({"_id": ObjectId(), "dateCreated": doc["timestamp"] - datetime.timedelta(hours=2),
                                       "originalDocument": older}))
            if len(docs) < PUSHED:
                docs.append(doc)
    return docs


def as_json(value):
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items() if k != "agency"}
    if isinstance(value, list):
        return [as_json(v) for v in value]
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, datetime.datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return value


def push_rate(docs):
    """The same reports (new ids) pushed by a device: batches of 1,000 (the push limit) over HTTPS."""
    http = requests.Session()
    r = http.post(URL + "/api/v1/auth/login", json={"email": OFFICER, "password": PASSWORD}, verify=CA)
    r.raise_for_status()
    http.headers["Authorization"] = "Bearer " + r.json()["accessToken"]
    bodies = [as_json(d) for d in docs]
    ids = [f"bench-import-{uuid.uuid4().hex}" for _ in bodies]
    client = uuid.uuid4().hex
    start = time.perf_counter()
    for i in range(0, len(bodies), 1000):
        changes = [{"changeId": ids[j], "collection": "reports", "partition": "agency=Gabon", "id": ids[j], "op": "insert",
                    "doc": {**bodies[j], "_id": ids[j]}} for j in range(i, min(i + 1000, len(bodies)))]
        r = http.post(URL + "/api/v1/sync/push", json={"clientId": client, "changes": changes}, verify=CA, timeout=600)
        r.raise_for_status()
        assert all(x["status"] == "applied" for x in r.json()["results"]), r.text[:300]
    elapsed = time.perf_counter() - start
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute("delete from app.report_history where report_id = any(%s)", (ids,))
        cur.execute("delete from sync.reports where id = any(%s)", (ids,))
    return len(bodies) / elapsed


def forget(agency):
    partition = "agency=" + agency
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute("delete from app.report_history where partition = %s", (partition,))
        cur.execute("delete from sync.reports where partition = %s", (partition,))


def main():
    agency = f"Bench import {uuid.uuid4().hex[:6]}"
    with tempfile.TemporaryDirectory() as folder:
        print(f"writing a mongodump of {REPORTS:,} reports with their ChangeHistory...", flush=True)
        sample = write_dump(os.path.join(folder, "dump"), agency)
        env = {**os.environ, "TIDEWAY_ADMIN_DATABASE": ADMIN}
        start = time.perf_counter()
        result = subprocess.run([TIDEWAY, "import", "--quiet", "--report", os.path.join(folder, "report.json"),
                                 os.path.join(folder, "dump")], env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        # The largest child so far: the import (the dump was written in this process).
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if result.returncode != 0:
            print(result.stdout, result.stderr, file=sys.stderr)
            raise SystemExit("tideway import failed")
        again = time.perf_counter()
        subprocess.run([TIDEWAY, "import", "--quiet", "--report", os.path.join(folder, "report2.json"),
                        os.path.join(folder, "dump")], env=env, capture_output=True, text=True, check=True)
        second = time.perf_counter() - again
    forget(agency)
    import_rate = REPORTS / elapsed
    push = statistics.median(push_rate(sample) for _ in range(2))
    print()
    print(f"{'benchmark':34} | {'Tideway':52} | {'baseline':44} | {'ratio':18} | target")
    print("-" * 170)
    print(f"{'import of ' + format(REPORTS, ',') + ' reports + history':34} | "
          f"{f'{import_rate:.0f} reports/s ({elapsed:.0f} s, +{REPORTS:,} history, {peak_mb:.0f} MB peak)':52} | "
          f"{f'push path {push:.0f} reports/s ({len(sample):,} in batches of 1,000)':44} | "
          f"{f'{100 * import_rate / push:.0f}% of push':18} | aim >= 90%")
    print(f"{'second run (nothing to change)':34} | {f'{second:.0f} s, {REPORTS / second:.0f} reports/s checked':52} | "
          f"{'':44} | {'':18} |")


if __name__ == "__main__":
    main()
