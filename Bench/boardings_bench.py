"""Boardings benchmark (issue 6). Seeds 4 x 25,000 reports when fewer are there (the bench
stack keeps its data between runs), then times pages through nginx and one full export."""
import os
import re
import statistics
import subprocess
import time

import psycopg2

from bench_support import pct, signed_in
from proc_counters import status_kb

URL = os.environ["TIDEWAY_BENCH_URL"]
CA = os.environ["TIDEWAY_BENCH_CA"]
STATE = os.environ["TIDEWAY_BENCH_STATE"]
ADMIN_DB = os.environ["BENCH_ADMIN_DATABASE"]
PER_AGENCY = int(os.environ.get("TIDEWAY_BENCH_REPORTS_PER_AGENCY", "25000"))
SAMPLES = int(os.environ.get("TIDEWAY_BENCH_SAMPLES", "60"))


def reports():
    with psycopg2.connect(ADMIN_DB) as conn, conn.cursor() as cur:
        cur.execute("select count(*) from sync.reports where not deleted")
        return cur.fetchone()[0]


def timed(session, paths):
    """Per-request times in ms; each path once as a warm-up first."""
    for path in set(paths):
        session.get(URL + path).raise_for_status()
    times = []
    for path in paths:
        start = time.perf_counter()
        r = session.get(URL + path)
        times.append((time.perf_counter() - start) * 1000)
        r.raise_for_status()
    return times


def worker_pids():
    pids = []
    run = os.path.join(STATE, "run")
    for name in sorted(os.listdir(run)):
        if re.fullmatch(r"worker-\d+\.pid", name):
            pids.append(int(open(os.path.join(run, name)).read().strip()))
    return pids


def main():
    have = reports()
    if have < 4 * PER_AGENCY:
        print(f"seeding {4 * PER_AGENCY:,} reports (have {have:,}); this takes a few minutes once")
        env = {**os.environ, "TIDEWAY_ADMIN_DATABASE": ADMIN_DB, "TIDEWAY_HOME": os.getcwd()}
        subprocess.run([".build/release/tideway", "seed-demo", "--reports", str(PER_AGENCY)], check=True, env=env)
        conn = psycopg2.connect(ADMIN_DB)
        conn.autocommit = True
        conn.cursor().execute("vacuum analyze sync.reports")
        conn.close()
    total = reports()

    officer = signed_in(URL, CA, "gabon.officer1@demo.tideway")
    page = officer.get(URL + "/boardings?size=100").text
    ids = re.findall(r'<td data-label="Date"><a href="/boardings/([^"]+)"', page)
    words = ["carlos", "tuna", "7145", "jose", "shark", "ga 2024", "license", "garcia"]
    scenarios = [
        ("list, no filter", ["/boardings"] * SAMPLES),
        ("list, text search", [f"/boardings?q={words[i % len(words)].replace(' ', '+')}" for i in range(SAMPLES)]),
        ("list, three filters", ["/boardings?safety=Amber&violations=yes&from=2025-06-01"] * SAMPLES),
        ("list, sorted by vessel", ["/boardings?sort=vessel&size=50"] * SAMPLES),
        ("report view", [f"/boardings/{ids[i % len(ids)]}" for i in range(SAMPLES)]),
    ]
    print(f"\nboardings with {total:,} reports ({total // 4:,} visible to the officer), {SAMPLES} requests each,"
          " one client, keep-alive, through nginx (TLS)")
    print(f"{'request':<28}{'p50 ms':>10}{'p95 ms':>10}{'max ms':>10}   aim p95 < 50 ms")
    for name, paths in scenarios:
        t = timed(officer, paths)
        print(f"{name:<28}{statistics.median(t):>10.1f}{pct(t, .95):>10.1f}{max(t):>10.1f}")

    admin = signed_in(URL, CA, "admin@demo.tideway")
    pids = worker_pids()
    before = {pid: status_kb(pid, "VmHWM") for pid in pids}
    # Reset the peak so that it measures the export alone (proc(5), clear_refs "5").
    for pid in pids:
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass
    reset = {pid: status_kb(pid, "VmHWM") for pid in pids}
    start = time.perf_counter()
    size = 0
    lines = 0
    with admin.get(URL + "/boardings.csv", stream=True) as r:
        r.raise_for_status()
        for chunk in r.iter_content(1 << 16):
            size += len(chunk)
            lines += chunk.count(b"\r\n")
    seconds = time.perf_counter() - start
    after = {pid: status_kb(pid, "VmHWM") for pid in pids}
    rss = {pid: status_kb(pid, "VmRSS") for pid in pids}
    print(f"\nCSV export of every report (global admin): {lines - 1:,} rows, {size / 1e6:.1f} MB in {seconds:.1f} s"
          f" ({(lines - 1) / seconds:,.0f} rows/s)")
    print(f"{'worker pid':<12}{'peak so far MB':>16}{'peak reset to MB':>18}{'peak in export MB':>19}{'RSS now MB':>12}"
          "   aim flat, < 64 MB")
    for pid in pids:
        print(f"{pid:<12}{before[pid] / 1024:>16.1f}{reset[pid] / 1024:>18.1f}{after[pid] / 1024:>19.1f}{rss[pid] / 1024:>12.1f}")


if __name__ == "__main__":
    main()
