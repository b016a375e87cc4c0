"""Drives Bench/08-dashboards.sh: tops the duty log up to ~20,000 changes, then times each
dashboard page (sequential GETs through nginx, after a warm-up) and prints p50/p95 of the
server time against the aim of 150 ms. Never fails on numbers."""
import os
import statistics
import time

import psycopg2

from bench_support import https_session, pct, signed_in

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
ADMIN = os.environ["BENCH_ADMIN_DATABASE"]
RUNS = int(os.environ.get("BENCH_DASHBOARD_RUNS", "40"))
DUTY_TARGET = 20_000


def top_up_duty_changes():
    """Demo seeding writes some duty changes; add past shifts (On, Off 8 h later) of the
    demo officers until there are about 20,000, spread over the last 12 months."""
    with psycopg2.connect(ADMIN) as conn, conn.cursor() as cur:
        cur.execute("select count(*) from sync.duty_changes")
        have = cur.fetchone()[0]
        missing = DUTY_TARGET - have
        if missing > 0:
            cur.execute("""
                with officers as (
                    select row_number() over (order by email) - 1 as i, lower(email) as email, agency
                      from app.users where role = 'officer' and agency is not null),
                n as (select count(*) as k from officers),
                shifts as (
                    select g, o.email, o.agency,
                           now() - interval '365 days' + (g * interval '1 day' * 365 / greatest(%(shifts)s, 1)) as at
                      from generate_series(0, %(shifts)s - 1) g, n, officers o where o.i = g %% n.k)
                insert into sync.duty_changes (id, partition, doc, seq)
                select 'bench-duty-' || g || '-' || s.status, 'agency=' || agency,
                       jsonb_build_object('_id', 'bench-duty-' || g || '-' || s.status, 'user', jsonb_build_object('email', email),
                                          'status', s.status,
                                          'date', to_char((at + s.after) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')),
                       app.tick('agency=' || agency)
                  from shifts, (values ('On Duty', interval '0'), ('Off Duty', interval '8 hours')) s(status, after)
                on conflict do nothing""", {"shifts": missing // 2})
    # What autovacuum does in a running system: the visibility map lets the aggregates be
    # index-only scans right after the bulk load.
    conn = psycopg2.connect(ADMIN)
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute("vacuum analyze sync.reports")
        cur.execute("vacuum analyze sync.duty_changes")
        cur.execute("select (select count(*) from sync.reports), (select count(*) from sync.duty_changes)")
        counts = cur.fetchone()
    conn.close()
    return counts


def timings(s, path):
    for _ in range(3):
        s.get(URL + path).raise_for_status()
    out = []
    for _ in range(RUNS):
        started = time.perf_counter()
        r = s.get(URL + path)
        out.append((time.perf_counter() - started) * 1000)
        r.raise_for_status()
    return out


def main():
    reports, duty = top_up_duty_changes()
    print(f"\ndashboards: {reports} reports, {duty} duty changes; {RUNS} sequential GETs per page after 3 warm-up")
    cases = [
        ("officer home (gabon.officer1)", "gabon.officer1@demo.tideway", "/"),
        ("agency admin home (gabon.admin)", "gabon.admin@demo.tideway", "/"),
        ("agency dashboard /agencies/WildAid", "admin@demo.tideway", "/agencies/WildAid/dashboard"),
        ("global admin home (all agencies)", "admin@demo.tideway", "/"),
        ("healthz (baseline)", None, "/healthz"),
    ]
    print(f"{'page':44} {'p50 ms':>8} {'p95 ms':>8}  aim p95 < 150 ms")
    for label, email, path in cases:
        s = signed_in(URL, CA, email) if email else https_session(CA)
        t = timings(s, path)
        p95 = pct(t, .95)
        verdict = "" if email is None else ("ok" if p95 < 150 else "over")
        print(f"{label:44} {statistics.median(t):8.1f} {p95:8.1f}  {verdict}")


if __name__ == "__main__":
    main()
