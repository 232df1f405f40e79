/* The ingest benchmarks' sender (bench/lib/ingestlib.py post_all): posts prepared request bodies
 * to one path of `wanledger reconcile` over CONNS keep-alive connections, closed loop within each
 * connection (the next body as soon as the previous one is answered), body i on connection
 * i mod CONNS. The bodies are read before the clock starts, so what the clock sees is the server's
 * work and the sending syscalls, not the sender building or compressing anything. Python's
 * http.client, which sent them before, cost ~0.3 us of CPU per flow record on the same 2 cores as
 * the server (perf, bench/clickhouse, 8 connections); this costs a few percent of that.
 *
 *   bench_post PORT CONNS PATH TOKEN CODING FILE
 * CODING: a Content-Encoding value, or "identity" for none. FILE: the bodies, each a 4-byte
 * little-endian length and its bytes. Prints "START WALL" (CLOCK_MONOTONIC seconds at the first
 * send, as Python's time.monotonic(), and seconds to the last answer), then every request's
 * latency in seconds, one per line, in no order. Exits 1 on any answer other than 200. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "timeutil.h"

struct body {
    const char *p;
    size_t n;
};

static struct body *bodies;
static size_t n_bodies;
static int port, conns;
static const char *path, *token, *coding;
static double *lat;

/* CLOCK_MONOTONIC, as Python's time.monotonic() reads it, in seconds */
static double mono(void)
{
    return (double)tm_mono_ns() / 1e9;
}

static void *client(void *arg)
{
    int k = (int)(intptr_t)arg;
    int fd = http_connect(port);
    for (size_t i = (size_t)k; i < n_bodies; i += (size_t)conns) {
        double t = mono();
        int st = http_post_coded(fd, path, token, coding, bodies[i].p, bodies[i].n);
        if (st != 200)
            die("HTTP %d on port %d (body %zu)", st, port, i);
        lat[i] = mono() - t;
    }
    close(fd);
    return NULL;
}

static char *read_file(const char *name, size_t *len)
{
    FILE *f = fopen(name, "rb");
    if (!f)
        die("%s: cannot open", name);
    size_t cap = 1 << 20, n = 0;
    char *p = malloc(cap);
    size_t r;
    while (p && (r = fread(p + n, 1, cap - n, f)) > 0)
        if ((n += r) == cap)
            p = realloc(p, cap *= 2);
    if (!p || ferror(f))
        die("%s: read failed", name);
    fclose(f);
    *len = n;
    return p;
}

int main(int argc, char **argv)
{
    if (argc != 7)
        die("usage: bench_post PORT CONNS PATH TOKEN CODING FILE");
    port = atoi(argv[1]);
    conns = atoi(argv[2]);
    path = argv[3];
    token = argv[4];
    coding = strcmp(argv[5], "identity") == 0 ? NULL : argv[5];
    if (port <= 0 || conns <= 0 || conns > 256)
        die("bench_post: PORT and CONNS (1..256) must be positive numbers");
    size_t len;
    char *all = read_file(argv[6], &len);
    size_t cap = 0;
    for (size_t off = 0; off < len;) {
        uint32_t n;
        if (len - off < 4)
            die("%s: a length is cut at byte %zu", argv[6], off);
        memcpy(&n, all + off, 4); /* little-endian, as this machine */
        off += 4;
        if (n > len - off)
            die("%s: body %zu is cut (%u bytes stated at byte %zu)", argv[6], n_bodies, n, off);
        if (n_bodies == cap) {
            cap = cap ? 2 * cap : 1024;
            if (!(bodies = realloc(bodies, cap * sizeof *bodies)))
                die("out of memory");
        }
        bodies[n_bodies++] = (struct body){all + off, n};
        off += n;
    }
    lat = calloc(n_bodies + 1, sizeof *lat);
    pthread_t *th = calloc((size_t)conns, sizeof *th);
    if (!lat || !th)
        die("out of memory");
    double t0 = mono();
    for (int k = 0; k < conns; k++)
        if (pthread_create(&th[k], NULL, client, (void *)(intptr_t)k) != 0)
            die("pthread_create");
    for (int k = 0; k < conns; k++)
        pthread_join(th[k], NULL);
    double wall = mono() - t0;
    printf("%.6f %.6f\n", t0, wall);
    for (size_t i = 0; i < n_bodies; i++)
        printf("%.6f\n", lat[i]);
    return 0;
}
