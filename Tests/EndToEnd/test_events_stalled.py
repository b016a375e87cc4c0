"""A stream whose client stopped reading is closed (Deploy/nginx: send_timeout under the
keep-alive interval), so that nginx does not keep every later event for it without bound;
a stream that reads is left open (docs/performance/round-07.md, "nginx's memory under a long-held
event stream")."""
import hashlib
import http.client
import json
import os
import re
import socket
import ssl
import threading
import time
import urllib.parse

from conftest import CA, STATE, URL, login, new_user
from synclib import new_agency


def publisher_sockets():
    """Every nginx instance's publisher socket (Deploy/dev/stack.sh NGINX_INSTANCES):
    events-publish.sock, events-publish-2.sock, ..."""
    run = os.path.join(STATE, "run")
    return sorted(os.path.join(run, f) for f in os.listdir(run) if re.fullmatch(r"events-publish(-\d+)?\.sock", f))


class InstancePublisher(http.client.HTTPConnection):
    """One nginx instance's publisher endpoint, as `tideway events` reaches it."""

    def __init__(self, path):
        super().__init__("localhost")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)

    def call(self, method, channel, body=None):
        self.request(method, "/_publish/" + channel, body,
                     {"Accept": "text/json", "X-EventSource-Event": "change", "Content-Type": "application/json"})
        answer = self.getresponse()
        return answer.status, answer.read()

    def held(self, channel):
        """How many streams this instance's nchan holds on the channel."""
        status, body = self.call("GET", channel)
        return json.loads(body)["subscribers"] if status == 200 else 0


class Publisher:
    """nginx's publisher endpoints as `tideway events` uses them: a call goes to every
    instance (its answer: the first that is not 2xx, else the first), a count is their sum."""

    def __init__(self):
        self.instances = [InstancePublisher(path) for path in publisher_sockets()]
        assert self.instances, "no publisher socket in the run folder"

    def call(self, method, channel, body=None):
        answers = [instance.call(method, channel, body) for instance in self.instances]
        return next((a for a in answers if not 200 <= a[0] < 300), answers[0])

    def held(self, channel):
        """How many streams nchan holds on the channel, over every instance."""
        return sum(instance.held(channel) for instance in self.instances)


def open_stream(token, partition, receive_buffer=None):
    """An events stream on a raw TLS socket, past its answer's head."""
    host = urllib.parse.urlsplit(URL)
    raw = socket.socket()
    if receive_buffer:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    raw.connect((host.hostname, host.port))
    sock = ssl.create_default_context(cafile=CA).wrap_socket(raw, server_hostname=host.hostname)
    sock.sendall((f"GET /api/v1/sync/events?partition={urllib.parse.quote(partition, safe='')} HTTP/1.1\r\n"
                  f"Host: {host.hostname}\r\nAccept: text/event-stream\r\nAuthorization: Bearer {token}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 200"), head
    return sock


def count_ids(sock, ids):
    """Reads a stream until it ends, adding each event's id to `ids`."""
    rest = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except OSError:
            return
        if not chunk:
            return
        rest += chunk
        ids.update(re.findall(rb"(?m)^id: (\S+)\r?$", rest))
        rest = rest[rest.rfind(b"\n") + 1:]


def test_a_stream_that_stops_reading_is_closed_and_one_that_reads_is_not():
    agency = new_agency()
    partition = f"agency={agency}"
    channel = "p" + hashlib.sha256(partition.encode()).hexdigest()[:30]
    token = login(new_user(agency=agency))["accessToken"]
    reader_ids = set()
    reader = open_stream(token, partition)
    counting = threading.Thread(target=count_ids, args=(reader, reader_ids), daemon=True)
    counting.start()
    stalled = open_stream(token, partition, receive_buffer=4096)  # opened, then never read
    try:
        check_streams(channel, partition, reader_ids)
    finally:
        # Ended before closed: a socket closed while its reading thread waits in recv keeps
        # the thread reading by fd number, and once the number is reused (the next test's
        # connection) OpenSSL there reads that connection's bytes (a handshake then fails
        # with WRONG_VERSION_NUMBER in an unrelated test).
        try:
            reader.shutdown(socket.SHUT_RDWR)
        except OSError:  # nginx ended it first
            pass
        counting.join(timeout=10)
        reader.close()
        stalled.close()


def check_streams(channel, partition, reader_ids):
    publisher = Publisher()
    deadline = time.monotonic() + 10
    while publisher.held(channel) < 2:
        assert time.monotonic() < deadline, "the two streams never subscribed"
        time.sleep(0.1)

    # More than the kernel's socket buffers hold, so that nginx itself must keep the rest.
    event = json.dumps({"partition": partition, "filler": "x" * 4000})
    for _ in range(2500):
        assert publisher.call("POST", channel, event)[0] in (201, 202)

    # No more events: only keep-alive comments (every 25 s), which re-armed nginx's default
    # 60 s send_timeout at each write, so the stalled stream was never closed.
    deadline = time.monotonic() + 50
    while publisher.held(channel) != 1:
        assert time.monotonic() < deadline, "the stream that stopped reading is still held"
        time.sleep(0.5)

    assert publisher.call("POST", channel, event)[0] in (201, 202)
    deadline = time.monotonic() + 10
    while len(reader_ids) < 2501:
        assert time.monotonic() < deadline, f"the reading stream got {len(reader_ids)} of 2,501 events"
        time.sleep(0.1)
