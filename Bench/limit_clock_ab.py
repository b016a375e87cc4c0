"""The write limit's two clocks alternated (docs/performance/round-17.md, "The
limit's clock taken as the push takes it"): Bench/writes_bench.py's pgbench INSERT as it is
(`ticks`: one app.ticks call per statement, its notification naming the clock, as a push's)
and as it was until the seventeenth round (`tick`: app.tick per row, a notification naming
no clock, so the event publisher reads the partition), legs alternated A B B A, each leg
writes_bench's own limit run (pg_run: CPU of every process of the bench stack per report,
the job runner's fold included). Prints one line per leg, then each side's median.

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/limit_clock_ab.py [LEGS] [BATCH] [CONNECTIONS]"""
import os
import statistics
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402


def tick_script(tok, doc, batch, prefix):
    """The limit before: app.tick per row, as pg_script wrote it until the seventeenth round."""
    ticks = f"unnest(app.ticks(array_fill('{wb.PARTITION}'::text, array[{batch}]), 'reports'))"
    script = wb.pg_script(tok, doc, batch, prefix)
    assert ticks in script
    return script.replace(f", t.seq from {ticks} t(seq)", f", app.tick('{wb.PARTITION}') as seq from generate_series(1, {batch})")


def main():
    legs = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else wb.CLIENTS
    tok, doc = wb.token(), wb.source_doc()
    sides = {"ticks": wb.pg_script, "tick": tick_script}
    order = ["ticks", "tick", "tick", "ticks"]
    figures = {name: [] for name in sides}
    for leg in range(legs):
        name = order[leg % 4]
        load = os.getloadavg()[0]
        run = wb.pg_run(tok, doc, batch, connections, script=sides[name])
        ms = 1000 * sum(run["cpu"].values()) / max(run["docs"], 1)
        split = " ".join(f"{k} {1000 * v / max(run['docs'], 1):.3f}" for k, v in run["cpu"].items())
        figures[name].append(ms)
        print(f"leg {leg + 1} {name:5} load {load:4.1f}: {ms:.3f} ms/report ({run['docs']} reports; {split})", flush=True)
    for name, values in figures.items():
        print(f"{name}: median {statistics.median(values):.3f} ms/report of {len(values)} legs: "
              + ", ".join(f"{v:.3f}" for v in values))


if __name__ == "__main__":
    main()
