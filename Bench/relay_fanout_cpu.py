"""What relaying a notification over a local socket would cost (docs/performance/round-19-relay.md,
"The relay's own cost"): one process writes a frame the size of a `tideway_changes`
notification to each of N reader processes over Unix stream sockets (socketpairs), one frame
every INTERVAL ms as lone pushes come; each reader sleeps in poll() and reads its frame, as a
worker's listener thread would. CPU from /proc/<pid>/schedstat, per frame; a leg without
writes (the writer's timed sleeps alone) is subtracted from the writer's figure.

Python's own per-call cost is in every figure, so they are upper bounds of what the Swift
publisher and workers would spend (a frame written and read by Swift is two system calls and
a wake-up, with no interpreter around them). No stack needed:

    python3 Bench/relay_fanout_cpu.py FRAMES READERS [INTERVAL_MS]"""
import os
import select
import socket
import sys
import time

FRAME = b"tideway_changes\0agency=WildAid reports\n"


def run_ns(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def reader(sock, frames):
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    got = 0
    while got < frames:
        poller.poll()
        got += sock.recv(65536).count(b"\n")
    os._exit(0)


def leg(frames, readers, interval, write):
    pairs = [socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(readers if write else 0)]
    pids = []
    for ours, theirs in pairs:
        pid = os.fork()
        if pid == 0:
            ours.close()
            reader(theirs, frames)
        theirs.close()
        pids.append(pid)
    time.sleep(0.2)
    before = [run_ns(p) for p in pids], run_ns(os.getpid())
    next_at = time.monotonic()
    for _ in range(frames):
        next_at += interval
        time.sleep(max(0.0, next_at - time.monotonic()))
        if write:
            for ours, _ in pairs:
                ours.send(FRAME)
    mine = run_ns(os.getpid()) - before[1]
    theirs = [run_ns(p) - b for p, b in zip(pids, before[0])]
    for pid in pids:
        os.waitpid(pid, 0)
    return mine, theirs


def main():
    frames, readers = int(sys.argv[1]), int(sys.argv[2])
    interval = (float(sys.argv[3]) if len(sys.argv) > 3 else 2.0) / 1000
    idle, _ = leg(frames, readers, interval, write=False)
    busy, theirs = leg(frames, readers, interval, write=True)
    print(f"{frames} frames to {readers} readers every {interval * 1000:g} ms: writer "
          f"{(busy - idle) / frames / readers / 1000:.1f} µs per frame written "
          f"(sleeps alone {idle / frames / 1000:.1f} µs per frame, subtracted); readers, µs per frame read: "
          + ", ".join(f"{t / frames / 1000:.1f}" for t in theirs))


if __name__ == "__main__":
    main()
