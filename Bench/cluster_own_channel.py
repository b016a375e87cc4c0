"""What each event stream's own channel (the last of its channels, "r" and 32 random hex digits,
named by the worker: Sources/Events/EventChannels.swift) costs a cluster, whose nchan keeps
channels in Redis: legs with the own channel and without it (the /_events/ location's lines
swapped in both nodes' rendered tideway.conf for ones that leave it out, nginx reloaded),
alternated. Each leg, on an up cluster (Deploy/cluster/cluster.sh with its STATE):

  open    STREAMS streams of one partition (40 logins), half on each node: Redis commands,
          Redis CPU, nginx CPU (both nodes) per stream opened; time from the request to the
          answer's status line
  held    Redis memory, keys and pub/sub channels, nginx memory (RSS) per stream held
  fan-out 5 pushes on node A: push sent -> event on every stream (p50, p99, last)
  storm   node A's nginx reloaded: its streams end and reconnect at once with their
          Last-Event-ID; time until all are back, Redis commands and CPU meanwhile; a push
          after it must reach every stream
  close   every stream closed: Redis commands over the next 25 s, and the keys of streams'
          own channels left 0, 10, 20, 30 s after

  STATE=.state/own CLUSTER_NET=10.79.0 CLUSTER_PREFIX=tw9 python3 Bench/cluster_own_channel.py [STREAMS [LEGS]]

Root (it reads the nodes' nginx and reloads them). A reading, not a test: it never fails on
numbers. The client is this one Python process (asyncio, TLS), on the same cores.
"""
import asyncio
import os
import re
import resource
import signal
import ssl
import statistics
import subprocess
import sys
import time

from bench_support import api_token, pct, push_draft_report
from proc_counters import TICK, family_ticks, processes, read_pid, status_kb

STATE = os.environ["STATE"]
NET = os.environ.get("CLUSTER_NET", "10.77.0")
CA = f"{STATE}/tls/ca.crt"
NODES = {"a": f"{NET}.11", "b": f"{NET}.12"}
REDIS = ["redis-cli", "-h", f"{NET}.10"]
PARTITION = "agency=Gabon"
OFFICERS = ["gabon.officer1@demo.tideway", "gabon.officer2@demo.tideway", "gabon.admin@demo.tideway"]
# Without it: $1 leaves out the last channel, and the resume's id (the worker's, a tag per
# channel it named) its last tag (the own channel's, never the event's, so never bracketed).
SWAPS = [('location ~ "^/_events/((l[0-9a-f]{32})[0-9a-z,]*)$" {',
          'location ~ "^/_events/((l[0-9a-f]{32})[0-9a-z,]*?),r[0-9a-f]{32}$" {'),
         ("nchan_channel_id $tideway_stream_channel_ids;", "nchan_channel_id $tideway_stream_channels;"),
         ("nchan_subscriber_last_message_id $arg_after;", "nchan_subscriber_last_message_id $bench_after_shared;")]
SHARED_MAP = 'map $arg_after $bench_after_shared { "~^(?<kept>.*),[^,]*$" $kept; default ""; }\n'


def redis_info():
    out = subprocess.run(REDIS + ["info", "all"], capture_output=True, text=True, check=True).stdout
    info, calls = {}, {}
    for line in out.splitlines():
        if line.startswith("cmdstat_"):
            name, rest = line[len("cmdstat_"):].split(":", 1)
            calls[name] = int(re.search(r"calls=(\d+)", rest).group(1))
        elif ":" in line:
            key, value = line.split(":", 1)
            info[key] = value.strip()
    info["cpu"] = float(info["used_cpu_sys"]) + float(info["used_cpu_user"])
    info["keys"] = int(re.search(r"keys=(\d+)", info.get("db0", "keys=0")).group(1))
    info["calls"] = calls
    return info


def own_keys():
    """Keys of streams' own channels (tideway/r<32 hex digits>) in Redis now."""
    out = subprocess.run(REDIS + ["--scan", "--pattern", "{channel:tideway/r*"], capture_output=True, text=True).stdout
    return len(out.split())


def calls_since(before, after):
    names = set(after["calls"]) | set(before["calls"])
    spent = {n: after["calls"].get(n, 0) - before["calls"].get(n, 0) for n in names}
    # The reading itself (INFO, SCAN) is not the cluster's work.
    return {n: c for n, c in spent.items() if c and n not in ("info", "scan")}


def master(node):
    return read_pid(f"{STATE}/node-{node}/run/nginx.pid")


def nginx_ticks():
    """CPU ticks of both nodes' nginx (masters, workers, and workers a reload ended)."""
    table = processes()
    return sum(family_ticks(table, master(n), reaped=True) for n in NODES)


def nginx_rss_kb():
    table = processes()
    return sum(status_kb(pid) for pid, t in table.items() for n in NODES if t[0] == master(n))


def deaths():
    """nginx workers of both nodes that died so far ("exited on signal" in their error logs)."""
    count = 0
    for node in NODES:
        with open(f"{STATE}/node-{node}/log/nginx-error.log", "rb") as f:
            count += f.read().count(b"exited on signal")
    return count


def accepting_workers(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        children = [int(c) for c in f.read().split()]
    serving = set()
    for child in children:
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"shutting down" not in f.read():
                    serving.add(child)
        except OSError:
            pass
    return serving


def reload(node):
    pid = master(node)
    before = accepting_workers(pid)
    os.kill(pid, signal.SIGHUP)
    deadline = time.monotonic() + 15
    while not (accepting_workers(pid) and not accepting_workers(pid) & before):
        if time.monotonic() > deadline:
            raise RuntimeError(f"node {node}'s nginx did not reload")
        time.sleep(0.05)


def set_variant(own):
    for node in NODES:
        path = f"{STATE}/node-{node}/nginx/tideway.conf"
        with open(path) as f:
            conf = f.read()
        conf = conf.removeprefix(SHARED_MAP)
        for with_own, shared in SWAPS:
            conf = conf.replace(shared, with_own) if own else conf.replace(with_own, shared)
            assert conf.count(with_own) == (1 if own else 0) and conf.count(shared) == (0 if own else 1), path
        conf = conf if own else SHARED_MAP + conf
        with open(path, "w") as f:
            f.write(conf)
        reload(node)


class Stream:
    """One SSE stream on one node; reconnects with its Last-Event-ID when told to."""

    def __init__(self, node, token):
        self.node, self.token = node, token
        self.last_id = None
        self.opened = []  # seconds from the request written to the status line, per connection
        self.events = []  # (arrival time, id)
        self.reconnect = False
        self.writer = None
        self.connected = asyncio.Event()

    async def run(self, context, gate):
        while True:
            async with gate:
                host = NODES[self.node]
                reader, self.writer = await asyncio.open_connection(host, 443, ssl=context, server_hostname=host)
                extra = f"Last-Event-ID: {self.last_id}\r\n" if self.last_id else ""
                self.writer.write((f"GET /api/v1/sync/events?partition={PARTITION.replace('=', '%3D')} HTTP/1.1\r\n"
                                   f"Host: {host}\r\nAccept: text/event-stream\r\n"
                                   f"Authorization: Bearer {self.token}\r\n{extra}\r\n").encode())
                sent = time.monotonic()
                status = await reader.readline()
                self.opened.append(time.monotonic() - sent)
                if b" 200 " not in status:
                    raise RuntimeError(status.decode(errors="replace").strip())
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass
            self.connected.set()
            while True:
                line = await reader.readline()
                if not line:
                    break
                if line.startswith(b"id:"):
                    self.last_id = line[3:].strip().decode()
                    self.events.append((time.time(), self.last_id))
            self.connected.clear()
            self.writer.close()
            if not self.reconnect:
                return

    def close(self):
        self.reconnect = False
        if self.writer:
            self.writer.close()


def push(token):
    return push_draft_report(f"https://{NODES['a']}", CA, token, "own-bench", PARTITION, "own")


async def fan_out(streams, writer, pushes):
    """Pushes on node A, 2 s apart; ms from each push sent to its event on every stream."""
    lat, heard = [], 0
    for _ in range(pushes):
        marks = [len(s.events) for s in streams]
        sent = await asyncio.to_thread(push, writer)
        await asyncio.sleep(2)
        for s, mark in zip(streams, marks):
            if len(s.events) > mark:
                heard += 1
                lat.append((s.events[mark][0] - sent) * 1000)
    return lat, heard


async def leg(own, n, tokens, writer, out):
    label = "own channel" if own else "shared only"
    await asyncio.to_thread(set_variant, own)
    # What the previous leg's streams left in Redis expires (its own channels' keys ~20 s).
    for _ in range(60):
        if await asyncio.to_thread(own_keys) == 0:
            break
        await asyncio.sleep(1)
    context = ssl.create_default_context(cafile=CA)
    gate = asyncio.Semaphore(32)
    streams = [Stream("ab"[i % 2], tokens[i % len(tokens)]) for i in range(n)]
    r0, c0, m0, died0 = redis_info(), nginx_ticks(), nginx_rss_kb(), deaths()
    t0 = time.monotonic()
    tasks = [asyncio.create_task(s.run(context, gate)) for s in streams]
    await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in streams)), 300)
    took = time.monotonic() - t0
    await asyncio.sleep(3)  # nchan sends subscriber counts to Redis in batches
    r1, c1, m1 = redis_info(), nginx_ticks(), nginx_rss_kb()
    calls = calls_since(r0, r1)
    opened = [s.opened[0] * 1000 for s in streams]
    result = {"own": own, "n": n, "open_s": took,
              "calls_per_stream": sum(calls.values()) / n, "calls": calls,
              "scripts_per_stream": calls.get("evalsha", 0) / n, "subscribes_per_stream": calls.get("subscribe", 0) / n,
              "redis_cpu_us": (r1["cpu"] - r0["cpu"]) * 1e6 / n,
              "nginx_cpu_us": (c1 - c0) / TICK * 1e6 / n,
              "ttfb_p50": statistics.median(opened), "ttfb_p99": pct(opened, .99),
              "redis_mem_b": (int(r1["used_memory"]) - int(r0["used_memory"])) / n,
              "keys": r1["keys"] - r0["keys"],
              "pubsub": int(r1["pubsub_channels"]) - int(r0["pubsub_channels"]),
              "nginx_rss_kb": (m1 - m0) / n}
    lat, heard = await fan_out(streams, writer, 5)
    result["ended_before_storm"] = sum(not s.connected.is_set() for s in streams)
    result.update(fan_p50=pct(lat, .5), fan_p99=pct(lat, .99), fan_last=max(lat) if lat else float("nan"),
                  fan_heard=heard, fan_expected=5 * n)
    died = {"open and fan-out": deaths() - died0}
    # Storm: node A's streams end with the reload and come back with their last ids.
    on_a = [s for s in streams if s.node == "a" and s.connected.is_set()]
    for s in streams:
        s.reconnect = True
    r2, c2, d2 = redis_info(), nginx_ticks(), deaths()
    t2 = time.monotonic()
    await asyncio.to_thread(reload, "a")
    await asyncio.sleep(0.5)
    try:
        await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in on_a)), 60)
    except asyncio.TimeoutError:
        pass
    back = time.monotonic() - t2
    result["storm_missing"] = sum(not s.connected.is_set() for s in on_a)
    await asyncio.sleep(3)
    r3, c3 = redis_info(), nginx_ticks()
    died["storm"] = deaths() - d2
    storm = calls_since(r2, r3)
    lat2, heard2 = await fan_out(streams, writer, 1)
    result.update(storm_s=back, storm_reconnects=sum(len(s.opened) - 1 for s in on_a),
                  storm_calls=sum(storm.values()), storm_redis_cpu_ms=(r3["cpu"] - r2["cpu"]) * 1e3,
                  storm_nginx_cpu_ms=(c3 - c2) / TICK * 1e3, after_heard=heard2, after_p99=pct(lat2, .99))
    # Close: what Redis does for streams that ended, and how long their channels stay.
    r4 = redis_info()
    for s in streams:
        s.close()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    left = []
    for k in range(4):
        left.append(await asyncio.to_thread(own_keys))
        if k < 3:
            await asyncio.sleep(10)
    r5 = redis_info()
    closed = calls_since(r4, r5)
    died["close"] = deaths() - died0 - died["open and fan-out"] - died["storm"]
    result.update(close_calls_per_stream=sum(closed.values()) / n, close_calls=closed, own_keys_left=left,
                  worker_deaths=died)
    out.append(result)
    print(f"{time.strftime('%H:%M:%S')} {label}: {n} streams open in {took:.1f} s; per stream opened: "
          f"Redis {result['calls_per_stream']:.2f} commands {dict(sorted(calls.items()))}, "
          f"Redis CPU {result['redis_cpu_us']:.0f} µs, nginx CPU {result['nginx_cpu_us']:.0f} µs; "
          f"request -> status line p50 {result['ttfb_p50']:.1f} ms p99 {result['ttfb_p99']:.1f} ms", flush=True)
    print(f"  held: Redis +{result['redis_mem_b']:.0f} B/stream, +{result['keys']} keys, +{result['pubsub']} pub/sub "
          f"channels; nginx RSS +{result['nginx_rss_kb']:.1f} KB/stream", flush=True)
    print(f"  fan-out: {result['ended_before_storm']} streams ended before the storm; {heard}/{5 * n} events, p50 {result['fan_p50']:.0f} ms p99 {result['fan_p99']:.0f} ms "
          f"last {result['fan_last']:.0f} ms", flush=True)
    print(f"  storm (node A reloaded, {len(on_a)} streams): {result['storm_reconnects']} reconnects, "
          f"{result['storm_missing']} not back after 60 s, the others in "
          f"{back:.2f} s; Redis {result['storm_calls']} commands, {result['storm_redis_cpu_ms']:.0f} ms CPU; nginx "
          f"{result['storm_nginx_cpu_ms']:.0f} ms CPU; next push heard by {heard2}/{n}, p99 {result['after_p99']:.0f} ms",
          flush=True)
    print(f"  close: Redis {result['close_calls_per_stream']:.2f} commands/stream {dict(sorted(closed.items()))}; "
          f"own channels' keys left at 0/10/20/30 s: {left}", flush=True)
    print(f"  nginx workers that died: {died}", flush=True)


async def main():
    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    legs = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    tokens = [api_token(f"https://{NODES['a']}", CA, OFFICERS[i % len(OFFICERS)]) for i in range(40)]
    writer = tokens.pop()
    print(f"{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}; {n} streams a leg, {legs} legs "
          f"(own, shared, shared, own, ...)", flush=True)
    out = []
    order = [True, False, False, True] * ((legs + 3) // 4)
    for own in order[:legs]:
        await leg(own, n, tokens, writer, out)
        print(f"  (load {os.getloadavg()[0]:.1f})", flush=True)
    keys = ["scripts_per_stream", "subscribes_per_stream", "calls_per_stream", "redis_cpu_us", "nginx_cpu_us", "ttfb_p50", "ttfb_p99", "redis_mem_b",
            "nginx_rss_kb", "fan_p50", "fan_p99", "storm_s", "storm_calls", "storm_redis_cpu_ms",
            "close_calls_per_stream"]
    print("medians over legs: quantity, own channel, shared only")
    for k in keys:
        own = [r[k] for r in out if r["own"]]
        shared = [r[k] for r in out if not r["own"]]
        if own and shared:
            print(f"  {k}: {statistics.median(own):.2f} {statistics.median(shared):.2f}")
    set_variant(True)  # the template's own line back


if __name__ == "__main__":
    asyncio.run(main())
