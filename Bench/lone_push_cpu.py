"""Backend CPU per lone push (docs/performance/round-05.md, "A lone push's fixed cost"): the statements
of a push in one round trip (WritePath.applyFirstPush) as the worker sends them, as
`tideway_worker` under an officer's claims, one connection, one push per transaction, CPU
from the backend's /proc counters; the variants alternate, round after round. No HTTP, no
worker (and, unlike the worker, no prepared statements: the top-level statements are planned
at every push in every variant).

    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... TIDEWAY_BENCH_STATE=.state/bench \\
    BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/lone_push_cpu.py PUSHES ROUNDS VARIANT...

VARIANT: `apply` (app.apply_change, the usual path's lone write, with its savepoint),
`unguarded` (app.insert_documents without the savepoint, the one-trip path), `guarded`
(with it); a suffix +nolock, +noexpect or +nodevice leaves that statement out; a suffix
+open sends the lock, app.expect_first_push, the device setting and the device row as one
statement, `app.open_first_push` (the one-trip path since the seventh round).
`--prepared`: every statement PREPAREd once per connection and EXECUTEd, as the worker
sends them (its plans kept), instead of planned at every push. `--interleaved`: the
variants take turns push by push, each push's CPU read from the scheduler's nanosecond
counter, and a round's figure is the median push (steadier on a busy machine than runs of
PUSHES pushes per variant, whose CPU comes in 10 ms ticks). A suffix @DATABASE runs that
variant on a connection to another database of the same cluster (e.g. a `createdb -T` copy
made before a migration), so that two schemas alternate push by push; each database's
backend is counted on its own. `--size K`: K new reports per push (not with `apply`, which
writes one), figures per report. `--pin CPU`: every backend bound to that CPU (needs the
right to set their affinity: root or the postgres user), so that the variants share one
CPU's neighbours."""
import json
import os
import sys
import uuid

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402

DEVICE_ROW = """insert into app.devices (user_id, client_id, app_version, last_push) values (app.uid(), %s, %s, now())
    on conflict (user_id, client_id) do update set last_push = now(),
        app_version = coalesce(nullif(excluded.app_version, ''), app.devices.app_version)"""


def interleaved_round(variants, push, run_ns, pushes, first):
    """One round push by push, the variants in turn, each push's CPU from the scheduler's
    nanosecond count (a busy machine's drift falls on every variant alike): `push(variant,
    n)` pushes number n (from `first` on), `run_ns(variant)` reads its backend's counter.
    Answers each variant's median push in ns, and the next push's number."""
    per_push = {v: [] for v in variants}
    n = first
    for j in range(pushes):
        # Every other push the order is reversed: the variant that goes first
        # after a commit was measured ~4% dearer or cheaper by its place alone.
        for v in (variants if j % 2 == 0 else variants[::-1]):
            before = run_ns(v)
            push(v, n)
            n += 1
            per_push[v].append(run_ns(v) - before)
    return {v: sorted(ns)[len(ns) // 2] for v, ns in per_push.items()}, n


def main():
    prepared = "--prepared" in sys.argv
    interleaved = "--interleaved" in sys.argv
    argv = sys.argv[1:]
    pin = None
    if "--pin" in argv:
        k = argv.index("--pin")
        pin = int(argv[k + 1])
        del argv[k:k + 2]
    size = 1
    if "--size" in argv:
        k = argv.index("--size")
        size = int(argv[k + 1])
        del argv[k:k + 2]
    args = [a for a in argv if not a.startswith("--")]
    pushes, rounds, variants = int(args[0]), int(args[1]), args[2:]
    assert size == 1 or not any(v.startswith("apply") for v in variants), "apply writes one report a push"
    tok, doc = wb.token(), wb.source_doc()
    default_db = os.environ.get("BENCH_DBNAME", "tideway")

    def database(variant):
        return variant.partition("@")[2] or default_db

    backends = {}  # database -> (connection, cursor, pid, cpu, prepared names)
    for v in variants:
        if database(v) not in backends:
            os.environ["BENCH_DBNAME"] = database(v)
            conn, pid, cpu = wb.worker_backend()
            backends[database(v)] = (conn, conn.cursor(), pid, cpu, {})
    if pin is not None:
        # Every database's backend on one CPU: on a shared host a busy neighbour slows the
        # backend that shares its CPU, so two backends left to the scheduler can drift
        # apart by their placement alone.
        for _, _, pid, _, _ in backends.values():
            os.sched_setaffinity(pid, {pin})
    prefix = f"lone-{uuid.uuid4().hex[:8]}-"

    def backend(variant):
        return backends[database(variant)]

    def run_ns(variant):  # the backend's time on a CPU so far
        return wb.run_ns(backend(variant)[2])

    def push(variant, n):
        conn, cur, _, _, names = backend(variant)

        def run(sql, values):
            if not prepared:
                return cur.execute(sql, values)
            if sql not in names:
                names[sql] = f"s{len(names)}"
                parts = sql.split("%s")
                text = parts[0] + "".join(f"${k + 1}{part}" for k, part in enumerate(parts[1:]))
                cur.execute(f"prepare {names[sql]} as {text}")
            cur.execute(f"execute {names[sql]}({', '.join(['%s'] * len(values))})", values)

        write, *left_out = variant.partition("@")[0].split("+")
        ids = [f"{prefix}{n}" if size == 1 else f"{prefix}{n}-{k}" for k in range(size)]
        i = ids[0]
        d = ",".join(json.dumps({**doc, "_id": x}) for x in ids)
        run("select count(*) from app.authenticate(sha256(convert_to(%s, 'UTF8')), 'access')", (tok,))
        if "open" in left_out:
            run("select app.open_first_push(%s, %s, %s::text[], %s::text[], %s::text[])",
                (prefix, "bench", ids, [wb.PARTITION] * size, ["reports"] * size))
        else:
            if "nolock" not in left_out:
                run("select pg_advisory_xact_lock(hashtextextended(app.uid()::text || '/' || %s, 740601))", (prefix,))
            if "noexpect" not in left_out:
                run("select app.expect_first_push(%s, %s::text[], %s::text[], %s::text[])",
                    (prefix, ids, [wb.PARTITION] * size, ["reports"] * size))
            run("select set_config('tideway.device', %s, true)", (prefix,))
        if write == "apply":
            run("select app.apply_change(%s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s::jsonb)::text",
                ("reports", wb.PARTITION, i, "insert", json.dumps({**doc, "_id": i}), prefix, i, None, None))
        else:
            run("select result::text from app.insert_documents(%s, %s, %s::text[], %s::text[], %s::text[], %s::jsonb,"
                " guarded => %s) order by ord",
                ("reports", prefix, ids, ids, [wb.PARTITION] * size, "[" + d + "]", write == "guarded"))
        cur.fetchall()
        if "nodevice" not in left_out and "open" not in left_out:
            run(DEVICE_ROW, (prefix, "bench"))
        conn.commit()

    runs = {v: [] for v in variants}
    n = 0
    try:
        for v in variants:  # the session's plans
            for _ in range(10):
                push(v, f"warm{n}")
                n += 1
        if interleaved:
            for _ in range(rounds):
                medians, n = interleaved_round(variants, push, run_ns, pushes, n)
                for v in variants:
                    runs[v].append(medians[v] / 1e6 / size)
        else:
            for _ in range(rounds):
                for v in variants:
                    cpu = backend(v)[3]
                    before = cpu()
                    for _ in range(pushes):
                        push(v, n)
                        n += 1
                    runs[v].append(1000 * (cpu() - before) / pushes / size)
        for v in variants:
            ordered = sorted(runs[v])
            print(f"{v:24s} median {ordered[len(ordered) // 2]:.3f} ms of backend CPU per {'push' if size == 1 else 'report'}"
                  f"{' (per-push medians)' if interleaved else ''}; runs {', '.join(f'{x:.3f}' for x in runs[v])}")
    finally:
        for db in backends:
            wb.count_and_remove(prefix, db)


if __name__ == "__main__":
    main()
