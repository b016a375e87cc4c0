"""What several Bench/*.py scripts need alike, in one place: an HTTPS session that trusts
the stack's CA, a back-office session signed in through the login form, a percentile of a
sample, the median wall time of a call, a stack settled before a measurement. The scripts import it from Bench/ (their own
folder, first on sys.path when run as `python3 Bench/x.py`)."""

import os
import re
import statistics
import time
import uuid

import psycopg2
import requests

from proc_counters import TICK, family_ticks, processes, read_pid


def https_session(ca):
    """A requests session that trusts `ca`, the stack's own CA. trust_env off: a
    REQUESTS_CA_BUNDLE in the environment would win over `verify` otherwise."""
    s = requests.Session()
    s.trust_env = False
    s.verify = ca
    return s


def api_token(url, ca, email, password="tideway-demo"):
    """An access token of `email` (POST /api/v1/auth/login on `url`)."""
    r = https_session(ca).post(url + "/api/v1/auth/login", json={"email": email, "password": password})
    r.raise_for_status()
    return r.json()["accessToken"]


def push_draft_report(url, ca, token, client_id, partition, prefix):
    """One new draft report pushed to `partition` through `url`; the time it was sent
    (time.time(), taken before the request) for write -> event figures."""
    doc_id = f"{prefix}-{uuid.uuid4().hex}"
    sent = time.time()
    r = https_session(ca).post(url + "/api/v1/sync/push", headers={"Authorization": f"Bearer {token}"},
                               json={"clientId": client_id, "changes": [{"changeId": doc_id, "collection": "reports",
                                     "partition": partition, "id": doc_id, "op": "insert",
                                     "doc": {"_id": doc_id, "timestamp": "2024-05-01T10:00:00Z", "draft": True}}]})
    r.raise_for_status()
    return sent


def signed_in(url, ca, email, password="tideway-demo"):
    """A back-office session of `email`, signed in through /login with its CSRF token."""
    s = https_session(ca)
    page = s.get(url + "/login")
    page.raise_for_status()
    csrf = re.search(r'name="_csrf" value="([^"]*)"', page.text).group(1)
    s.post(url + "/login", data={"_csrf": csrf, "email": email, "password": password},
           allow_redirects=False).raise_for_status()
    return s


def pct(values, q):
    """The q-quantile (0 < q < 1) of `values` by nearest rank: the value at index
    int(n * q) of the sorted sample, the last one at most; nan for an empty sample."""
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))] if values else float("nan")


def median_time(fn, runs):
    """Median seconds of `runs` calls of fn(), one after another."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def settle(admin_dsn, state, before, limit=180):
    """Lets the work that came before end, so that what follows measures a stack in steady
    state: VACUUM ANALYZE (what earlier writes left, which autovacuum would otherwise do
    during the measurement, and, after a start, its first pass: docs/performance/round-17.md,
    "The read rows on a settled stack"), a CHECKPOINT (the pages that vacuum dirtied, which
    the kernel would otherwise write back ~30 s later, while the commits wait for their
    flush), then waits until no autovacuum worker runs and the job runner and PostgreSQL are
    idle (under 5% of a core over 3 s; the job runner folds new reports into the summaries),
    `limit` s at most. The measurement still counts whatever runs in it. Prints what it
    did, naming what follows (`before`)."""
    def busy_seconds():  # CPU seconds so far of the job runner and PostgreSQL (its ended backends too)
        table = processes()
        return (family_ticks(table, read_pid(os.path.join(state, "run", "jobs.pid")))
                + family_ticks(table, read_pid(os.path.join(state, "pg", "postmaster.pid")), reaped=True)) / TICK

    started = time.time()
    db = psycopg2.connect(admin_dsn)
    try:
        db.autocommit = True
        cur = db.cursor()
        cur.execute("vacuum analyze")
        vacuumed = time.time() - started
        cur.execute("checkpoint")
        checkpointed = time.time() - started - vacuumed
        quiet = None
        while time.time() - started < limit:
            cur.execute("select count(*) from pg_stat_activity where backend_type = 'autovacuum worker'")
            vacuuming = cur.fetchone()[0]
            first = busy_seconds()
            time.sleep(3)
            busy = (busy_seconds() - first) / 3
            if not vacuuming and busy < 0.05:
                quiet = busy
                break
    finally:
        db.close()
    state_now = (f"job runner and PostgreSQL at {quiet:.1%} of a core" if quiet is not None
                 else f"NOT quiet within {limit} s (what follows counts what still ran)")
    print(f"settled before {before}: VACUUM ANALYZE {vacuumed:.0f} s, CHECKPOINT {checkpointed:.0f} s, then {state_now}, "
          f"{time.time() - started:.0f} s in all", flush=True)
