/* recon_run alone on the fleet's window (bench_fleet_shape.h: 500 sites, 5,000 circuits, every
 * flow its own connection, one end reporting), in memory, no database: the compute phase of
 * bench_fleet's reconciliations, on 1 thread and on THREADS threads (recon_input.threads)
 * alternating, ROUNDS rounds; wall and CPU seconds per run, p50/max, the ratio, and a check that
 * every run's result is the same (a digest of every row, figure and string of it, printed).
 * Usage: bench_recon_run [FLOWS [ROUNDS [THREADS]]]   (default 5000000, 3, the online cores;
 * THREADS 1: the one-thread runs only; WL_BENCH_UNIQUE_OWNERS=1: every flow its own owner) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench_fleet_shape.h"
#include "bench_util.h"
#include "config.h"
#include "recon.h"
#include "timeutil.h"

#define MAX_ROUNDS 20

static double now_s(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* 10.o[0].o[1].o[2] */
static void addr4(struct recon_addr *a, const int o[3])
{
    a->family = AF_INET;
    uint8_t b[4] = {10, (uint8_t)o[0], (uint8_t)o[1], (uint8_t)o[2]};
    memcpy(a->addr, b, 4);
}

/* The window's flows as the PostgreSQL loader gives them: each row's strings its own copies,
 * one row after another (as in a PGresult). */
static struct recon_flow *make_flows(long n, char **arena)
{
    struct recon_flow *flows = calloc((size_t)n, sizeof *flows);
    const char *u = getenv("WL_BENCH_UNIQUE_OWNERS");
    bool unique = u && *u && strcmp(u, "0") != 0;
    char *p = *arena = malloc((size_t)n * 52);
    if (!flows || !p)
        die("out of memory");
    for (long i = 0; i < n; i++) {
        struct fleet_flow f;
        fleet_flow((int)(i / FLOWS_PER_REPORT), (int)(i % FLOWS_PER_REPORT), &f);
        struct recon_flow *x = &flows[i];
        x->source = RECON_FLOW_SOCKET;
        x->proto = IPPROTO_TCP;
        x->role = RECON_ROLE_CLIENT;
        addr4(&x->local, f.local);
        addr4(&x->remote, f.remote);
        x->local_port = (uint16_t)f.local_port;
        x->remote_port = 5201;
        x->tx_bytes = (uint64_t)f.tx;
        x->rx_bytes = (uint64_t)f.rx;
        x->host = p;
        p += sprintf(p, "h%03d-%d", f.src, f.host) + 1;
        x->user = p;
        p += sprintf(p, "user%02d", f.user) + 1;
        x->program = p;
        p += sprintf(p, "prog%02d", f.program) + 1;
        x->workflow = p;
        if (unique) /* WL_BENCH_UNIQUE_OWNERS: every flow its own owner (the worst case) */
            p += sprintf(p, "wf-%04d-%ld", f.workflow, i) + 1;
        else
            p += sprintf(p, "wf-%04d", f.workflow) + 1;
    }
    return flows;
}

/* FNV-1a over bytes, and over a string with its terminator. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

static uint64_t fnv_s(uint64_t h, const char *s)
{
    return fnv(h, s ? s : "", strlen(s ? s : "") + 1);
}

#define FNV_V(h, v) ((h) = fnv((h), &(v), sizeof(v)))

/* A digest of every figure, string and order of a result: two runs with one digest gave the same
 * rows in the same order (links, cells, rollup, dependencies, counters). */
static uint64_t digest(const struct recon_result *r)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < r->n_links; i++) {
        const struct recon_link_obs *l = &r->links[i];
        h = fnv_s(h, l->circuit);
        FNV_V(h, l->src_site), FNV_V(h, l->dst_site), FNV_V(h, l->link);
        FNV_V(h, l->observed_bytes), FNV_V(h, l->observed_payload_bytes);
        FNV_V(h, l->valid_fraction), FNV_V(h, l->capacity_bps), FNV_V(h, l->utilization);
    }
    for (size_t i = 0; i < r->n_cells; i++) {
        const struct recon_cell *c = &r->cells[i];
        FNV_V(h, c->src_site), FNV_V(h, c->dst_site), FNV_V(h, c->has_link);
        FNV_V(h, c->observed_bytes), FNV_V(h, c->observed_payload_bytes);
        FNV_V(h, c->attributed_bytes), FNV_V(h, c->socket_bytes), FNV_V(h, c->nfs_bytes);
        FNV_V(h, c->service_bytes), FNV_V(h, c->unattributed_bytes), FNV_V(h, c->coverage);
        FNV_V(h, c->valid_fraction), FNV_V(h, c->capacity_bps), FNV_V(h, c->status);
    }
    for (size_t i = 0; i < r->n_rollup; i++) {
        const struct recon_rollup *x = &r->rollup[i];
        FNV_V(h, x->src_site), FNV_V(h, x->dst_site), FNV_V(h, x->bytes);
        h = fnv_s(fnv_s(fnv_s(fnv_s(h, x->source), x->workflow), x->user), x->program);
        h = fnv_s(fnv_s(fnv_s(fnv_s(h, x->host), x->kube.ns), x->kube.pod), x->kube.container);
    }
    for (size_t i = 0; i < r->n_deps; i++) {
        const struct recon_dep *d = &r->deps[i];
        FNV_V(h, d->local_site), FNV_V(h, d->remote_site), FNV_V(h, d->kind);
        h = fnv_s(fnv_s(fnv_s(fnv_s(h, d->workflow), d->user), d->program), d->endpoint);
        FNV_V(h, d->bytes_out), FNV_V(h, d->bytes_in), FNV_V(h, d->connections);
    }
    FNV_V(h, r->n_unmapped), FNV_V(h, r->n_intra_site), FNV_V(h, r->n_dedup_flows);
    FNV_V(h, r->n_both_ends);
    return h;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    long n = argc > 1 ? atol(argv[1]) : 5000000;
    int rounds = argc > 2 ? atoi(argv[2]) : 3;
    int threads = argc > 3 ? atoi(argv[3]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1000 || n > 20000000 || rounds < 1 || rounds > MAX_ROUNDS || threads < 1 || threads > 8)
        die("usage: bench_recon_run [FLOWS 1000..20000000 [ROUNDS 1..%d [THREADS 1..8]]]",
            MAX_ROUNDS);
    struct str js = {0};
    fleet_config(&js, "dbname=unused", 1); /* never connected to, never listened on */
    struct cfg_errors errs;
    /* the configuration names a tokens file (relative to it): a scratch one, removed at once */
    char dir[] = "/tmp/wl-bench-recon-run-XXXXXX", path[64], tokens[64];
    if (!mkdtemp(dir))
        die("mkdtemp: %s", strerror(errno));
    snprintf(path, sizeof path, "%s/config.json", dir);
    snprintf(tokens, sizeof tokens, "%s/tokens.json", dir);
    FILE *tf = fopen(tokens, "w");
    if (!tf || fchmod(fileno(tf), 0600) != 0 ||
        fputs("{\"agent\": [\"bench-agent-token-0123456789\"]}\n", tf) < 0 || fclose(tf) != 0)
        die("cannot write %s", tokens);
    struct cfg *cfg = cfg_parse(path, js.p, &errs);
    unlink(tokens);
    rmdir(dir);
    if (!cfg)
        die("config: %s", errs.n ? errs.items[0].msg : "?");
    char *arena;
    struct recon_flow *flows = make_flows(n, &arena);
    int64_t ws = tm_window_start(tm_now_us(), 60);
    printf("recon_run of one window: %ld flows, %d sites, %d circuits, %ld cores\n", n, N_SITES,
           N_SITES * N_NEIGHBOURS, sysconf(_SC_NPROCESSORS_ONLN));
    double wall[2][MAX_ROUNDS], cpu[2][MAX_ROUNDS];
    size_t ref_rollup = 0, ref_deps = 0, ref_cells = 0;
    uint64_t ref_bytes = 0, ref_digest = 0;
    for (int r = 0; r < rounds; r++)
        for (int v = 0; v < (threads == 1 ? 1 : 2); v++) {  /* THREADS 1: one thread only */
            int t = (r % 2 == 0) == (v == 0) ? 1 : threads; /* alternate which goes first */
            int slot = t == 1 ? 0 : 1;
            struct recon_input in = {
                .window_start_us = ws, .flows = flows, .n_flows = (size_t)n, .threads = t};
            struct recon_result res;
            char err[256];
            double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);
            if (recon_run(cfg, &in, &res, err, sizeof err))
                die("recon_run: %s", err);
            wall[slot][r] = now_s(CLOCK_MONOTONIC) - w0;
            cpu[slot][r] = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
            uint64_t bytes = 0, dig = digest(&res);
            for (size_t i = 0; i < res.n_rollup; i++)
                bytes += res.rollup[i].bytes;
            if (r == 0 && v == 0) {
                ref_rollup = res.n_rollup, ref_deps = res.n_deps, ref_cells = res.n_cells;
                ref_bytes = bytes, ref_digest = dig;
            } else if (res.n_rollup != ref_rollup || res.n_deps != ref_deps ||
                       res.n_cells != ref_cells || bytes != ref_bytes || dig != ref_digest) {
                die("round %d, %d threads: a different result", r, t);
            }
            double la[3] = {0};
            getloadavg(la, 3);
            printf("  round %d, %d thread%s: %.3f s wall, %.3f s CPU (%zu cells, %zu rollup rows,"
                   " %zu dependency rows), load %.2f\n",
                   r + 1, t, t == 1 ? "" : "s", wall[slot][r], cpu[slot][r], res.n_cells,
                   res.n_rollup, res.n_deps, la[0]);
            recon_result_free(&res);
        }
    for (int slot = 0; slot < (threads == 1 ? 1 : 2); slot++) {
        qsort(wall[slot], (size_t)rounds, sizeof(double), cmp_double);
        qsort(cpu[slot], (size_t)rounds, sizeof(double), cmp_double);
    }
    printf("1 thread:   wall p50 %.3f s, max %.3f s; CPU p50 %.3f s (n=%d)\n", wall[0][rounds / 2],
           wall[0][rounds - 1], cpu[0][rounds / 2], rounds);
    if (threads > 1) {
        printf("%d threads: wall p50 %.3f s, max %.3f s; CPU p50 %.3f s (n=%d)\n", threads,
               wall[1][rounds / 2], wall[1][rounds - 1], cpu[1][rounds / 2], rounds);
        printf("speed-up at p50: %.2fx\n", wall[0][rounds / 2] / wall[1][rounds / 2]);
    }
    printf("results equal in every run (digest %016llx); CPU per flow record at p50, 1 thread: "
           "%.3f us\n",
           (unsigned long long)ref_digest, cpu[0][rounds / 2] * 1e6 / (double)n);
    free(flows);
    free(arena);
    free(js.p);
    cfg_free(cfg);
    return 0;
}
