"""A worker started by systemd socket activation (LISTEN_FDS) and restarted, as
`systemctl restart tideway-worker@1` does, keeps its socket working: systemd holds the
listening socket across the restart, so the worker must leave it as it found it (issue 20,
rolling upgrade). Here this test plays systemd: it owns the socket and starts the worker
on it twice."""
import os
import signal
import socket
import subprocess
import time

from conftest import STATE, WORKER_DB, fastcgi

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKER = os.path.join(REPO, ".build/release/tideway-worker")


def start_worker(listener, log):
    """The worker with the socket at fd 3, as systemd passes it (LISTEN_PID is the child's own pid)."""
    env = {**os.environ, "TIDEWAY_DATABASE": WORKER_DB, "TIDEWAY_THREADS": "4", "TIDEWAY_HOME": REPO,
           "TIDEWAY_BLOB_ROOT": os.path.join(STATE, "blobs"), "TIDEWAY_STATE": STATE, "LISTEN_FDS": "1",
           "TIDEWAY_METRICS_DIR": os.path.join(STATE, "metrics")}
    env.pop("TIDEWAY_SOCKET", None)

    # LISTEN_PID must name the worker itself: set in the child, after fork, before exec.
    return subprocess.Popen(["/bin/sh", "-c", 'LISTEN_PID=$$ exec "$0"', WORKER], env=env,
                            preexec_fn=lambda: os.dup2(listener.fileno(), 3), close_fds=False,
                            stdout=subprocess.DEVNULL, stderr=log)


def healthz(path):
    return fastcgi(path, "GET", "/healthz", timeout=10)[0]


def test_a_restarted_socket_activated_worker_answers_on_the_same_socket(tmp_path):
    path = str(tmp_path / "worker.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(128)
    listener.set_inheritable(True)
    log = open(tmp_path / "worker.log", "w")
    worker = start_worker(listener, log)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                assert healthz(path) == 200
                break
            except OSError:
                assert time.monotonic() < deadline, "the worker never answered"
                time.sleep(0.2)
        worker.send_signal(signal.SIGTERM)  # systemctl restart: TERM, wait, start again
        try:
            assert worker.wait(timeout=20) == 0
        except subprocess.TimeoutExpired:
            raise AssertionError("the worker did not stop on SIGTERM: " + (tmp_path / "worker.log").read_text()[-2000:])
        worker = start_worker(listener, log)
        deadline = time.monotonic() + 20
        while True:
            try:
                assert healthz(path) == 200
                break
            except ConnectionRefusedError:
                raise AssertionError("the socket refuses connections after the worker's restart")
            except OSError:
                assert time.monotonic() < deadline, "the restarted worker never answered"
                time.sleep(0.2)
    finally:
        worker.kill()
        worker.wait()
        listener.close()
