"""What nginx passes a worker per request, before and after (issue 22, idle polls;
docs/performance/round-22.md, "Figures"): legs A B B A ... on one bench stack, switching only
nginx's config between legs and reloading it. `after` is the stack's rendered config as
Deploy/render-nginx.sh makes it (FASTCGI_PARAMS: the parameters and headers the workers
read); `before` is the same file with each FASTCGI_PARAMS block replaced by what main
sent until round 22 (Debian's /etc/nginx/fastcgi_params, HTTPS, REQUEST_ID, HTTP_PROXY, and
every request header as HTTP_*). Each leg: reload every nginx instance, wait for the old
nginx workers to leave, then `reads_bench.py`'s idle measure (3 s of warm-up, then ROUNDS
× 5 s of `wrk`, 32 connections); with ALLOCS=1, malloc calls per poll in the workers and
nginx (a uprobe, see `allocations`); with BLOB=1, reads_bench.py's blob path (download vs
static); with LONE=1, writes_bench.py's lone pushes (one report a push, 4 connections) and its
limit (PostgreSQL alone, the same INSERT) in the same minute: server CPU per push, its split,
and the ratio to the limit.
Prints one line per leg (time UTC, load) and the medians per variant; leaves the stack on
`after`. Never fails on numbers.

    STATE=$PWD/.state/bench HTTPS_PORT=... HTTP_PORT=... Deploy/dev/stack.sh up
    TIDEWAY_BENCH_URL=https://localhost:PORT TIDEWAY_BENCH_CA=.state/bench/tls/ca.crt \\
    TIDEWAY_BENCH_STATE=.state/bench BENCH_ADMIN_DATABASE="host=.state/bench/run dbname=tideway user=postgres" \\
    python3 Bench/fastcgi_params_ab.py [LEGS]      (LEGS: 4, as A B B A; 8, as A B B A A B B A)"""
import glob
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reads_bench as rb  # noqa: E402
import writes_bench as wb  # noqa: E402
from idle_ab import leg as idle_leg, nginx_workers  # noqa: E402

BLOCK = re.compile(r"^([ \t]*)fastcgi_pass_request_headers off;\n(?:[ \t]*fastcgi_param .*\n)+", re.M)
BEFORE = {  # main's lines, the server block's and the events hook's
    "server": ["include /etc/nginx/fastcgi_params;", "fastcgi_param HTTPS on;",
               "fastcgi_param REQUEST_ID $request_id;", 'fastcgi_param HTTP_PROXY "";'],
    "hook": ["include /etc/nginx/fastcgi_params;", "fastcgi_param REQUEST_ID $request_id;"],
}


def before(conf):
    def swap(match):
        indent, block = match.group(1), match.group(0)
        lines = BEFORE["hook" if "TIDEWAY_EVENT_CHANNEL" in block else "server"]
        extra = [line.strip() for line in block.splitlines() if "TIDEWAY_EVENT_CHANNEL" in line]
        return "".join(f"{indent}{line}\n" for line in lines + extra)
    changed, count = BLOCK.subn(swap, conf)
    assert count == 2, f"{count} FASTCGI_PARAMS blocks (want the server's and the hook's)"
    return changed


def instances():
    """Each running nginx instance's folder (nginx, nginx-2, ...) of the stack: a folder an
    earlier start with more instances left behind has no pid file in run/."""
    return sorted(d for d in glob.glob(os.path.join(rb.STATE, "nginx*"))
                  if os.path.exists(os.path.join(d, "tideway.conf"))
                  and os.path.exists(os.path.join(rb.STATE, "run", os.path.basename(d) + ".pid")))


def switch(confs, variant):
    """Writes every instance's config as `variant`, reloads it, waits for the old workers to go."""
    old = set(nginx_workers())
    for d, conf in confs.items():
        with open(os.path.join(d, "tideway.conf"), "w") as f:
            f.write(conf if variant == "after" else before(conf))
        nginx = ["nginx", "-p", d + "/", "-c", os.path.join(d, "nginx.conf"),
                 "-e", os.path.join(rb.STATE, "log", "nginx-error.log")]
        subprocess.run(nginx + ["-t", "-q"], check=True)
        subprocess.run(nginx + ["-s", "reload"], check=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now = set(nginx_workers())
        if now and not now & old and len(now) == len(confs):
            break
        time.sleep(0.2)
    else:
        raise SystemExit("nginx's old workers did not leave in 30 s")
    time.sleep(1)


def allocations(script, seconds=5):
    """malloc calls per idle poll in the workers and in nginx's workers, counted by a uprobe on
    libc's malloc (`perf probe -x .../libc.so.6 --add malloc` first, as root) over one more
    `wrk` run, apart from the CPU measure (each probe hit costs a trap)."""
    counts = []
    for pids in (rb.worker_pids(), nginx_workers()):
        counts.append(subprocess.Popen(
            ["perf", "stat", "-x,", "-e", "probe_libc:malloc", "-p", ",".join(map(str, pids)), "--", "sleep", str(seconds)],
            stderr=subprocess.PIPE, text=True))
    done = rb.wrk(rb.URL + "/api/v1/sync/pull", script, seconds=seconds)["rps"] * seconds
    return tuple(int(p.communicate()[1].strip().splitlines()[-1].split(",")[0]) / max(done, 1) for p in counts)


def main():
    legs = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    order = [("before", "after", "after", "before")[i % 4] for i in range(legs)]
    confs = {}
    for d in instances():
        with open(os.path.join(d, "tideway.conf")) as f:
            confs[d] = f.read()
    assert confs and all(BLOCK.search(c) for c in confs.values()), "the stack's config has no FASTCGI_PARAMS block"
    api = rb.Api()
    cursor = None
    results = {"before": [], "after": []}
    try:
        for variant in order:
            switch(confs, variant)
            # At the partition's end again: the blob path pushes a photo into it.
            cursor = rb.current(api, cursor)
            script = rb.idle_poll_script(api.token, rb.json.dumps({"partitions": {rb.PARTITION: cursor}, "limit": 100}))
            load = os.getloadavg()[0]
            stamp = time.strftime("%H:%M:%S", time.gmtime())
            r = idle_leg(script)
            line = (f"{stamp} UTC load {load:.2f} {variant:6}: idle poll {r['cpu'] * 1000:.4f} ms "
                    f"(workers {r['parts'][0] * 1000:.4f} / nginx {r['parts'][1] * 1000:.4f} / PostgreSQL "
                    f"{r['parts'][2] * 1000:.4f}), {r['rps']:.0f}/s, p99 {r['p99']:.2f} ms, non-2xx {r['bad']}, "
                    f"switches/poll workers {r['switches'][0]:.2f} nginx {r['switches'][1]:.2f}")
            if os.environ.get("ALLOCS") == "1":
                r["allocs"] = allocations(script)
                line += f"; mallocs per poll: workers {r['allocs'][0]:.1f}, nginx {r['allocs'][1]:.1f}"
            if os.environ.get("LONE") == "1":
                r["lone"], r["lone_limit"] = wb.measure(wb.token(), wb.source_doc(), 1, wb.CLIENTS)
                line += (f"; lone push {r['lone']['cpu_ms']:.3f} ms (worker {r['lone']['split']['worker']:.3f}, "
                         f"nginx {r['lone']['split']['nginx']:.3f}, PostgreSQL {r['lone']['split']['postgres']:.3f}), "
                         f"limit {r['lone_limit']['cpu_ms']:.3f}, ratio {r['lone']['cpu_ms'] / r['lone_limit']['cpu_ms']:.3f}")
            if os.environ.get("BLOB") == "1":
                b = rb.bench_blob(api)
                r["blob"] = b
                line += (f"; blob download {100 * b['ratio']['median']:.0f}% of static's rate "
                         f"(machine CPU {100 * b['machine_ratio']['median']:.0f}%), download CPU "
                         f"{b['down_cpu'] * 1000:.3f} ms vs static {b['static_cpu'] * 1000:.3f} ms")
            os.unlink(script)
            print(line, flush=True)
            results[variant].append(r)
    finally:
        switch(confs, "after")
    for variant, rs in results.items():
        med = lambda f: statistics.median(f(r) for r in rs) * 1000
        ms = lambda f: statistics.median(f(r) for r in rs)  # writes_bench's figures are in ms already
        print(f"median {variant:6} ({len(rs)} legs): {med(lambda r: r['cpu']):.4f} ms per idle poll: workers "
              f"{med(lambda r: r['parts'][0]):.4f} / nginx {med(lambda r: r['parts'][1]):.4f} / PostgreSQL "
              f"{med(lambda r: r['parts'][2]):.4f}"
              + (f"; blob download CPU {med(lambda r: r['blob']['down_cpu']):.3f} ms, static "
                 f"{med(lambda r: r['blob']['static_cpu']):.3f} ms" if rs and "blob" in rs[0] else "")
              + (f"; lone push {ms(lambda r: r['lone']['cpu_ms']):.3f} ms (worker "
                 f"{ms(lambda r: r['lone']['split']['worker']):.3f}, nginx "
                 f"{ms(lambda r: r['lone']['split']['nginx']):.3f}), ratio to its limit "
                 f"{ms(lambda r: r['lone']['cpu_ms'] / r['lone_limit']['cpu_ms']):.3f}"
                 if rs and "lone" in rs[0] else ""))


if __name__ == "__main__":
    main()
