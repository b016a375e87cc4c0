/* What relaying a notification over a local socket would cost (docs/performance/round-19.md,
 * "The relay's own cost"), in C so that no interpreter's cost is in the figures (a first
 * version in Python measured its own calls too): one process writes a ~40-byte frame (a
 * `tideway_changes` notification's size) to each of N reader processes over Unix stream
 * socketpairs, one frame every INTERVAL ms as lone pushes come; each reader sleeps in poll()
 * and reads it, as a worker's listener thread would. CPU per frame from
 * /proc/<pid>/schedstat; a leg without writes (the writer's timed sleeps alone) is
 * subtracted from the writer's figure. No stack needed:
 *
 *     cc -O2 -o /tmp/relay_fanout_cpu Bench/relay_fanout_cpu.c
 *     /tmp/relay_fanout_cpu FRAMES READERS [INTERVAL_MS]
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char frame[] = "tideway_changes\0agency=WildAid reports\n";

static long long run_ns(pid_t pid) {
    char path[64];
    long long ns = 0;
    snprintf(path, sizeof path, "/proc/%d/schedstat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f) {
        if (fscanf(f, "%lld", &ns) != 1) ns = 0;
        fclose(f);
    }
    return ns;
}

static void reader(int fd, int frames) {
    char buffer[65536];
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int got = 0;
    while (got < frames) {
        poll(&p, 1, -1);
        ssize_t n = read(fd, buffer, sizeof buffer);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n; i++) got += buffer[i] == '\n';
    }
    _exit(0);
}

static void sleep_until(struct timespec *at, long interval_ns) {
    at->tv_nsec += interval_ns;
    while (at->tv_nsec >= 1000000000L) { at->tv_nsec -= 1000000000L; at->tv_sec++; }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, at, NULL);
}

/* One leg: the writer's CPU (returned) and each reader's (`theirs`), in ns. */
static long long leg(int frames, int readers, long interval_ns, int write_frames, long long *theirs) {
    int fds[64];
    pid_t pids[64];
    int n = write_frames ? readers : 0;
    for (int i = 0; i < n; i++) {
        int pair[2];
        socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
        pid_t pid = fork();
        if (pid == 0) {
            close(pair[0]);
            reader(pair[1], frames);
        }
        close(pair[1]);
        fds[i] = pair[0];
        pids[i] = pid;
    }
    usleep(200000);
    long long before[64], mine = run_ns(getpid());
    for (int i = 0; i < n; i++) before[i] = run_ns(pids[i]);
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    for (int f = 0; f < frames; f++) {
        sleep_until(&at, interval_ns);
        for (int i = 0; i < n; i++) send(fds[i], frame, sizeof frame - 1, 0);
    }
    usleep(50000); /* the last frame read */
    mine = run_ns(getpid()) - mine;
    for (int i = 0; i < n; i++) {
        theirs[i] = run_ns(pids[i]) - before[i];
        waitpid(pids[i], NULL, 0);
        close(fds[i]);
    }
    return mine;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s FRAMES READERS [INTERVAL_MS]\n", argv[0]);
        return 2;
    }
    int frames = atoi(argv[1]), readers = atoi(argv[2]);
    double interval_ms = argc > 3 ? atof(argv[3]) : 2.0;
    if (readers < 1 || readers > 64 || frames < 1) return 2;
    long interval_ns = (long)(interval_ms * 1e6);
    long long theirs[64];
    long long idle = leg(frames, readers, interval_ns, 0, theirs);
    long long busy = leg(frames, readers, interval_ns, 1, theirs);
    printf("%d frames to %d readers every %g ms: writer %.1f µs per frame written (sleeps alone %.1f µs per "
           "frame, subtracted); readers, µs per frame read:", frames, readers, interval_ms,
           (double)(busy - idle) / frames / readers / 1000, (double)idle / frames / 1000);
    for (int i = 0; i < readers; i++) printf("%s %.1f", i ? "," : "", (double)theirs[i] / frames / 1000);
    printf("\n");
    return 0;
}
