/* The throttle's kernel cost per packet (issue 12), four states side by side in one run, rounds
 * interleaved: no rule (every hook returns at once), a rule for another workflow (the socket's
 * class is looked up: none), the sender in an enforced class (bucket, always within credit: the
 * rate is 100 Gbit/s), the sender in a dry-run class. Traffic: this process sends UDP datagrams
 * of LEN bytes to a socket of its own on 127.0.0.1 (cgroup_skb/egress runs on loopback too).
 * Kernel time per call from run_time_ns/run_cnt (BPF_ENABLE_STATS held only while running), and
 * the sender's wall time per sendto. Root; takes ~10 s.
 *   bench_throttle [ROUNDS [PACKETS [LEN]]]   (defaults 20, 50000, 64) */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "procmeta.h"
#include "throttle_probe.h"

#define STATES 4

static const char *const NAMES[STATES] = {"no rule", "rule, other workflow",
                                          "rule, enforce (in credit)", "rule, dry-run"};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int prog_stats(int fd, unsigned long long *ns, unsigned long long *cnt)
{
    struct bpf_prog_info info;
    __u32 len = sizeof(info);
    memset(&info, 0, sizeof(info));
    if (bpf_obj_get_info_by_fd(fd, &info, &len) != 0)
        return -1;
    *ns = info.run_time_ns;
    *cnt = info.run_cnt;
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    int packets = argc > 2 ? atoi(argv[2]) : 50000;
    int len = argc > 3 ? atoi(argv[3]) : 64;
    char root[256], err[512];
    if (rounds < 1 || rounds > 1000 || packets < 1 || len < 1 || len > 1400 ||
        procmeta_cgroup2_root(root, sizeof(root)) != 0) {
        fprintf(stderr, "usage: bench_throttle [ROUNDS [PACKETS [LEN]]] (root, cgroup v2)\n");
        return 2;
    }
    struct throttle_probe *tp = throttle_probe_open(root, err, sizeof(err));
    if (!tp) {
        fprintf(stderr, "bench_throttle: %s\n", err);
        return 1;
    }
    uint32_t ids[4];
    size_t n_ids = throttle_probe_prog_ids(tp, ids, 4);
    int egress_fd = n_ids ? bpf_prog_get_fd_by_id(ids[0]) : -1; /* thr_egress comes first */
    int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    int rx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (egress_fd < 0 || stats_fd < 0 || rx < 0 || bind(rx, (struct sockaddr *)&a, al) != 0 ||
        getsockname(rx, (struct sockaddr *)&a, &al) != 0) {
        fprintf(stderr, "bench_throttle: setup failed (root? BPF_ENABLE_STATS?)\n");
        return 1;
    }
    int small = 4096;
    setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)); /* the rest is dropped there */
    double *kern[STATES], *wall[STATES];
    for (int s = 0; s < STATES; s++) {
        kern[s] = calloc((size_t)rounds, sizeof(double));
        wall[s] = calloc((size_t)rounds, sizeof(double));
    }
    char buf[1400];
    memset(buf, 'x', sizeof(buf));
    uint32_t self = (uint32_t)getpid();
    for (int r = 0; r < rounds; r++) {
        for (int s = 0; s < STATES; s++) {
            /* class 0: the sender's (states 2, 3); class 1: another workflow's (state 1) */
            int ok = throttle_probe_set_class(tp, 0, 100000000000ULL,
                                              s == 3 ? THROTTLE_DRY_RUN : THROTTLE_ENFORCE, 1);
            ok |= throttle_probe_set_class(tp, 1, 40000000, THROTTLE_ENFORCE, 1);
            ok |= throttle_probe_map_tgid(tp, self, s >= 2 ? 0 : -1);
            ok |= throttle_probe_map_tgid(tp, 0x7fffffffu, s == 1 ? 1 : -1); /* no such pid */
            if (ok) {
                fprintf(stderr, "bench_throttle: map update failed\n");
                return 1;
            }
            throttle_probe_set_active(tp, s == 0 ? 0 : 2);
            throttle_probe_commit(tp);
            int tx = socket(AF_INET, SOCK_DGRAM, 0); /* created under this state */
            unsigned long long ns0, c0, ns1, c1;
            prog_stats(egress_fd, &ns0, &c0);
            double t0 = now_ns();
            for (int i = 0; i < packets; i++)
                sendto(tx, buf, (size_t)len, 0, (struct sockaddr *)&a, al);
            double t1 = now_ns();
            prog_stats(egress_fd, &ns1, &c1);
            close(tx);
            kern[s][r] = c1 > c0 ? (double)(ns1 - ns0) / (double)(c1 - c0) : 0;
            wall[s][r] = (t1 - t0) / packets;
        }
    }
    struct throttle_counts c;
    if (throttle_probe_counts(tp, 0, &c) == 0 && c.drop_pkts + c.delay_pkts)
        fprintf(stderr, "bench_throttle: the enforced class refused packets (bucket too small)\n");
    printf("# bench_throttle: %d rounds x %d UDP datagrams of %d bytes per state, interleaved; "
           "cgroup_skb/egress run_time_ns/run_cnt per packet, and sendto wall time\n",
           rounds, packets, len);
    printf("| state | egress ns/packet p50 / p99 / max | sendto ns/packet p50 / p99 / max |\n"
           "|---|---|---|\n");
    for (int s = 0; s < STATES; s++) {
        double kmax = pct(kern[s], rounds, 1), wmax = pct(wall[s], rounds, 1);
        printf("| %s | %.1f / %.1f / %.1f | %.0f / %.0f / %.0f |\n", NAMES[s],
               pct(kern[s], rounds, 0.5), pct(kern[s], rounds, 0.99), kmax,
               pct(wall[s], rounds, 0.5), pct(wall[s], rounds, 0.99), wmax);
    }
    for (int s = 0; s < STATES; s++) {
        free(kern[s]);
        free(wall[s]);
    }
    close(stats_fd);
    close(egress_fd);
    close(rx);
    throttle_probe_set_active(tp, 0);
    throttle_probe_close(tp);
    return 0;
}
