"""Percentiles of one WAL-sized flush on the disk a stack uses, per wal_sync_method
(docs/performance/round-15.md, "The write's own tail, fifteenth round").

pg_test_fsync prints averages only; a commit's tail is the slow flushes. This writes 8 kB at
the next offset of a preallocated 16 MB file (a WAL segment's shape, so no flush also writes
the file's size) and flushes it the way each method does, the methods interleaved write by
write so that every method meets the same moments of the host, with a pause between writes as
the event row's lone pushes have (the disk is idle before each, as before a lone commit):

  fdatasync      pwrite, then fdatasync (PostgreSQL's default on Linux)
  fsync          pwrite, then fsync
  open_datasync  pwrite on a descriptor opened O_DSYNC (one call)
  open_sync      pwrite on a descriptor opened O_SYNC

  python3 Bench/wal_flush_timing.py [DIR] [--writes N] [--gap-ms G] [--size BYTES]

DIR defaults to .state (the stacks' filesystem); the file is removed after."""
import argparse
import os
import time

SEGMENT = 16 * 1024 * 1024


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * q))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dir", nargs="?", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".state"))
    parser.add_argument("--writes", type=int, default=300, help="flushes per method")
    parser.add_argument("--gap-ms", type=float, default=20.0, help="pause before each write")
    parser.add_argument("--size", type=int, default=8192, help="bytes written per flush")
    args = parser.parse_args()

    path = os.path.join(args.dir, f"wal-flush-timing.{os.getpid()}")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        # Filled and flushed first, as PostgreSQL fills a new segment with zeros.
        block = b"\0" * (1024 * 1024)
        for _ in range(SEGMENT // len(block)):
            os.write(fd, block)
        os.fsync(fd)
        descriptors = {
            "fdatasync": (fd, os.fdatasync),
            "fsync": (fd, os.fsync),
            "open_datasync": (os.open(path, os.O_RDWR | os.O_DSYNC), None),
            "open_sync": (os.open(path, os.O_RDWR | os.O_SYNC), None),
        }
        times = {name: [] for name in descriptors}
        payload = os.urandom(args.size)
        offset = 0
        for _ in range(args.writes):
            for name, (d, flush) in descriptors.items():
                time.sleep(args.gap_ms / 1000)
                start = time.perf_counter()
                os.pwrite(d, payload, offset)
                if flush:
                    flush(d)
                times[name].append((time.perf_counter() - start) * 1000)
                offset = (offset + args.size) % (SEGMENT - args.size)
        print(f"{args.writes} flushes of {args.size} bytes per method, interleaved, {args.gap_ms:g} ms apart, "
              f"in {os.path.realpath(args.dir)}; load {os.getloadavg()[0]:.2f} at the end")
        print(f"{'method':<14} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7} {'mean':>7}  (ms)")
        for name, values in times.items():
            print(f"{name:<14} {pct(values, .5):7.2f} {pct(values, .9):7.2f} {pct(values, .99):7.2f} "
                  f"{max(values):7.2f} {sum(values) / len(values):7.2f}")
        for name, (d, _) in descriptors.items():
            if d != fd:
                os.close(d)
    finally:
        os.close(fd)
        os.unlink(path)


if __name__ == "__main__":
    main()
