#!/usr/bin/env python3
"""Stress nchan alone the way Tideway uses it, to find which pattern kills nginx workers.

Streams subscribe to "<login channel>,<partition channels>" (as the workers' X-Accel-Redirect
does), stay open a moment and close or are closed; meanwhile login channels are deleted
(revocations, a few channels per DELETE; the publisher sends up to 50), deleted again later (the
publisher's checkpoints), asked for their subscribers (the stream-count reconciler) and
partition channels are published to. At the end: how many nginx workers died ("exited on
signal" in the error log) and whether any request went unanswered (a hung worker). Loopback
only. With --nginx-dir it starts its own nginx there first (Tideway's event locations from
Deploy/nginx, copied below, with a stand-in for the workers' authorization) and stops it after:

  python3 Bench/nchan_churn.py --nginx-dir .state/churn --nginx-workers 2 --port 9182 --seconds 60
  python3 Bench/nchan_churn.py --url http://127.0.0.1:<port>/api/events/ \
      --publish-socket <sock> --error-log <log>   # an nginx configured like NGINX_CONF
"""
import os
import subprocess

NGINX_CONF = """load_module /usr/lib/nginx/modules/ngx_nchan_module.so;
{user}
worker_processes {workers};
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{ worker_connections 10000; }}
http {{
  access_log off;
  client_body_temp_path {dir}/tmp; fastcgi_temp_path {dir}/tmp; proxy_temp_path {dir}/tmp;
  uwsgi_temp_path {dir}/tmp; scgi_temp_path {dir}/tmp;
  nchan_shared_memory_size 128m;
  upstream authz {{ server unix:{dir}/authz.sock; keepalive 8; }}
  server {{
    listen 127.0.0.1:{port};
    location ~ ^/api/events/(.*)$ {{ proxy_pass http://authz; proxy_http_version 1.1; proxy_set_header Connection ""; }}
    location ~ "^/_events/((l[0-9a-f]{{32}})[0-9a-z,]*)$" {{
      internal;
      set $tideway_stream_login $2;
      nchan_subscriber;
      nchan_channel_group tideway;
      nchan_channel_id $1;
      nchan_channel_id_split_delimiter ",";
      nchan_subscriber_first_message newest;
      nchan_eventsource_ping_interval 25;
      nchan_eventsource_ping_comment "keep-alive";
      nchan_subscribe_request /_events_hook/subscribe;
      nchan_unsubscribe_request /_events_hook/unsubscribe;
    }}
    location ^~ /_events_hook/ {{ internal; proxy_pass http://authz; proxy_http_version 1.1;
      proxy_set_header Connection ""; proxy_set_header X-Chan $tideway_stream_login; proxy_ignore_client_abort on; }}
  }}
  # Stands for the workers: every subscription authorized, every hook answered.
  server {{
    listen unix:{dir}/authz.sock;
    location ~ ^/api/events/(.*)$ {{ add_header X-Accel-Redirect /_events/$1; return 200; }}
    location / {{ return 204; }}
  }}
  server {{
    listen unix:{dir}/events-publish.sock;
    location ~ ^/_publish/([0-9a-z,]+)$ {{
      nchan_publisher;
      nchan_channel_group tideway;
      nchan_channel_id $1;
      nchan_channel_id_split_delimiter ",";
      nchan_message_buffer_length 64;
      nchan_message_timeout 15m;
    }}
    location / {{ return 404; }}
  }}
}}
"""


def start_nginx(folder, workers, port):
    folder = os.path.abspath(folder)
    os.makedirs(os.path.join(folder, "tmp"), exist_ok=True)
    conf = os.path.join(folder, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF.format(dir=folder, workers=workers, port=port,
                                  user="user root;" if os.getuid() == 0 else ""))
    error_log = os.path.join(folder, "error.log")
    subprocess.run(["nginx", "-p", folder + "/", "-c", conf, "-e", error_log], check=True)
    time.sleep(0.5)
    return os.path.join(folder, "events-publish.sock"), error_log


def stop_nginx(folder):
    with open(os.path.join(folder, "nginx.pid")) as f:
        os.kill(int(f.read()), 15)

import argparse
import asyncio
import random
import re
import time
import uuid


def login_channel():
    return "l" + uuid.uuid4().hex


async def http(reader_writer, method, path, headers=()):
    """One request on a publisher connection; a worker that does not answer in 5 s is hung."""
    try:
        return await asyncio.wait_for(exchange(reader_writer, method, path, headers), 5)
    except asyncio.TimeoutError:
        UNANSWERED["publisher"] += 1
        raise


UNANSWERED = {"publisher": 0}


async def exchange(reader_writer, method, path, headers):
    reader, writer = reader_writer
    head = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    writer.write((head + "\r\n").encode())
    await writer.drain()
    status_line = await reader.readline()
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b""):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    body = await reader.readexactly(length) if length else b""
    return int(status_line.split()[1]), body


class Churn:
    def __init__(self, args):
        self.args = args
        self.partitions = ["p" + uuid.uuid4().hex[:30] for _ in range(args.partitions)]
        # --logins: every client reconnects with one of these (logins that keep their rights)
        self.pool = [login_channel() for _ in range(args.logins)]
        self.open = {}          # login channel -> number of open streams
        self.revoked = []       # (time, [channels]) for the later deletes
        self.counts = {"streams": 0, "ended_by_server": 0, "deletes": 0, "redeletes": 0, "infos": 0, "publishes": 0,
                       "refused": 0}
        self.deadline = time.monotonic() + args.seconds

    async def publisher_connection(self):
        return await asyncio.open_unix_connection(self.args.publish_socket)

    async def stream(self):
        """One client: opens a stream for a login, keeps it a while, reconnects (new login when revoked)."""
        channel = random.choice(self.pool) if self.pool else login_channel()
        while time.monotonic() < self.deadline:
            parts = random.sample(self.partitions, k=random.randint(1, 3))
            path = self.args.url_path + ",".join([channel] + sorted(parts))
            try:
                reader, writer = await asyncio.open_connection(self.args.host, self.args.port)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
            self.counts["streams"] += 1
            self.open[channel] = self.open.get(channel, 0) + 1
            ended = False
            try:
                status = await asyncio.wait_for(reader.readline(), 5)
                if b" 200 " not in status:
                    self.counts["refused"] += 1
                keep = random.expovariate(1 / self.args.mean_open)
                end = min(time.monotonic() + keep, self.deadline)
                while time.monotonic() < end:
                    data = await asyncio.wait_for(reader.read(4096), max(0.01, end - time.monotonic()))
                    if not data:
                        ended = True
                        break
            except (asyncio.TimeoutError, OSError, ConnectionError):
                pass
            finally:
                self.open[channel] -= 1
                writer.close()
            if ended:
                self.counts["ended_by_server"] += 1
                # A revoked login's client signs in again: a new login. Some retry the old one
                # first (a subscription authorized just before the revocation).
                if self.pool or random.random() < self.args.same_login:
                    continue
                channel = login_channel()
            await asyncio.sleep(random.random() * 0.05)

    async def revoker(self):
        conn = await self.publisher_connection()
        while time.monotonic() < self.deadline:
            await asyncio.sleep(random.expovariate(1 / self.args.revoke_every))
            live = [c for c, n in self.open.items() if n > 0]
            if not live:
                continue
            batch = random.sample(live, k=min(len(live), random.randint(1, self.args.batch)))
            try:
                await http(conn, "DELETE", "/_publish/" + ",".join(batch))
            except (OSError, ConnectionError, asyncio.IncompleteReadError, IndexError, asyncio.TimeoutError):
                conn = await self.publisher_connection()
            self.counts["deletes"] += 1
            self.revoked.append((time.monotonic(), batch))

    async def redeleter(self):
        """The publisher's two later checkpoints delete the recent revocations' channels again."""
        conn = await self.publisher_connection()
        while time.monotonic() < self.deadline:
            await asyncio.sleep(self.args.checkpoint)
            now = time.monotonic()
            recent = [c for t, batch in self.revoked if now - t < 2 * self.args.checkpoint for c in batch]
            self.revoked = [(t, b) for t, b in self.revoked if now - t < 2 * self.args.checkpoint]
            if self.args.redelete_empty_only:
                recent = [c for c in recent if self.open.get(c, 0) == 0]
            for start in range(0, len(recent), 50):
                try:
                    await http(conn, "DELETE", "/_publish/" + ",".join(recent[start:start + 50]))
                except (OSError, ConnectionError, asyncio.IncompleteReadError, IndexError, asyncio.TimeoutError):
                    conn = await self.publisher_connection()
                self.counts["redeletes"] += 1

    async def informer(self):
        """The stream-count reconciler: channel info on new connections (any worker may answer)."""
        while time.monotonic() < self.deadline:
            await asyncio.sleep(0.05)
            live = list(self.open)
            if not live:
                continue
            channel = random.choice(live)
            try:
                conn = await self.publisher_connection()
                await http(conn, "GET", "/_publish/" + channel, [("Accept", "text/json")])
                conn[1].close()
            except (OSError, ConnectionError, asyncio.IncompleteReadError, IndexError, asyncio.TimeoutError):
                pass
            self.counts["infos"] += 1

    async def partition_publisher(self):
        conn = await self.publisher_connection()
        while time.monotonic() < self.deadline:
            await asyncio.sleep(0.01)
            try:
                await http(conn, "POST", "/_publish/" + random.choice(self.partitions), [("X-EventSource-Event", "change")])
            except (OSError, ConnectionError, asyncio.IncompleteReadError, IndexError, asyncio.TimeoutError):
                conn = await self.publisher_connection()
            self.counts["publishes"] += 1

    async def run(self):
        tasks = [self.stream() for _ in range(self.args.clients)] + [self.revoker()]
        if not self.args.no_redelete:
            tasks.append(self.redeleter())
        if not self.args.no_info:
            tasks.append(self.informer())
        if not self.args.no_publish:
            tasks.append(self.partition_publisher())
        try:
            await asyncio.wait_for(asyncio.gather(*tasks), self.args.seconds + 30)
        except asyncio.TimeoutError:
            self.counts["hung"] = True
        self.counts["unanswered_probes"] = await self.probe()
        self.counts["unanswered_publisher_requests"] = UNANSWERED["publisher"]

    async def probe(self):
        """After the churn: new streams on new connections (the kernel spreads them over the
        workers); one that gets no status line in 3 s met a hung worker."""
        unanswered = 0
        for _ in range(20):
            try:
                reader, writer = await asyncio.open_connection(self.args.host, self.args.port)
                writer.write(f"GET {self.args.url_path}{login_channel()},{self.partitions[0]} HTTP/1.1\r\n"
                             "Host: x\r\nAccept: text/event-stream\r\n\r\n".encode())
                await asyncio.wait_for(reader.readline(), 3)
                writer.close()
            except (OSError, asyncio.TimeoutError):
                unanswered += 1
        return unanswered


def deaths(error_log, offset):
    with open(error_log, "rb") as f:
        f.seek(offset)
        text = f.read().decode(errors="replace")
    return [line for line in text.splitlines() if "exited on signal" in line], text


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", default="http://127.0.0.1:9182/api/events/")
    p.add_argument("--publish-socket")
    p.add_argument("--error-log")
    p.add_argument("--nginx-dir", help="start an nginx of its own here (and stop it after)")
    p.add_argument("--nginx-workers", type=int, default=2)
    p.add_argument("--port", type=int, default=9182, help="with --nginx-dir: its loopback port")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--clients", type=int, default=200)
    p.add_argument("--partitions", type=int, default=20)
    p.add_argument("--mean-open", type=float, default=1.0, help="mean seconds a client keeps a stream")
    p.add_argument("--revoke-every", type=float, default=0.02, help="mean seconds between revocations")
    p.add_argument("--batch", type=int, default=5, help="most login channels per DELETE (the publisher sends up to 50)")
    p.add_argument("--logins", type=int, default=0, help="clients share this many logins and always reconnect with theirs")
    p.add_argument("--same-login", type=float, default=0.3, help="chance a closed client reconnects with its login")
    p.add_argument("--checkpoint", type=float, default=5.0)
    p.add_argument("--no-redelete", action="store_true")
    p.add_argument("--redelete-empty-only", action="store_true")
    p.add_argument("--no-info", action="store_true")
    p.add_argument("--no-publish", action="store_true")
    args = p.parse_args()
    if args.nginx_dir:
        args.url = f"http://127.0.0.1:{args.port}/api/events/"
        args.publish_socket, args.error_log = start_nginx(args.nginx_dir, args.nginx_workers, args.port)
    m = re.match(r"http://([^:/]+):(\d+)(/.*)$", args.url)
    args.host, args.port, args.url_path = m.group(1), int(m.group(2)), m.group(3)
    with open(args.error_log, "rb") as f:
        offset = f.seek(0, 2)
    churn = Churn(args)
    try:
        asyncio.run(churn.run())
    finally:
        if args.nginx_dir:
            stop_nginx(args.nginx_dir)
    died, text = deaths(args.error_log, offset)
    ipc = sum("already subscribed channel" in line for line in text.splitlines())
    print(f"{churn.counts} ipc-already-subscribed={ipc} worker deaths={len(died)}")
    for line in died:
        print("  " + line)


if __name__ == "__main__":
    main()
