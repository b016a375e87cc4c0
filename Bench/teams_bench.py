"""Drives Bench/17-teams.sh. A fresh agency and a team of it get the same 2,000 task
documents (agencyTasks in the agency, tasks in the team); a fresh officer of the agency is
granted write on the team. The grants table is filled to 100,000 rows (1,000 teams with 100
grants each). Measured over HTTPS through nginx, medians of several runs:
  pull: the whole partition from a null cursor (2 pages of 1,000);
  idle poll: a pull whose cursor stands at the end (one app.unchanged statement);
for the agency partition, then the team partition with the caller holding 1 grant, then
1,000 grants. Ratios are team / agency; never fails on numbers."""
import json
import os
import statistics
import subprocess
import time
import uuid

import psycopg2
import requests

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
ADMIN = os.environ["BENCH_ADMIN_DATABASE"]
REPO = os.environ["BENCH_REPO"]
DOCS, PADDING_TEAMS, PER_TEAM = 2000, 1000, 100
PULLS, POLLS = 15, 400


def db():
    conn = psycopg2.connect(ADMIN)
    conn.autocommit = True
    return conn


def setup():
    key = "Bench teams " + uuid.uuid4().hex[:6]
    email = f"bench-{uuid.uuid4().hex[:8]}@bench.tideway"
    # The padding teams belong to an agency of their own, so that their listings in the
    # teams' directory (which live in the owning agency's partition) stay out of the agency
    # partition measured here: it holds the tasks and the one listing of the caller's team.
    pad = key + " pad"
    with db() as conn, conn.cursor() as cur:
        cur.execute("insert into app.agencies (key, name) values (%s, %s), (%s, %s)", (key, key, pad, pad))
    subprocess.run([os.path.join(REPO, ".build/release/tideway"), "create-user", "--database", ADMIN, "--email", email,
                    "--role", "officer", "--agency", key, "--first-name", "Bench", "--last-name", "Officer"],
                   check=True, env={**os.environ, "TIDEWAY_PASSWORD": "tideway-bench"}, capture_output=True)
    with db() as conn, conn.cursor() as cur:
        cur.execute("select id::text from app.users where email = %s", (email,))
        uid = cur.fetchone()[0]
        cur.execute("insert into app.teams (agency, name) values (%s, 'Bench crew') returning id::text", (key,))
        team = "team=" + cur.fetchone()[0]
        agency = "agency=" + key
        tag = uuid.uuid4().hex[:6]
        docs = [{"_id": f"b{tag}-{n:05d}", "title": f"Task {n}", "status": "open", "description": "x" * 200,
                 "dueDate": "2026-12-01T00:00:00Z", "mpa": "Reef"} for n in range(DOCS)]
        payload = json.dumps(docs)
        # The agency's copy has its own ids: the team's copies are not assignments here.
        cur.execute("""insert into sync.agency_tasks (id, partition, doc, seq)
                       select 'a-' || (d->>'_id'), %s, d || jsonb_build_object('_id', 'a-' || (d->>'_id')), app.tick(%s)
                         from jsonb_array_elements(%s::jsonb) d""", (agency, agency, payload))
        cur.execute("""insert into sync.tasks (id, partition, doc, seq)
                       select 't-' || (d->>'_id'), %s, d || jsonb_build_object('_id', 't-' || (d->>'_id')), app.tick(%s)
                         from jsonb_array_elements(%s::jsonb) d""", (team, team, payload))
        cur.execute("insert into app.grants (partition, grantee_kind, grantee, \"right\") values (%s, 'user', %s, 'write')",
                    (team, uid))
        # Padding: 1,000 other teams, 100 grants each to users that are not the caller.
        cur.execute("""with t as (insert into app.teams (agency, name) select %s, 'Pad ' || n from generate_series(1, %s) n
                                  returning id)
                       insert into app.grants (partition, grantee_kind, grantee, "right")
                       select 'team=' || t.id, 'user', gen_random_uuid()::text, 'read' from t, generate_series(1, %s)""",
                    (pad, PADDING_TEAMS, PER_TEAM))
        cur.execute("select count(*) from app.grants")
        total = cur.fetchone()[0]
        cur.execute("analyze app.grants; analyze app.teams")
    return pad, email, uid, agency, team, total


def settle():
    """The grants and the teams' directory listings they rewrote, settled as in steady state,
    so that autovacuum does not run during the measurement that follows (VACUUM needs a
    connection outside any transaction block)."""
    conn = db()
    try:
        conn.cursor().execute("vacuum (analyze) app.grants, sync.team_directory, app.partition_clocks")
    finally:
        conn.close()


def more_grants(pad, uid, n):
    """The caller gets `n - 1` more grants (read, on padding teams): n in all."""
    with db() as conn, conn.cursor() as cur:
        cur.execute("""insert into app.grants (partition, grantee_kind, grantee, "right")
                       select 'team=' || id, 'user', %s, 'read' from app.teams where agency = %s and name like 'Pad %%'
                        order by id limit %s""", (uid, pad, n - 1))
        cur.execute("select count(*) from app.grants where grantee = %s", (uid,))
        held = cur.fetchone()[0]
        cur.execute("select count(*) from app.grants")
        return held, cur.fetchone()[0]


class Api:
    def __init__(self, email):
        self.http = requests.Session()
        self.http.trust_env = False
        self.http.verify = CA
        self.http.headers["Accept-Encoding"] = "identity"
        r = self.http.post(URL + "/api/v1/auth/login", json={"email": email, "password": "tideway-bench"})
        r.raise_for_status()
        self.http.headers["Authorization"] = "Bearer " + r.json()["accessToken"]

    def pull(self, partition, cursor):
        r = self.http.post(URL + "/api/v1/sync/pull", json={"partitions": {partition: cursor}, "limit": 1000})
        r.raise_for_status()
        return r.json()["partitions"][partition]


def full_pull(api, partition):
    cursor, n = None, 0
    while True:
        entry = api.pull(partition, cursor)
        assert entry["status"] == "ok", entry
        n += len(entry["changes"])
        cursor = entry["cursor"]
        if not entry["more"]:
            return cursor, n


def measure(api, partition, expected=DOCS):
    times = []
    for _ in range(PULLS):
        start = time.perf_counter()
        cursor, n = full_pull(api, partition)
        times.append(time.perf_counter() - start)
    assert n == expected, (partition, n)
    polls = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(POLLS):
            entry = api.pull(partition, cursor)
            assert entry["status"] == "ok" and not entry["changes"]
        polls.append((time.perf_counter() - start) / POLLS)
    return statistics.median(times), statistics.median(polls)


def main():
    pad, email, uid, agency, team, total = setup()
    api = Api(email)
    print(f"grants table: {total:,} rows; {DOCS:,} documents in each partition; medians of {PULLS} pulls and 3×{POLLS} idle polls")
    full_pull(api, agency), full_pull(api, team)  # warm up
    # The agency partition: the tasks and the caller's team's listing in the teams' directory.
    agency_pull, agency_poll = measure(api, agency, DOCS + 1)
    rows = [("agency partition", agency_pull, agency_poll, 1)]
    for n in (1, 1000):
        held, total = more_grants(pad, uid, n) if n > 1 else (1, total)
        settle()
        pull, poll = measure(api, team)
        rows.append((f"team partition, caller holds {held:,} grants", pull, poll, held))
    print(f"{'':44} {'pull (ms)':>10} {'ratio':>7} {'idle poll (ms)':>15} {'ratio':>7}")
    for name, pull, poll, _ in rows:
        print(f"{name:44} {pull * 1000:10.1f} {pull / agency_pull:7.2f} {poll * 1000:15.2f} {poll / agency_poll:7.2f}")
    print("aim: every team ratio within 1.10 of the agency partition's")


if __name__ == "__main__":
    main()
