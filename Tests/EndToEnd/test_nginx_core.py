"""A crashed nginx worker leaves evidence (docs/operations.md, "When nginx's worker dies"): a
worker of the test stack's last nginx instance, found through its master's pid file, killed with
SIGSEGV, leaves a core in its instance's working_directory (Deploy/dev/stack.sh), the error log
names its death as the tests that count deaths read it (Tests/EndToEnd/nginx_instances.py), and
the master starts a new worker, so the stack keeps serving, change events included."""
import os
import shutil
import signal
import stat
import subprocess
import time

import pytest

from conftest import api, login, new_user
from nginx_instances import cores, error_log_size, masters, worker_deaths_since, workers
from test_events import Stream, push_report, wait_until_subscribed


def replaced(master, victim, timeout=15):
    """The master's new worker, once the killed one is gone."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        now = workers(master)
        if now and victim not in now:
            return now
        time.sleep(0.05)
    raise AssertionError(f"nginx's master {master} started no worker after {victim}")


def test_a_worker_killed_by_sigsegv_leaves_a_core_and_the_stack_keeps_serving():
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith(("|", "/")):
        pytest.skip(f"cores go to a program or a folder of the host's (kernel.core_pattern {pattern!r}), "
                    "not to nginx's working_directory")
    instance, master = max(masters().items())
    folder = cores(instance)
    for old in os.listdir(folder):
        os.remove(os.path.join(folder, old))
    victim = min(workers(master))
    offset = error_log_size()
    os.kill(victim, signal.SIGSEGV)
    replaced(master, victim)
    # The core's name is the host's (kernel.core_pattern, core_uses_pid): "core" here, maybe
    # "core.<pid>" or another pattern elsewhere; the folder holds nothing else.
    found = os.listdir(folder)
    core = os.path.join(folder, found[0]) if len(found) == 1 else None
    try:
        assert core, f"one core in {folder}: {found}"
        deaths = worker_deaths_since(offset)
        assert len(deaths) == 1 and f" {victim} exited on signal 11 (core dumped)" in deaths[0], deaths
        # The kernel wrote it before the worker's exit reached the master: complete, the
        # worker's, readable by its owner only (it holds TLS keys and tokens in flight).
        info = os.stat(core)
        assert stat.S_IMODE(info.st_mode) == 0o600, oct(info.st_mode)
        with open(core, "rb") as f:
            assert f.read(4) == b"\x7fELF"
        # What docs/operations.md tells an operator to run, when gdb is there.
        if shutil.which("gdb"):
            nginx = shutil.which("nginx") or "/usr/sbin/nginx"
            out = subprocess.run(["gdb", "-batch", "-ex", "bt", nginx, core], capture_output=True, text=True,
                                 timeout=120).stdout
            assert "nginx: worker process" in out and "SIGSEGV" in out, out
        for _ in range(10):
            assert api("GET", "/healthz").status_code == 200
        # nchan in the new worker: a stream opens and hears the next change.
        token = login(new_user(agency="Gabon"))["accessToken"]
        stream = Stream(token, ["agency=Gabon"])
        try:
            assert stream.status == 200
            wait_until_subscribed(stream)
            push_report("gabon.officer2@demo.tideway")
            event = stream.next()
            assert event not in (None, "timeout"), event
        finally:
            stream.hang_up()
    finally:
        for left in os.listdir(folder):
            os.remove(os.path.join(folder, left))

