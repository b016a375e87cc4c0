"""What each part of a lone push's own SQL costs the writing backend (docs/performance/round-16.md,
"What a lone push's SQL adds to its INSERT"): the statements of a push in one round trip
(WritePath.applyFirstPush: app.authenticate, app.open_first_push, app.insert_documents
unguarded, COMMIT) as the worker sends them (prepared once per connection), as
`tideway_worker` under an officer's claims, against variants that leave a part out or
write it another way. The variants' functions are made from main's definitions
(pg_get_functiondef) in a schema of their own, `bench_proto`, dropped at the end; nothing
of `app` changes. The variants take turns push by push on one connection (the order
reversed every other push), each push's CPU from the backend's nanosecond counter
(/proc/<pid>/schedstat); a round's figure is its median push (Bench/lone_push_cpu.py's
interleaved_round).

    TIDEWAY_BENCH_STATE=.state/bench BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    TIDEWAY_BENCH_URL=... TIDEWAY_BENCH_CA=... python3 Bench/push_parts_cpu.py PUSHES ROUNDS VARIANT...

VARIANT (each a whole push; the client id is the same for every push of a variant, as one
device pushing again and again). `main`: the one-trip push as main sent it before round 16,
with main's three functions as they were, installed beforehand in a schema `bench_main`
(pg_get_functiondef of main's app.expect_first_push, app.open_first_push and
app.insert_documents with `app.` turned into `bench_main.` in their names and in
open_first_push's call of expect_first_push). Made from those, each with one change:
  noopen     no app.open_first_push (only the device named for the history): what it costs;
  nolock, noexpect, nodevice   app.open_first_push without the push lock, without
             app.expect_first_push, without the device's row;
  fresh      the device's row read first and written only when its last push is a minute old
             or its app version changed;
  merged     app.open_first_push's work done by app.insert_documents' call (one statement fewer);
  merged+fresh  both;
  lean       app.open_first_push with the push log probed in it, without app.expect_first_push's
             call and its write rights (row-level security refuses the INSERT instead);
  mergedlean lean's opening done by app.insert_documents' call;
  noorder    the answer read without `order by ord`.
This branch's SQL: `opened` (app.insert_documents opening the push itself, as the worker
sends a lone push now), `opening` (app.open_first_push's own statement first, as for a push
of several collections). Round 17's: `openednorow` (`opened` leaving the device's row as it
is, `device_row => false`, as a push within the minute of the device's last on the worker)."""
import json
import re
import sys
import uuid

import psycopg2

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import writes_bench as wb  # noqa: E402
from lone_push_cpu import interleaved_round  # noqa: E402

INSERT_DOCUMENTS = "bench_main.insert_documents(text,text,text[],text[],text[],jsonb,boolean)"
OPEN_FIRST_PUSH = "bench_main.open_first_push(text,text,text[],text[],text[])"
NOTE_DEVICE_PUSH = "app.note_device_push(text,text)"
DOCS = object()  # where a statement's documents go


def definition(cur, signature):
    cur.execute("select pg_get_functiondef(%s::regprocedure)", (signature,))
    return cur.fetchone()[0]


PROTOTYPED = {"nolock", "noexpect", "nodevice", "fresh", "merged", "merged+fresh", "lean", "mergedlean"}


def install(admin):
    """bench_proto's variants, each from the database's own definition with one change."""
    with admin.cursor() as cur:
        cur.execute("drop schema if exists bench_proto cascade; create schema bench_proto authorization tideway_owner;"
                    "grant usage on schema bench_proto to tideway_worker")
        opening, device, insert = (definition(cur, s) for s in (OPEN_FIRST_PUSH, NOTE_DEVICE_PUSH, INSERT_DOCUMENTS))

        def proto(text, name, old, new):
            for schema in ("app", "bench_main"):
                text = text.replace(f"FUNCTION {schema}.{old}(", f"FUNCTION bench_proto.{name}(", 1)
            return text

        def without(text, name, line):
            assert line in text, line
            return proto(text, name, "open_first_push", None).replace(line, "")

        made = [
            without(opening, "open_nolock", "perform app.push_lock(client_id);"),
            without(opening, "open_noexpect", "perform bench_main.expect_first_push(client_id, change_ids, partitions, collections);"),
            without(opening, "open_nodevice", "perform app.note_device_push(client_id, app_version);"),
        ]
        # The device's row read first; written only when a minute old or of another version.
        fresh_check = """declare
    fresh boolean;
begin
    select d.last_push > now() - interval '1 minute' and (nullif(version, '') is null or d.app_version = version)
      into fresh from app.devices d where d.user_id = app.uid() and d.client_id = client;
    if fresh then
        return;
    end if;
"""
        assert "\nbegin\n" in device
        made.append(proto(device, "note_device_push_fresh", "note_device_push", None).replace("\nbegin\n", "\n" + fresh_check, 1))
        made.append(proto(opening, "open_fresh", "open_first_push", None)
                    .replace("app.note_device_push(", "bench_proto.note_device_push_fresh("))
        # insert_documents doing app.open_first_push's work when given the device's version.
        for name, opener in (("insert_merged", "app.open_first_push"), ("insert_merged_fresh", "bench_proto.open_fresh")):
            text = proto(insert, name, "insert_documents", None)
            text = text.replace("guarded boolean DEFAULT true)", "guarded boolean DEFAULT true, device_version text DEFAULT NULL)", 1)
            assert "\nbegin\n" in text
            text = text.replace("\nbegin\n", f"""
begin
    if device_version is not null then
        perform {opener}(client_id, device_version, change_ids, partitions, array[collection]);
    end if;
""", 1)
            made.append(text)
        # The first-push check without app.expect_first_push's call and its write rights
        # (row-level security refuses the INSERT instead: 42501, which the worker takes as
        # NeedsReads): the push log probed in the opening itself.
        lean = """
    perform app.push_lock(client_id);
    if exists (select from app.logged_outcomes(client_id, change_ids)) then
        perform app.refuse('TW409', 'the push needs its reads');
    end if;
    perform set_config('tideway.device', client_id, true);
    perform app.note_device_push(client_id, @version@);
"""
        assert "perform bench_main.expect_first_push(client_id, change_ids, partitions, collections);" in opening
        made.append(proto(opening, "open_lean", "open_first_push", None)
                    .replace("perform bench_main.expect_first_push(client_id, change_ids, partitions, collections);",
                             "if exists (select from app.logged_outcomes(client_id, change_ids)) then\n"
                             "        perform app.refuse('TW409', 'the push needs its reads');\n    end if;"))
        text = proto(insert, "insert_merged_lean", "insert_documents", None)
        text = text.replace("guarded boolean DEFAULT true)", "guarded boolean DEFAULT true, device_version text DEFAULT NULL)", 1)
        text = text.replace("\nbegin\n", "\nbegin\n    if device_version is not null then" + lean.replace("@version@", "device_version")
                            + "    end if;\n", 1)
        made.append(text)
        cur.execute("set role tideway_owner")
        for text in made:
            cur.execute(text)
        cur.execute("grant execute on all functions in schema bench_proto to tideway_worker; reset role")


def statements(variant, prefix, ids):
    """The push's statements after app.authenticate, as (sql, values)."""
    parts, colls = [wb.PARTITION] * len(ids), ["reports"] * len(ids)
    docs = DOCS  # filled by the caller
    opening = {"noorder": "bench_main.open_first_push", "nolock": "bench_proto.open_nolock",
               "noexpect": "bench_proto.open_noexpect", "nodevice": "bench_proto.open_nodevice",
               "fresh": "bench_proto.open_fresh", "lean": "bench_proto.open_lean"}
    out = []
    if variant in ("main", "base"):
        return [("select bench_main.open_first_push(%s, %s, %s::text[], %s::text[], %s::text[])",
                 (prefix, "bench", ids, [wb.PARTITION], ["reports"])),
                ("select result::text from bench_main.insert_documents(%s, %s, %s::text[], %s::text[], %s::text[], %s::jsonb,"
                 " guarded => false) order by ord", ("reports", prefix, ids, ids, parts, docs))]
    if variant in ("opened", "openednorow"):
        return [("select result::text from app.insert_documents(%s, %s, %s::text[], %s::text[], %s::text[], %s::jsonb,"
                 " guarded => false, first_push_app_version => %s, device_row => %s) order by ord",
                 ("reports", prefix, ids, ids, parts, docs, "bench", variant == "opened"))]
    if variant == "opening":
        return [("select app.open_first_push(%s, %s, %s::text[], %s::text[], %s::text[])",
                 (prefix, "bench", ids, [wb.PARTITION], ["reports"])),
                ("select result::text from app.insert_documents(%s, %s, %s::text[], %s::text[], %s::text[], %s::jsonb,"
                 " guarded => false, first_push_app_version => null) order by ord", ("reports", prefix, ids, ids, parts, docs))]
    if variant in opening:
        out.append((f"select {opening[variant]}(%s, %s, %s::text[], %s::text[], %s::text[])",
                    (prefix, "bench", ids, [wb.PARTITION], ["reports"])))
    elif variant == "noopen":
        out.append(("select set_config('tideway.device', %s, true)", (prefix,)))
    if variant.startswith("merged"):
        name = {"merged+fresh": "bench_proto.insert_merged_fresh", "mergedlean": "bench_proto.insert_merged_lean"}.get(
            variant, "bench_proto.insert_merged")
        out.append((f"select result::text from {name}(%s, %s, %s::text[], %s::text[], %s::text[], %s::jsonb,"
                    " guarded => false, device_version => %s) order by ord",
                    ("reports", prefix, ids, ids, parts, docs, "bench")))
    else:
        order = "" if variant == "noorder" else " order by ord"
        out.append(("select result::text from bench_main.insert_documents(%s, %s, %s::text[], %s::text[], %s::text[], %s::jsonb,"
                    f" guarded => false){order}", ("reports", prefix, ids, ids, parts, docs)))
    del colls
    return out


def main():
    pushes, rounds, variants = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    admin = psycopg2.connect(wb.ADMIN)
    admin.autocommit = True
    if PROTOTYPED & set(variants):
        install(admin)
    tok, doc = wb.token(), wb.source_doc()
    conn, pid, _ = wb.worker_backend()
    cur = conn.cursor()
    names = {}
    run_prefix = f"parts-{uuid.uuid4().hex[:8]}-"
    prefixes = {v: f"{run_prefix}{re.sub('[^a-z]', '', v)}-" for v in variants}

    def run(sql, values):
        if sql not in names:
            names[sql] = f"s{len(names)}"
            pieces = sql.split("%s")
            cur.execute(f"prepare {names[sql]} as " + pieces[0] + "".join(f"${k + 1}{p}" for k, p in enumerate(pieces[1:])))
        cur.execute(f"execute {names[sql]}({', '.join(['%s'] * len(values))})", values)

    def push(variant, n):
        prefix = prefixes[variant]
        i = f"{prefix}{n}"
        run("select count(*) from app.authenticate(sha256(convert_to(%s, 'UTF8')), 'access')", (tok,))
        for sql, values in statements(variant, prefix, [i]):
            values = tuple(f"[{json.dumps({**doc, '_id': i})}]" if v is DOCS else v for v in values)
            run(sql, values)
        cur.fetchall()
        conn.commit()

    runs = {v: [] for v in variants}
    try:
        for k in range(10):  # the session's plans
            for v in variants:
                push(v, f"warm{k}")
        n = 0
        for r in range(rounds):
            medians, n = interleaved_round(variants, push, lambda v: wb.run_ns(pid), pushes, n)
            for v in variants:
                runs[v].append(medians[v] / 1e3)
            load = open("/proc/loadavg").read().split()[0]
            print(f"round {r + 1} (load {load}): " + ", ".join(f"{v} {runs[v][-1]:.0f}" for v in variants), flush=True)
        base = variants[0]
        for v in variants:
            ordered = sorted(runs[v])
            diffs = sorted(a - b for a, b in zip(runs[v], runs[base]))
            print(f"{v:14s} median {ordered[len(ordered) // 2]:.0f} µs of backend CPU per push; against {base}: "
                  f"median {diffs[len(diffs) // 2]:+.0f} µs, rounds {', '.join(f'{d:+.0f}' for d in (a - b for a, b in zip(runs[v], runs[base])))}")
    finally:
        conn.rollback()
        wb.count_and_remove(run_prefix)
        with admin.cursor() as c:
            c.execute("delete from app.devices where client_id like %s", (run_prefix + "%",))
            c.execute("drop schema if exists bench_proto cascade")


if __name__ == "__main__":
    main()
