"""nginx's memory while events are written to long-held streams (docs/performance/round-07.md,
"nginx's memory under a long-held event stream").

Holds STREAMS event streams of one Gabon officer on the partition agency=Gabon, publishes
EVENTS events of ~0.5 KB (as large as a carried report) to that partition's channel through
the publisher's socket (as `tideway events` does, without PostgreSQL in the loop, so that
tens of thousands of events take a minute), and prints the nginx worker's RSS and nchan's
shared memory every SAMPLE events, then every 10 s for HOLD seconds with no events (with
how many streams nchan still holds); then closes the streams and prints them again.
Every stream must receive every event it was open for, or the run fails: a stream that
nginx closes (nchan_subscriber_timeout) is reopened with Last-Event-ID, as a client does.

Environment: the stack's STATE, TIDEWAY_TEST_URL, TIDEWAY_TEST_CA (Deploy/dev/test.sh).
It follows one nginx worker: run it against a stack of one nginx instance
(NGINX_INSTANCES=1 Deploy/dev/stack.sh up).
"""
import hashlib
import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse

from proc_counters import status_kb

STATE = os.environ["STATE"]
URL = os.environ["TIDEWAY_TEST_URL"]
CA = os.environ["TIDEWAY_TEST_CA"]
STREAMS = int(os.environ.get("STREAMS", "4"))
# Streams that are opened and then never read (a device gone quiet without closing its
# connection): what nginx holds for them while events keep coming.
STALLED = int(os.environ.get("STALLED", "0"))
EVENTS = int(os.environ.get("EVENTS", "30000"))
SAMPLE = int(os.environ.get("SAMPLE", "3000"))
# Seconds to keep watching after the last event (no more events: only keep-alive comments).
HOLD = int(os.environ.get("HOLD", "0"))
PARTITION = "agency=Gabon"
CHANNEL = "p" + hashlib.sha256(PARTITION.encode()).hexdigest()[:30]


class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)


def token():
    host = urllib.parse.urlsplit(URL)
    conn = http.client.HTTPSConnection(host.hostname, host.port, context=ssl.create_default_context(cafile=CA))
    conn.request("POST", "/api/v1/auth/login", json.dumps({"email": "gabon.officer1@demo.tideway",
                                                            "password": "tideway-demo"}),
                 {"Content-Type": "application/json"})
    answer = conn.getresponse()
    assert answer.status == 200, answer.read()
    return json.loads(answer.read())["accessToken"]


class Stream(threading.Thread):
    """One held stream, reading on its own thread; counts the events it got, reconnects with
    Last-Event-ID when the server ends the stream (and counts the reconnections)."""

    def __init__(self, access, stalled=False):
        super().__init__(daemon=True)
        self.stalled = stalled
        self.access, self.ids, self.reconnects, self.closing = access, [], 0, False
        self.last_id, self.sock, self.opened = None, None, threading.Event()

    def open(self):
        host = urllib.parse.urlsplit(URL)
        raw = socket.create_connection((host.hostname, host.port))
        self.sock = ssl.create_default_context(cafile=CA).wrap_socket(raw, server_hostname=host.hostname)
        head = (f"GET /api/v1/sync/events?partition={urllib.parse.quote(PARTITION, safe='')} HTTP/1.1\r\n"
                f"Host: {host.hostname}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {self.access}\r\n")
        if self.last_id:
            head += f"Last-Event-ID: {self.last_id}\r\n"
        self.sock.sendall((head + "\r\n").encode())

    def run(self):
        while not self.closing:
            self.open()
            buffer, seen_head = b"", False
            while True:
                try:
                    chunk = self.sock.recv(65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    break
                buffer += chunk
                if not seen_head and b"\r\n\r\n" in buffer:
                    head, buffer = buffer.split(b"\r\n\r\n", 1)
                    assert b" 200 " in head.split(b"\r\n")[0], head
                    seen_head = True
                    self.opened.set()
                    if self.stalled:
                        self.wait_stalled()
                        return
                # Chunked encoding's size lines never start with "id: ", so a line scan suffices.
                for match in re.finditer(rb"(?m)^id: (\S+)\r?$", buffer):
                    self.last_id = match.group(1).decode()
                    self.ids.append(self.last_id)
                buffer = buffer[buffer.rfind(b"\n") + 1:]
            if not self.closing:
                self.reconnects += 1

    def wait_stalled(self):
        """Reads nothing more until closed; a stalled stream's socket buffers fill up."""
        while not self.closing:
            time.sleep(0.2)

    def close(self):
        self.closing = True
        self.sock.shutdown(socket.SHUT_RDWR)


def nginx_worker():
    master = open(os.path.join(STATE, "run/nginx.pid")).read().strip()
    children = subprocess.run(["pgrep", "-P", master], capture_output=True, text=True).stdout.split()
    return next(pid for pid in children if "worker" in open(f"/proc/{pid}/cmdline").read())


def memory(pid):
    """RSS and its parts (heap: anonymous private; shared: nchan's zone), in MB."""
    return {field: status_kb(pid, field) / 1024 for field in ("VmRSS", "RssAnon", "RssShmem")}


def subscribers():
    """How many streams nchan holds on the channel (its channel info)."""
    conn = UnixHTTP(os.path.join(STATE, "run/events-publish.sock"))
    conn.request("GET", "/_publish/" + CHANNEL, headers={"Accept": "text/json"})
    answer = conn.getresponse()
    body = answer.read().decode()
    return json.loads(body)["subscribers"] if answer.status == 200 else 0


def line(label, pid, started):
    m = memory(pid)
    print(f"{label:>12}  RSS {m['VmRSS']:7.1f} MB  anon {m['RssAnon']:7.1f}  shmem {m['RssShmem']:6.1f}"
          f"  streams held {subscribers()}  ({time.monotonic() - started:5.1f} s)", flush=True)


def main():
    if os.path.exists(os.path.join(STATE, "run/events-publish-2.sock")):
        sys.exit("held_stream_memory.py follows one nginx worker: start the stack with NGINX_INSTANCES=1")
    pid = nginx_worker()
    access = token()
    started = time.monotonic()
    line("before", pid, started)
    streams = [Stream(access) for _ in range(STREAMS)]
    stalled = [Stream(access, stalled=True) for _ in range(STALLED)]
    for stream in streams + stalled:
        stream.start()
        assert stream.opened.wait(10), "a stream did not open"
    time.sleep(0.5)  # the subscribe hook
    line("open", pid, started)
    publisher = UnixHTTP(os.path.join(STATE, "run/events-publish.sock"))
    body = json.dumps({"partition": PARTITION, "after": "0", "cursor": "0",
                       "changes": [{"collection": "reports", "id": "x" * 24, "doc": {"text": "y" * 380}}]})
    for n in range(1, EVENTS + 1):
        publisher.request("POST", "/_publish/" + CHANNEL, body,
                          {"X-EventSource-Event": "change", "Content-Type": "application/json"})
        answer = publisher.getresponse()
        answer.read()
        assert answer.status in (201, 202), answer.status
        if n % SAMPLE == 0:
            line(f"{n} events", pid, started)
    for waited in range(10, HOLD + 1, 10):
        time.sleep(10)
        line(f"+{waited} s", pid, started)
    deadline = time.monotonic() + 30
    while any(len(set(s.ids)) < EVENTS for s in streams) and time.monotonic() < deadline:
        time.sleep(0.2)
    got = [len(set(s.ids)) for s in streams]
    print(f"received (distinct ids) per stream: {got}; reconnections: {[s.reconnects for s in streams]}")
    for stream in streams + stalled:
        stream.close()
    time.sleep(1)
    line("closed", pid, started)
    if any(count < EVENTS for count in got):
        sys.exit("a stream lost events")


if __name__ == "__main__":
    main()
