"""The test stack's nginx instances, read from their pid files and /proc: each one's master,
the workers that accept connections, a reload of them all that waits until it took, and the
workers that died (nginx's error log). Also used by Tests/Cluster (a node's nginx, its own
log): so STATE is read here, as conftest reads it, not imported from conftest."""
import glob
import os
import re
import signal
import time

STATE = os.environ.get("TIDEWAY_TEST_STATE")


def masters():
    """{instance number: its master's pid}, from run/nginx.pid and run/nginx-N.pid."""
    found = {}
    for path in glob.glob(os.path.join(STATE, "run", "nginx*.pid")):
        number = re.fullmatch(r"nginx(?:-(\d+))?\.pid", os.path.basename(path)).group(1)
        with open(path) as f:
            found[int(number or 1)] = int(f.read().strip())
    return found


def cores(instance):
    """The folder where instance `instance`'s crashed workers leave their cores (nginx's
    working_directory, Deploy/dev/stack.sh: nginx/cores for 1, nginx-N/cores for N)."""
    return os.path.join(STATE, "nginx" if instance == 1 else f"nginx-{instance}", "cores")


def children(master):
    with open(f"/proc/{master}/task/{master}/children") as f:
        return [int(pid) for pid in f.read().split()]


def workers(master):
    """The master's worker processes that accept connections: not those a reload told to
    finish ("worker process is shutting down": they closed their listening sockets)."""
    serving = set()
    for pid in children(master):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"shutting down" not in f.read():
                    serving.add(pid)
        except OSError:
            pass  # gone meanwhile
    return serving


def reloaded(action, of=None):
    """Runs `action` (it reloads every instance), then waits until every instance's accepting
    workers are new ones (a reload is asynchronous; an old worker may still finish requests
    in hand, but accepts nothing more). `of`: {name: master's pid}, this stack's by default
    (a reload keeps the master)."""
    of = masters() if of is None else of
    before = {n: workers(m) for n, m in of.items()}
    action()
    deadline = time.time() + 15
    while time.time() < deadline:
        now = {n: workers(m) for n, m in of.items()}
        if all(now[n] and not now[n] & before[n] for n in before):
            return
        time.sleep(0.1)
    raise AssertionError(f"nginx did not reload: workers {before} then {now}")


def reload():
    """Every instance reloaded (its master's SIGHUP, what `nginx -s reload` sends)."""
    reloaded(lambda: [os.kill(master, signal.SIGHUP) for master in masters().values()])


ERROR_LOG = os.path.join(STATE or "", "log", "nginx-error.log")


def error_log_size(log=ERROR_LOG):
    return os.path.getsize(log)


def worker_deaths_since(offset, log=ERROR_LOG):
    """The error log's lines, from byte `offset` on, of a worker that died ("exited on signal",
    followed by " (core dumped)" when it left a core)."""
    with open(log, "rb") as f:
        f.seek(offset)
        return [line for line in f.read().decode(errors="replace").splitlines() if "exited on signal" in line]
