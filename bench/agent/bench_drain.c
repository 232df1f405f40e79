/* Drain time of the socket probe with many live flows: each round sends one datagram to each of
 * N distinct destinations from inside a network namespace, then times sockprobe_drain (flip,
 * wait for in-flight writers, read and clear the generation) and the rest of the window's work
 * (owner join, priority sampling, JSON). Prints p50/p99/max with the sample count.
 *
 *   bench_drain NETNS_PATH DEST_PREFIX16 N ROUNDS K
 *   e.g. bench_drain /run/netns/wla-bn-a 10.205 100000 20 1000
 * (DEST_PREFIX16.0.0/16 must be routed out of the namespace, see run.py) */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowset.h"
#include "prisample.h"
#include "procmeta.h"
#include "report.h"
#include "sockprobe.h"

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void print_dist(const char *what, int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof(v[0]), cmp_i64);
    int i50 = (int)(0.50 * (n - 1) + 0.5), i99 = (int)(0.99 * (n - 1) + 0.5);
    printf("%-46s n=%d  p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", what, n, v[i50] / 1e6,
           v[i99] / 1e6, v[n - 1] / 1e6);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: bench_drain NETNS_PATH DEST_PREFIX16 N ROUNDS K\n");
        return 2;
    }
    const char *nspath = argv[1], *prefix = argv[2];
    int n = atoi(argv[3]), rounds = atoi(argv[4]), k = atoi(argv[5]);
    char err[512];
    struct stat st;
    if (n <= 0 || rounds <= 0 || rounds > 1000 || k <= 0 || stat(nspath, &st) != 0) {
        fprintf(stderr, "bench_drain: bad arguments or %s: %s\n", nspath, strerror(errno));
        return 2;
    }
    struct sockprobe_opts po = {.attach = SOCKPROBE_AUTO,
                                .netns_ino = (uint32_t)st.st_ino,
                                .map_entries = (uint32_t)(n + n / 4)};
    struct sockprobe *sp = sockprobe_open(&po, err, sizeof(err));
    if (!sp) {
        fprintf(stderr, "bench_drain: %s\n", err);
        return 1;
    }
    const char *envs[] = {"WANLEDGER_WORKFLOW"};
    struct procmeta *pm = procmeta_new(envs, 1, NULL, NULL, err, sizeof(err));
    int nsfd = open(nspath, O_RDONLY | O_CLOEXEC);
    if (!pm || nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "bench_drain: setup: %s\n", pm ? strerror(errno) : err);
        return 1;
    }
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    struct flowset fs = {0};
    uint64_t dropped;
    int64_t *drain = calloc((size_t)rounds, sizeof(int64_t));
    int64_t *rest = calloc((size_t)rounds, sizeof(int64_t));
    int64_t *drain_cpu = calloc((size_t)rounds, sizeof(int64_t));
    char ip[32];
    if (sockprobe_drain(sp, &fs, &dropped, err, sizeof(err)) != 0) /* start empty */
        return 1;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) {
            /* 250 ports per address: 10.205.a.b:(20000 + i % 250) */
            int host = i / 250 + 1;
            snprintf(ip, sizeof(ip), "%s.%d.%d", prefix, host / 250, host % 250 + 1);
            struct sockaddr_in d = {.sin_family = AF_INET, .sin_port = htons(20000 + i % 250)};
            inet_pton(AF_INET, ip, &d.sin_addr);
            if (sendto(u, "x", 1, 0, (struct sockaddr *)&d, sizeof(d)) != 1) {
                fprintf(stderr, "bench_drain: sendto %s: %s\n", ip, strerror(errno));
                return 1;
            }
        }
        flowset_clear(&fs);
        int64_t c0 = cpu_ns();
        int64_t t0 = now_ns();
        if (sockprobe_drain(sp, &fs, &dropped, err, sizeof(err)) != 0) {
            fprintf(stderr, "bench_drain: %s\n", err);
            return 1;
        }
        int64_t t1 = now_ns();
        drain_cpu[r] = cpu_ns() - c0;
        size_t seen = fs.n;
        procmeta_join(pm, &fs);
        double tau;
        if (prisample_flowset(&fs, (size_t)k, (uint64_t)r + 1, &tau) != 0)
            return 1;
        struct report_header h = {.host = "bench",
                                  .agent_id = "bench",
                                  .seq = (uint64_t)r + 1,
                                  .window_seconds = 60,
                                  .k = (size_t)k,
                                  .threshold = tau,
                                  .flows_seen = seen};
        char *body = report_json(&h, &fs, err, sizeof(err));
        int64_t t2 = now_ns();
        free(body);
        drain[r] = t1 - t0;
        rest[r] = t2 - t1;
        if (seen != (size_t)n || dropped != 0) {
            fprintf(stderr, "bench_drain: round %d drained %zu flows, %llu dropped (want %d, 0)\n",
                    r, seen, (unsigned long long)dropped, n);
            return 1;
        }
    }
    printf("drained %d live flows per round, %d rounds, attach %s\n", n, rounds,
           sockprobe_mode_name(sockprobe_mode(sp)));
    print_dist("sockprobe_drain wall (flip+wait+read+clear)", drain, rounds);
    print_dist("sockprobe_drain CPU time (kernel+user)", drain_cpu, rounds);
    print_dist("join+sample(k)+JSON after the drain", rest, rounds);
    free(drain);
    free(drain_cpu);
    free(rest);
    flowset_free(&fs);
    procmeta_free(pm);
    sockprobe_close(sp);
    close(u);
    close(nsfd);
    return 0;
}
