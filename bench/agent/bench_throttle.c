/* The throttle's kernel cost per packet (issue 12), five states side by side in one run, rounds
 * interleaved: no rule (every hook returns at once), a rule for another workflow (the socket's
 * class is looked up: none), this process in an enforced class (bucket, always within credit:
 * the rate is 100 Gbit/s; its receiving socket too), the same in a dry-run class, and the
 * sender side (the sending socket's 4-tuple in thr_peers, its process in no class). Traffic:
 * this process sends UDP datagrams of LEN bytes over a connected socket to a socket of its own on
 * 127.0.0.1 (cgroup_skb runs on loopback too) and receives each one. Kernel time per call of
 * cgroup_skb/egress, cgroup_skb/ingress and tp_btf/sock_recv_length from run_time_ns/run_cnt
 * (BPF_ENABLE_STATS held only while running), and the wall time per sendto + recv. Root; ~15 s.
 *   bench_throttle [ROUNDS [PACKETS [LEN]]]   (defaults 20, 50000, 64) */
#include <arpa/inet.h>
#include <stdbool.h>
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

#define STATES 5
#define HOOKS  3 /* egress, ingress, recv tracepoint */

static const char *const NAMES[STATES] = {"no rule", "rule, other workflow",
                                          "rule, enforce (in credit)", "rule, dry-run",
                                          "sender side (peer connection, enforce)"};

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

/* A receiving and a connected sending UDP socket on 127.0.0.1, created now (socket creation
 * tags them); peer: the sending socket's 4-tuple is the peer set (class 0), else it is empty. */
static int state_sockets(struct throttle_probe *tp, bool peer_on, int *rxp, int *txp)
{
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in l;
    socklen_t al = sizeof(a), ll = sizeof(l);
    if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&a, al) != 0 ||
        getsockname(rx, (struct sockaddr *)&a, &al) != 0 ||
        connect(tx, (struct sockaddr *)&a, al) != 0 ||
        getsockname(tx, (struct sockaddr *)&l, &ll) != 0) {
        fprintf(stderr, "bench_throttle: sockets failed\n");
        return -1;
    }
    struct throttle_peer peer = {.lport = ntohs(l.sin_port), .rport = ntohs(a.sin_port)};
    peer.laddr[10] = peer.laddr[11] = peer.raddr[10] = peer.raddr[11] = 0xff;
    memcpy(&peer.laddr[12], &l.sin_addr, 4);
    memcpy(&peer.raddr[12], &a.sin_addr, 4);
    if (throttle_probe_set_peers(tp, &peer, peer_on ? 1 : 0) != 0) {
        fprintf(stderr, "bench_throttle: peer map update failed\n");
        return -1;
    }
    *rxp = rx;
    *txp = tx;
    return 0;
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
    uint32_t ids[6];
    size_t n_ids = throttle_probe_prog_ids(tp, ids, 6);
    /* thr_egress, thr_sock_create, thr_send, thr_sockops, thr_ingress, thr_recv */
    int hook_fd[HOOKS] = {-1, -1, -1};
    if (n_ids == 6) {
        hook_fd[0] = bpf_prog_get_fd_by_id(ids[0]);
        hook_fd[1] = bpf_prog_get_fd_by_id(ids[4]);
        hook_fd[2] = bpf_prog_get_fd_by_id(ids[5]);
    }
    int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
    if (hook_fd[0] < 0 || hook_fd[1] < 0 || hook_fd[2] < 0 || stats_fd < 0) {
        fprintf(stderr, "bench_throttle: setup failed (root? BPF_ENABLE_STATS?)\n");
        return 1;
    }
    double *kern[STATES][HOOKS], *wall[STATES];
    for (int s = 0; s < STATES; s++) {
        for (int h = 0; h < HOOKS; h++)
            kern[s][h] = calloc((size_t)rounds, sizeof(double));
        wall[s] = calloc((size_t)rounds, sizeof(double));
    }
    char buf[1400];
    memset(buf, 'x', sizeof(buf));
    uint32_t self = (uint32_t)getpid();
    for (int r = 0; r < rounds; r++) {
        for (int s = 0; s < STATES; s++) {
            /* class 0: this process's (states 2, 3) or the peer connection's (state 4); class 1:
             * another workflow's (state 1) */
            int ok = throttle_probe_set_class(tp, 0, 100000000000ULL,
                                              s == 3 ? THROTTLE_DRY_RUN : THROTTLE_ENFORCE, 1);
            ok |= throttle_probe_set_class(tp, 1, 40000000, THROTTLE_ENFORCE, 1);
            ok |= throttle_probe_map_tgid(tp, self, s == 2 || s == 3 ? 0 : -1);
            ok |= throttle_probe_map_tgid(tp, 0x7fffffffu, s == 1 ? 1 : -1); /* no such pid */
            if (ok) {
                fprintf(stderr, "bench_throttle: map update failed\n");
                return 1;
            }
            throttle_probe_set_active(tp, s == 0 ? 0 : 2);
            throttle_probe_commit(tp);
            int rx, tx;
            if (state_sockets(tp, s == 4, &rx, &tx) != 0)
                return 1;
            unsigned long long ns0[HOOKS], c0[HOOKS], ns1[HOOKS], c1[HOOKS];
            for (int h = 0; h < HOOKS; h++)
                prog_stats(hook_fd[h], &ns0[h], &c0[h]);
            double t0 = now_ns();
            for (int i = 0; i < packets; i++) {
                send(tx, buf, (size_t)len, 0);
                recv(rx, buf, sizeof(buf), MSG_DONTWAIT);
            }
            double t1 = now_ns();
            for (int h = 0; h < HOOKS; h++) {
                prog_stats(hook_fd[h], &ns1[h], &c1[h]);
                kern[s][h][r] =
                    c1[h] > c0[h] ? (double)(ns1[h] - ns0[h]) / (double)(c1[h] - c0[h]) : 0;
            }
            close(tx);
            close(rx);
            wall[s][r] = (t1 - t0) / packets;
        }
    }
    struct throttle_counts c;
    if (throttle_probe_counts(tp, 0, &c) == 0 && c.drop_pkts + c.delay_pkts)
        fprintf(stderr, "bench_throttle: the enforced class refused packets (bucket too small)\n");
    printf("# bench_throttle: %d rounds x %d UDP datagrams of %d bytes per state, interleaved; "
           "run_time_ns/run_cnt per packet of each hook, and send + recv wall time\n",
           rounds, packets, len);
    printf("| state | cgroup_skb/egress ns p50 / p99 / max | cgroup_skb/ingress ns p50 / p99 / "
           "max | sock_recv_length ns p50 / p99 / max | send + recv ns p50 / p99 / max |\n"
           "|---|---|---|---|---|\n");
    for (int s = 0; s < STATES; s++) {
        printf("| %s", NAMES[s]);
        for (int h = 0; h < HOOKS; h++)
            printf(" | %.1f / %.1f / %.1f", pct(kern[s][h], rounds, 0.5),
                   pct(kern[s][h], rounds, 0.99), pct(kern[s][h], rounds, 1));
        printf(" | %.0f / %.0f / %.0f |\n", pct(wall[s], rounds, 0.5), pct(wall[s], rounds, 0.99),
               pct(wall[s], rounds, 1));
    }
    for (int s = 0; s < STATES; s++) {
        for (int h = 0; h < HOOKS; h++)
            free(kern[s][h]);
        free(wall[s]);
    }
    close(stats_fd);
    for (int h = 0; h < HOOKS; h++)
        close(hook_fd[h]);
    throttle_probe_set_active(tp, 0);
    throttle_probe_close(tp);
    return 0;
}
