"""nginx's CPU per new TLS connection, a full handshake against a resumed one, and how many
resumptions fail when several nginx instances share the port (docs/performance/round-17.md).

Each connection is a returning client's: a TCP connect, the TLS handshake, `HEAD
/static/live.js` (served by nginx alone, no access log), and the close. Modes:
  full     no session: ECDHE and the certificate's signature every time
  resumed  one session, taken from a first connection, offered on every connection (a
           ticket; TLS 1.3 resumes with a fresh ECDHE, TLS 1.2 without)
  id       TLS 1.2 without tickets (OP_NO_TICKET): the session id, looked up in the
           session cache of the instance the kernel chose
The legs run in the order given (alternate them: full,resumed,resumed,full), each
`--connections` long. nginx's CPU is every nginx process's (masters and workers of every
instance in STATE/run/nginx*.pid), from the scheduler's counters (Bench/proc_counters.py).

  python3 Bench/tls_resume.py --url https://localhost:9643 --ca $STATE/tls/ca.crt \
      --state $STATE --tls 1.3 --legs full,resumed,resumed,full --connections 300
"""
import argparse
import glob
import os
import socket
import ssl
import statistics
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proc_counters import read_pid, threads_ns  # noqa: E402


def nginx_pids(state):
    """Every process of every nginx instance of the stack: masters and their children."""
    pids = []
    for pid_file in glob.glob(os.path.join(state, "run", "nginx*.pid")):
        master = read_pid(pid_file)
        if master is None:
            continue
        pids.append(master)
        try:
            with open(f"/proc/{master}/task/{master}/children") as f:
                pids += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return pids


def nginx_ns(pids):
    return sum(threads_ns(pid) for pid in pids)


def context(ca, tls, tickets=True):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.minimum_version = ctx.maximum_version = (
        ssl.TLSVersion.TLSv1_3 if tls == "1.3" else ssl.TLSVersion.TLSv1_2)
    if not tickets:
        ctx.options |= ssl.OP_NO_TICKET
    return ctx


def connect(ctx, host, port, session=None):
    """One returning client's connection; (its session, whether it was resumed)."""
    with socket.create_connection((host, port)) as raw:
        # As browsers and HTTP stacks do: without it, TLS 1.2's resumed handshake (the
        # client's Finished, then the request) waits out the server's delayed ACK, ~40 ms.
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with ctx.wrap_socket(raw, server_hostname=host, session=session) as tls:
            tls.sendall(f"HEAD /static/live.js HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            answer = b""
            while chunk := tls.recv(4096):  # until nginx closes: TLS 1.3 tickets arrive here
                answer += chunk
            if not answer.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"unexpected answer: {answer[:80]!r}")
            return tls.session, tls.session_reused


def leg(mode, args, host, port, pids):
    ctx = context(args.ca, args.tls, tickets=(mode != "id"))
    session = None
    if mode != "full":
        session, _ = connect(ctx, host, port)
    reused = 0
    cpu_before, wall_before = nginx_ns(pids), time.monotonic()
    for _ in range(args.connections):
        _, was_reused = connect(ctx, host, port, session)
        reused += was_reused
    cpu, wall = nginx_ns(pids) - cpu_before, time.monotonic() - wall_before
    return {"mode": mode, "us_per_conn": cpu / 1000 / args.connections, "reused": reused,
            "wall_ms_per_conn": wall * 1000 / args.connections}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--state", required=True, help="the stack's STATE (its run/nginx*.pid)")
    p.add_argument("--tls", choices=["1.2", "1.3"], default="1.3")
    p.add_argument("--legs", default="full,resumed,resumed,full")
    p.add_argument("--connections", type=int, default=300)
    args = p.parse_args()
    url = urllib.parse.urlsplit(args.url)
    host, port = url.hostname, url.port or 443
    pids = nginx_pids(args.state)
    instances = len(glob.glob(os.path.join(args.state, "run", "nginx*.pid")))
    print(f"{time.strftime('%H:%M:%S', time.gmtime())} UTC, load {os.getloadavg()[0]:.2f}, "
          f"{instances} nginx instance(s), TLS {args.tls}, {args.connections} connections a leg")
    results = []
    for mode in args.legs.split(","):
        r = leg(mode, args, host, port, pids)
        results.append(r)
        failed = "" if mode == "full" else f", resumption failed {args.connections - r['reused']}/{args.connections}"
        print(f"  {mode:8} nginx {r['us_per_conn']:7.1f} µs/connection, client wall "
              f"{r['wall_ms_per_conn']:.2f} ms/connection{failed}")
    for mode in dict.fromkeys(r["mode"] for r in results):
        mine = [r for r in results if r["mode"] == mode]
        print(f"  median {mode:8} {statistics.median(r['us_per_conn'] for r in mine):7.1f} µs/connection"
              + ("" if mode == "full" else
                 f", failed {sum(args.connections - r['reused'] for r in mine)}/{args.connections * len(mine)}"))
    print(f"  load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
