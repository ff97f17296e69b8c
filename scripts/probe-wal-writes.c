/* Cost of appending a WAL's bytes to the page cache, four ways: through a
 * shared map of 4 MiB windows or with pwrite, into fresh files or into two
 * files reused in turn (as a recycled WAL is). Each file is fallocated in
 * 4 MiB steps and takes 64 MiB, as the engine's mapped WAL does
 * (docs/bench/write-path.md, "WAL recycling").
 *
 *   cc -O2 -o /tmp/probe scripts/probe-wal-writes.c
 *   /tmp/probe DIR RECORD_BYTES TOTAL_MIB     # e.g. /tmp/probe /work/p 4120 786
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define WINDOW ((size_t)4 << 20)
#define PER_FILE ((size_t)64 << 20)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int run(const char *dir, int use_map, int reuse, size_t rec, size_t total) {
    char *buf = malloc(rec);
    if (!buf) return 1;
    memset(buf, 7, rec);
    size_t done = 0, files = 0;
    double t0 = now();
    while (done < total) {
        char name[4096];
        snprintf(name, sizeof name, "%s/%s%zu.log", dir, reuse ? "r" : "f", reuse ? files % 2 : files);
        files++;
        int fd = open(name, O_RDWR | O_CREAT | (reuse ? 0 : O_TRUNC), 0644);
        if (fd < 0) { perror(name); return 1; }
        size_t len = 0, reserved = 0, win = 0;
        char *map = NULL;
        while (len < PER_FILE && done < total) {
            if (len + rec > reserved) {
                size_t to = (len + rec + WINDOW - 1) / WINDOW * WINDOW;
                if (fallocate(fd, 0, reserved, to - reserved) != 0) { perror("fallocate"); return 1; }
                reserved = to;
            }
            if (use_map) {
                for (size_t off = 0; off < rec;) {
                    if (!map || len >= win + WINDOW) {
                        if (map) munmap(map, WINDOW);
                        win = len / WINDOW * WINDOW;
                        map = mmap(NULL, WINDOW, PROT_READ | PROT_WRITE, MAP_SHARED, fd, win);
                        if (map == MAP_FAILED) { perror("mmap"); return 1; }
                    }
                    size_t n = win + WINDOW - len;
                    if (n > rec - off) n = rec - off;
                    memcpy(map + (len - win), buf + off, n);
                    off += n;
                    len += n;
                }
            } else {
                if (pwrite(fd, buf, rec, len) != (ssize_t)rec) { perror("pwrite"); return 1; }
                len += rec;
            }
            done += rec;
        }
        if (map) munmap(map, WINDOW);
        close(fd);
        if (!reuse) unlink(name);
    }
    double t = now() - t0;
    printf("%-6s %-6s record %zu: %.3f s, %.2f us a record\n", use_map ? "map" : "pwrite",
           reuse ? "reused" : "fresh", rec, t, t * 1e6 / (total / rec));
    free(buf);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s DIR RECORD_BYTES TOTAL_MIB\n", argv[0]);
        return 2;
    }
    size_t rec = strtoul(argv[2], NULL, 10), total = strtoul(argv[3], NULL, 10) << 20;
    if (rec == 0 || total < rec) { fprintf(stderr, "bad sizes\n"); return 2; }
    for (int reuse = 0; reuse < 2; reuse++)
        for (int use_map = 1; use_map >= 0; use_map--)
            if (run(argv[1], use_map, reuse, rec, total)) return 1;
    for (int i = 0; i < 2; i++) {
        char name[4096];
        snprintf(name, sizeof name, "%s/r%d.log", argv[1], i);
        unlink(name);
    }
    return 0;
}
