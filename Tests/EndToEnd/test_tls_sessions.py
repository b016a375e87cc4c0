"""TLS sessions resume on every nginx instance. The instances (NGINX_INSTANCES, two in `make
test`) share the port and the kernel gives each new connection to either; they share their
session-ticket keys too (Deploy/tls-ticket-keys.sh, the site's ssl_session_ticket_key lines),
so a client coming back with its session resumes wherever it lands, and a rotation of the
keys keeps the tickets issued before it (docs/operations.md, "TLS sessions"). Which instance
holds a connection is read from /proc: the nginx worker whose descriptors hold its socket."""
import os
import re
import socket
import ssl
import stat
import subprocess
import urllib.parse

import pytest

from conftest import CA, STATE, URL
from nginx_instances import children, masters, reloaded

HOST = urllib.parse.urlsplit(URL).hostname
PORT = urllib.parse.urlsplit(URL).port or 443
KEYS = os.path.join(STATE, "tls", "session-tickets")
DEPLOY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "Deploy")
STACK = os.path.join(DEPLOY, "dev", "stack.sh")
VERSIONS = {"1.3": ssl.TLSVersion.TLSv1_3, "1.2": ssl.TLSVersion.TLSv1_2}


def instance_holding(client_port):
    """The instance whose worker holds the server side of our connection from client_port."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                local_port = int(fields[1].rsplit(":", 1)[1], 16)
                remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                if local_port == PORT and remote_port == client_port:
                    inodes.add(f"socket:[{fields[9]}]")
    for number, master in masters().items():
        for pid in children(master):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                        return number
                except OSError:
                    pass  # closed meanwhile: not ours, which stays open
    raise AssertionError(f"no nginx worker holds the connection from port {client_port}")


def context(version):
    ctx = ssl.create_default_context(cafile=CA)
    ctx.minimum_version = ctx.maximum_version = VERSIONS[version]
    return ctx


def connect(ctx, session=None):
    """A returning client's connection: (its session, whether it resumed, the instance that
    held it). The request is read to the end: TLS 1.3's tickets come after the handshake."""
    with socket.create_connection((HOST, PORT)) as raw:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with ctx.wrap_socket(raw, server_hostname=HOST, session=session) as tls:
            instance = instance_holding(tls.getsockname()[1])
            tls.sendall(f"HEAD /static/live.js HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
            answer = b""
            while chunk := tls.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 200"), answer[:80]
            return tls.session, tls.session_reused, instance


def resumptions(ctx, session, least=20, most=80, each=3):
    """Connections offering `session` until every instance held `each` of them (and `least`
    in all): [(resumed, instance)] of each."""
    seen = []
    everyone = set(masters())
    while len(seen) < most:
        _, reused, instance = connect(ctx, session)
        seen.append((reused, instance))
        if len(seen) >= least and all(sum(i == n for _, i in seen) >= each for n in everyone):
            return seen
    raise AssertionError(f"{most} connections did not reach every instance {sorted(everyone)} "
                         f"{each} times: {[i for _, i in seen]}")


def ticket_key_name(version="1.3"):
    """The key name (the first 16 bytes) of a ticket nginx issues now, as openssl s_client
    keeps it (Python does not show a ticket's bytes)."""
    out = os.path.join(STATE, "tls-test-session.pem")
    request = f"HEAD /static/live.js HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n"
    subprocess.run(["openssl", "s_client", "-connect", f"{HOST}:{PORT}", "-CAfile", CA, f"-tls{version.replace('.', '_')}",
                    "-servername", HOST, "-sess_out", out, "-ign_eof", "-quiet"],
                   input=request.encode(), capture_output=True, check=True, timeout=20)
    text = subprocess.run(["openssl", "sess_id", "-in", out, "-noout", "-text"],
                          capture_output=True, text=True, check=True).stdout
    os.remove(out)
    first_line = re.search(r"TLS session ticket:\s*0000 - ((?:[0-9a-f]{2}[ -]){15}[0-9a-f]{2})", text)
    return bytes.fromhex(first_line.group(1).replace("-", " "))


def key(name):
    with open(os.path.join(KEYS, f"{name}.key"), "rb") as f:
        return f.read()


def rotate():
    """`stack.sh rotate-tickets`: a new key, then every instance reloaded."""
    reloaded(lambda: subprocess.run([STACK, "rotate-tickets"], env={**os.environ, "STATE": STATE}, check=True,
                                    capture_output=True, timeout=60))


@pytest.mark.skipif(len(masters()) < 2, reason="the stack runs one nginx instance")
@pytest.mark.parametrize("version", ["1.3", "1.2"])
def test_a_session_resumes_on_every_instance(version):
    ctx = context(version)
    session, _, issuer = connect(ctx)
    seen = resumptions(ctx, session)
    failed = [instance for reused, instance in seen if not reused]
    assert not failed, f"TLS {version}: {len(failed)} of {len(seen)} resumptions failed, on instances " \
                       f"{sorted(set(failed))} (the ticket came from instance {issuer})"


def test_the_ticket_keys_are_private_and_random():
    assert stat.S_IMODE(os.stat(KEYS).st_mode) == 0o700
    keys = []
    for name in ("current", "next", "previous"):
        path = os.path.join(KEYS, f"{name}.key")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
        keys.append(key(name))
        assert len(keys[-1]) == 80, path  # nginx's 80-byte form: name, HMAC and AES-256 keys
    assert len(set(keys)) == 3


def test_making_the_keys_again_keeps_them_and_puts_their_modes_right(tmp_path):
    folder = tmp_path / "tickets"
    subprocess.run([os.path.join(DEPLOY, "tls-ticket-keys.sh"), "make", str(folder)], check=True)
    made = {name: (folder / f"{name}.key").read_bytes() for name in ("current", "next", "previous")}
    os.chmod(folder, 0o755)
    os.chmod(folder / "next.key", 0o644)
    (folder / "previous.key").unlink()
    subprocess.run([os.path.join(DEPLOY, "tls-ticket-keys.sh"), "make", str(folder)], check=True)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder / "next.key").st_mode) == 0o600
    assert (folder / "current.key").read_bytes() == made["current"]
    assert (folder / "next.key").read_bytes() == made["next"]
    remade = (folder / "previous.key").read_bytes()
    assert len(remade) == 80 and remade not in made.values()
    assert sorted(p.name for p in folder.iterdir()) == ["current.key", "next.key", "previous.key"]


def test_a_rotation_keeps_the_tickets_issued_before_it_and_encrypts_under_the_next_key():
    contexts = {v: context(v) for v in VERSIONS}  # a session resumes only in its own context
    old = {v: connect(ctx)[0] for v, ctx in contexts.items()}
    current, upcoming = key("current"), key("next")
    assert ticket_key_name() == current[:16]

    rotate()
    assert key("previous") == current and key("current") == upcoming and key("next") not in (current, upcoming)
    assert ticket_key_name() == upcoming[:16]
    for version, session in old.items():
        seen = resumptions(contexts[version], session, least=6, each=1)
        assert all(reused for reused, _ in seen), f"TLS {version}, a ticket from before the rotation: {seen}"
    newer = connect(contexts["1.3"])[0]

    # A second rotation retires the key the old tickets were under: they no longer resume.
    rotate()
    assert not any(reused for reused, _ in resumptions(contexts["1.3"], old["1.3"], least=6, each=1))
    assert all(reused for reused, _ in resumptions(contexts["1.3"], newer, least=6, each=1))
