"""A process's own counters, read from /proc one way for every bench: CPU in clock ticks
(/proc/<pid>/stat), CPU in nanoseconds over all its threads (/proc/<pid>/task/*/schedstat)
and memory (/proc/<pid>/status). A process gone by the time it is read counts nothing."""
import os

TICK = os.sysconf("SC_CLK_TCK")


def read_pid(path):
    """The pid in a pid file, or None (no such file, or nothing written in it yet)."""
    try:
        with open(path) as f:
            return int(f.readline().strip())
    except (OSError, ValueError):
        return None


def stat(pid):
    """(parent pid, clock ticks of CPU it used, ticks its reaped children used), or None
    once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # the name in (...) may hold spaces
        # after the ")": state ppid ... utime(12) stime(13) cutime(14) cstime(15), 0-based from state
        return int(fields[1]), int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
    except (OSError, IndexError, ValueError):
        return None


def processes():
    """stat() of every process now: {pid: (parent pid, ticks, reaped children's ticks)}."""
    table = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            counters = stat(name)
            if counters:
                table[int(name)] = counters
    return table


def family_ticks(table, pid, reaped=False):
    """Clock ticks of `pid` and of its children now alive, from a processes() table (0 when
    it is not there); with `reaped`, its reaped children's too (PostgreSQL's postmaster
    reaps every backend that has ended)."""
    if pid not in table:
        return 0
    return table[pid][1] + (table[pid][2] if reaped else 0) + sum(t[1] for t in table.values() if t[0] == pid)


def threads_ns(pid):
    """CPU nanoseconds so far of every thread of `pid` (0 once it is gone): the scheduler's
    own counter, finer than clock ticks, for costs of a few milliseconds."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for task in tasks:
        # A thread that ends between the listing and its read counts nothing; the others
        # still count (one try around the loop would drop every thread after it).
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def status_kb(pid, field="VmRSS"):
    """One memory line of /proc/<pid>/status (VmRSS, VmHWM, RssAnon, RssShmem…) in kB; 0
    once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith(field + ":")), 0)
    except OSError:
        return 0
