/* Soak of `wanledger reconcile` with an open-loop load generator: request i is due at
 * t0 + i / RATE whatever happened to earlier requests, and its latency is measured from that
 * scheduled time (so a stall shows as latency, not as fewer requests). A mix of the four kinds of
 * traffic a deployment sees — counter batches, agent reports, transfer records, read API — goes
 * over WORKERS keep-alive connections against the real binary and a throwaway PostgreSQL, with
 * the reconcile loop running. Every 10 s: requests, errors, the server's RSS and descriptors.
 * At the end: p50/p99/p999/max of all requests.
 * Usage: bench_soak [SECONDS] [RATE]   (default 600 s, 200 requests/s) */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

#define WORKERS 16

static struct fx F;
static double g_rate;
static int64_t g_t0_ns, g_total;
static atomic_long g_next, g_done, g_errors;
static int64_t *g_lat_ns; /* by request index */

static int connect_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)F.port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Request i of the mix: 6 in 10 counter batches, 2 agent reports, 1 transfer, 1 read. */
static char *make_request(long i, size_t *len)
{
    int64_t now = tm_now_us();
    int64_t ws = tm_window_start(now, 60) - 60 * TM_USEC_PER_SEC;
    char *body = NULL, *head = NULL;
    const char *path, *token;
    int kind = (int)(i % 10);
    if (kind < 6) {
        path = "/v1/counters";
        token = FX_TOKEN_POLLER;
        body =
            fx_fmt("{\"version\":1,\"poller\":\"soak\",\"samples\":[{\"device\":\"nyc-border-1\","
                   "\"interface\":\"et-0/0/%ld\",\"at\":\"%s\",\"uptime_cs\":%lld,"
                   "\"in_octets\":%lld,\"out_octets\":%lld}]}",
                   i % 64, fx_ts(now), (long long)(now / 10000), (long long)(now / 100),
                   (long long)(now / 50));
    } else if (kind < 8) {
        path = "/v1/attributions";
        token = FX_TOKEN_AGENT;
        char flows[4096];
        size_t o = 0;
        for (int k = 0; k < 10; k++)
            o += (size_t)snprintf(
                flows + o, sizeof(flows) - o,
                "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.%d:%d\","
                "\"remote\":\"10.2.0.9:5201\",\"role\":\"client\",\"tx_bytes\":%d,"
                "\"rx_bytes\":100,\"user\":\"alice\",\"program\":\"iperf3\"}",
                k ? "," : "", k + 2, 40000 + k, 1000 * (k + 1));
        body = fx_fmt("{\"version\":1,\"host\":\"soak-%ld\",\"agent_id\":\"soak-%ld\",\"seq\":%ld,"
                      "\"window_start\":\"%s\",\"window_seconds\":60,\"flows\":[%s]}",
                      i % 32, i % 32, i, fx_ts(ws), flows);
    } else if (kind < 9) {
        path = "/v1/transfers";
        token = FX_TOKEN_SERVICE;
        body =
            fx_fmt("{\"service\":\"dupedog\",\"id\":\"soak-%ld\",\"requester\":\"bob\","
                   "\"src\":\"nyc\",\"dst\":\"chi\",\"bytes\":1000000,\"start\":%lld,\"end\":%lld}",
                   i, (long long)(now / TM_USEC_PER_SEC - 30), (long long)(now / TM_USEC_PER_SEC));
    } else {
        path = "/api/v1/cells?from=15m";
        token = FX_TOKEN_READER;
    }
    if (body)
        head = fx_fmt("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                      path, token, strlen(body), body);
    else
        head = fx_fmt("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n\r\n",
                      path, token);
    free(body);
    *len = strlen(head);
    return head;
}

/* Sends req and reads one answer; the status, or -1 (connection to be reopened). */
static int round_trip(int fd, const char *req, size_t len)
{
    for (size_t off = 0; off < len;) {
        ssize_t w = send(fd, req + off, len - off, MSG_NOSIGNAL);
        if (w <= 0)
            return -1;
        off += (size_t)w;
    }
    static __thread char buf[1 << 20];
    size_t n = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
        if (r <= 0)
            return -1;
        n += (size_t)r;
        buf[n] = 0;
        char *e = strstr(buf, "\r\n\r\n");
        char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (e && cl && cl < e && n >= (size_t)(e + 4 - buf) + (size_t)atol(cl + 17)) {
            int status = -1;
            sscanf(buf, "HTTP/1.%*d %d", &status);
            return status;
        }
        if (n >= sizeof(buf) - 1)
            return -1;
    }
}

static void *worker(void *arg)
{
    (void)arg;
    int fd = -1;
    for (;;) {
        long i = atomic_fetch_add(&g_next, 1);
        if (i >= g_total)
            break;
        int64_t due = g_t0_ns + (int64_t)((double)i * 1e9 / g_rate);
        int64_t now = tm_mono_ns();
        if (due > now) {
            struct timespec ts = {(due - now) / 1000000000LL, (due - now) % 1000000000LL};
            nanosleep(&ts, NULL);
        }
        size_t len;
        char *req = make_request(i, &len);
        if (fd < 0)
            fd = connect_server();
        int status = fd < 0 ? -1 : round_trip(fd, req, len);
        if (status < 0 && fd >= 0) { /* closed by the server: once more on a fresh connection */
            close(fd);
            fd = connect_server();
            status = fd < 0 ? -1 : round_trip(fd, req, len);
        }
        g_lat_ns[i] = tm_mono_ns() - due;
        if (status != 200)
            atomic_fetch_add(&g_errors, 1);
        atomic_fetch_add(&g_done, 1);
        free(req);
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int secs = argc > 1 ? atoi(argv[1]) : 600;
    g_rate = argc > 2 ? atof(argv[2]) : 200;
    g_total = (int64_t)(secs * g_rate);
    g_lat_ns = calloc((size_t)g_total, sizeof(*g_lat_ns));
    fx_setup(&F, "soak", " \"tick_seconds\": 5,");
    fx_start(&F);
    printf("soak: %d s at %.0f requests/s (open loop, %d connections): 60%% counters, 20%% agent "
           "reports (10 flows), 10%% transfers, 10%% GET /api/v1/cells; reconcile loop every 5 s\n",
           secs, g_rate, WORKERS);
    printf("   t(s)  requests  errors  RSS(kB)  fds\n");
    printf("%7d %9d %7d %8ld %4d\n", 0, 0, 0, th_rss_kb(F.pid), th_open_fds(F.pid));
    g_t0_ns = tm_mono_ns() + 100000000LL;
    pthread_t th[WORKERS];
    for (int i = 0; i < WORKERS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    long rss_max = 0;
    for (int t = 10; t <= secs; t += 10) {
        int64_t until = g_t0_ns + (int64_t)t * 1000000000LL;
        while (tm_mono_ns() < until)
            usleep(100000);
        long r = th_rss_kb(F.pid);
        rss_max = r > rss_max ? r : rss_max;
        printf("%7d %9ld %7ld %8ld %4d\n", t, atomic_load(&g_done), atomic_load(&g_errors), r,
               th_open_fds(F.pid));
        fflush(stdout);
    }
    for (int i = 0; i < WORKERS; i++)
        pthread_join(th[i], NULL);
    qsort(g_lat_ns, (size_t)g_total, sizeof(*g_lat_ns), cmp64);
#define Q(q) ((double)g_lat_ns[(size_t)((double)(g_total - 1) * (q))] / 1e6)
    printf("n=%lld requests, %ld errors; latency from the scheduled time: p50 %.2f ms, p99 %.2f "
           "ms, p999 %.2f ms, max %.2f ms; server RSS max %ld kB\n",
           (long long)g_total, atomic_load(&g_errors), Q(0.5), Q(0.99), Q(0.999),
           (double)g_lat_ns[g_total - 1] / 1e6, rss_max);
    printf("rows: %s\n",
           fx_row(&F, "SELECT (SELECT count(*) FROM counter_samples) || ' samples, ' || (SELECT "
                      "count(*) FROM flow_records) || ' flow records, ' || (SELECT count(*) FROM "
                      "transfers) || ' transfers, ' || (SELECT count(*) FROM heatmap_cells) || ' "
                      "cells'"));
    fx_stop(&F);
    free(g_lat_ns);
    return 0;
}
