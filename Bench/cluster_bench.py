"""Drives Bench/19-cluster.sh: one node vs the pair, on one machine. Bounded in time."""
import asyncio
import json
import multiprocessing
import os
import re
import ssl
import statistics
import subprocess
import tempfile
import time


from bench_support import api_token, https_session, push_draft_report
from proc_counters import TICK, stat

STATE = os.environ["TIDEWAY_CLUSTER_STATE"]
NET = os.environ["TIDEWAY_CLUSTER_NET"]
CA = f"{STATE}/tls/ca.crt"
NODES = {"a": f"{NET}.11", "b": f"{NET}.12"}
STREAMS = int(os.environ.get("CLUSTER_STREAMS", "10000"))
PARTITION = "agency=Gabon"
OFFICERS = ["gabon.officer1@demo.tideway", "gabon.officer2@demo.tideway", "gabon.admin@demo.tideway"]


def login(host, email):
    return api_token(f"https://{host}", CA, email)


def current_cursor(host, token):
    cursor, more = None, True
    while more:
        r = https_session(CA).post(f"https://{host}/api/v1/sync/pull", headers={"Authorization": f"Bearer {token}"},
                           json={"partitions": {PARTITION: cursor}, "limit": 1000})
        r.raise_for_status()
        part = r.json()["partitions"][PARTITION]
        cursor, more = part["cursor"], part["more"]
    return cursor


def wrk_lua(token, body=None, push=False):
    f = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    head = (f'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
            f'wrk.headers["Authorization"] = "Bearer {token}"\n')
    if push:
        # One new report per request, unique ids per wrk thread and request.
        head += ('local n = 0\nlocal tag = tostring(math.random(1, 1e9))\n'
                 'request = function()\n  n = n + 1\n  local id = "bench-" .. tag .. "-" .. n\n'
                 '  local body = \'{"clientId":"bench-\' .. tag .. \'","changes":[{"changeId":"\' .. id .. '
                 '\'","collection":"reports","partition":"' + PARTITION + '","id":"\' .. id .. '
                 '\'","op":"insert","doc":{"_id":"\' .. id .. \'","timestamp":"2024-05-01T10:00:00Z","draft":true}}]}\'\n'
                 '  return wrk.format(nil, nil, nil, body)\nend\n')
    else:
        head += f"wrk.body = {json.dumps(json.dumps(body))}\n"
    f.write(head)
    f.close()
    return f.name


def wrk_many(targets, seconds=6):
    """Runs one wrk per (url, script) at the same time; answers the summed requests/s."""
    procs = [subprocess.Popen(["wrk", "-t2", "-c16", f"-d{seconds}s", url, "-s", script], stdout=subprocess.PIPE, text=True)
             for url, script in targets]
    total = 0.0
    for p in procs:
        out = p.communicate()[0]
        m = re.search(r"Requests/sec:\s+([\d.]+)", out)
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        if non2xx:
            print(f"  (wrk: {non2xx.group(1)} non-2xx answers)")
        total += float(m.group(1)) if m else 0.0
    return total


def cpu_by_host():
    """CPU seconds used so far by each host's processes (those in its network namespace)."""
    prefix = os.environ.get("CLUSTER_PREFIX", "twc")
    used = {}
    for host in ("db", "a", "b"):
        pids = subprocess.run(["ip", "netns", "pids", f"{prefix}-{host}"], capture_output=True, text=True).stdout.split()
        used[host] = sum(counters[1] for counters in map(stat, pids) if counters) / TICK
    return used


def compare(name, one, pair, runs=3):
    ones = [wrk_many(one) for _ in range(runs)]
    before = cpu_by_host()
    pairs = [wrk_many(pair) for _ in range(runs)]
    after = cpu_by_host()
    o, p = statistics.median(ones), statistics.median(pairs)
    print(f"{name}: one node {o:,.0f}/s, two nodes {p:,.0f}/s -> ratio {p / o:.2f} (x2 = the nodes scale, "
          f"x1 = something shared saturates: this machine's 2 cores or the database host)")
    spent = {h: after[h] - before[h] for h in after}
    total = sum(spent.values()) or 1
    print("  CPU during the two-node runs: " + ", ".join(
        f"{'database host' if h == 'db' else 'node ' + h} {100 * v / total:.0f}%" for h, v in spent.items())
        + " (wrk, the client, not counted)")


async def subscribe(context, host, token, received, ready, gate):
    async with gate:
        reader, writer = await asyncio.open_connection(host, 443, ssl=context, server_hostname=host)
        writer.write((f"GET /api/v1/sync/events?partition={PARTITION.replace('=', '%3D')} HTTP/1.1\r\nHost: {host}\r\n"
                      f"Accept: text/event-stream\r\nAuthorization: Bearer {token}\r\n\r\n").encode())
        status = await reader.readline()
        if b" 200 " not in status:
            raise RuntimeError(status.decode(errors="replace").strip())
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
    ready.append(1)
    while True:
        line = await reader.readline()
        if not line:
            return
        if line.startswith(b"data:"):
            received.append(time.time())


def subscriber_process(args):
    share, seconds = args
    context = ssl.create_default_context(cafile=CA)
    received, ready = [], []

    async def main():
        gate = asyncio.Semaphore(64)
        tasks = [asyncio.create_task(subscribe(context, host, token, received, ready, gate)) for host, token in share]
        await asyncio.sleep(seconds)
        failed = sum(1 for t in tasks if t.done() and not t.cancelled() and t.exception() is not None)
        for t in tasks:
            t.cancel()
        return failed

    failed = asyncio.run(main())
    return len(ready), failed, received


def fan_out(tokens, writer, nodes):
    """STREAMS streams of one partition spread over `nodes`, 5 pushes on node A."""
    events, processes, seconds = 5, 4, 80
    plan = [(NODES[nodes[i % len(nodes)]], tokens[nodes[i % len(nodes)]][i % len(OFFICERS)]) for i in range(STREAMS)]
    with multiprocessing.Pool(processes) as pool:
        pending = pool.map_async(subscriber_process, [(plan[p::processes], seconds) for p in range(processes)])
        time.sleep(50)  # the TLS handshakes and subscribe hooks of every stream
        sends = []
        for n in range(events):
            sends.append(push_draft_report(f"https://{NODES['a']}", CA, writer, "fan-bench", PARTITION, "fan"))
            time.sleep(3)
        results = pending.get(timeout=seconds + 60)
    connected = sum(r[0] for r in results)
    failed = sum(r[1] for r in results)
    arrivals = sorted(t for r in results for t in r[2])
    lat = []
    for i, sent in enumerate(sends):
        end = sends[i + 1] if i + 1 < len(sends) else float("inf")
        lat += [(t - sent) * 1000 for t in arrivals if sent <= t < end]
    lat.sort()
    pct = lambda q: lat[min(len(lat) - 1, int(len(lat) * q))] if lat else float("nan")
    where = "all on node a" if nodes == "a" else "half on each node"
    print(f"event fan-out: {connected} of {STREAMS} streams of one partition connected ({failed} failed), {where}; "
          f"{len(lat)} of {events * connected} events received")
    print(f"  push on node A -> event on every stream (through Redis), from the push being sent: "
          f"p50 {pct(.5):.0f} ms, p99 {pct(.99):.0f} ms, last {lat[-1] if lat else float('nan'):.0f} ms")
    return pct(.99)


def main():
    tokens = {n: [login(NODES[n], e) for e in OFFICERS] for n in NODES}
    cursor = current_cursor(NODES["a"], tokens["a"][0])
    poll = {n: wrk_lua(tokens[n][0], body={"partitions": {PARTITION: cursor}, "limit": 100}) for n in NODES}
    compare("idle polls (a current cursor, no wait)",
            [(f"https://{NODES['a']}/api/v1/sync/pull", poll["a"])],
            [(f"https://{NODES[n]}/api/v1/sync/pull", poll[n]) for n in NODES])
    push = {n: wrk_lua(tokens[n][1], push=True) for n in NODES}
    compare("pushes (one new report each)",
            [(f"https://{NODES['a']}/api/v1/sync/push", push["a"])],
            [(f"https://{NODES[n]}/api/v1/sync/push", push[n]) for n in NODES])
    one = fan_out(tokens, tokens["a"][2], "a")
    time.sleep(5)  # the first streams' ends reach the hooks
    pair = fan_out(tokens, tokens["a"][2], "ab")
    print(f"commit -> event p99, streams over two nodes vs one: ratio {pair / one:.2f} (< 1: the second node's "
          f"nginx takes half the fan-out)")


if __name__ == "__main__":
    main()
