/* bench/flows: capture, replay and in-process decoding of flow export datagrams.
 *   flow_replay record PORT OUT        receive UDP datagrams on 127.0.0.1:PORT into OUT (each
 *                                      prefixed by its 4-byte length) until 3 s of silence
 *   flow_replay send FILE PORT RATE N  send FILE's datagrams N times to 127.0.0.1:PORT, open
 *                                      loop at RATE datagrams/s (each send at its scheduled time,
 *                                      whatever the receiver does); prints what was sent
 *   flow_replay decode FILE N          decode + aggregate FILE's datagrams N times in process
 *                                      (flow_ipfix_decode, flow_agg_add): datagrams/s and the
 *                                      per-datagram time p50/p99/p999/max */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "flow_agg.h"
#include "flow_ipfix.h"

struct dgrams {
    uint8_t **p;
    uint32_t *len;
    size_t n;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int load(const char *path, struct dgrams *d)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 0;
    memset(d, 0, sizeof(*d));
    uint32_t n;
    while (fread(&n, 4, 1, f) == 1 && n <= 65536) {
        if (d->n == cap) {
            cap = cap ? cap * 2 : 1024;
            d->p = realloc(d->p, cap * sizeof(*d->p));
            d->len = realloc(d->len, cap * sizeof(*d->len));
        }
        d->p[d->n] = malloc(n ? n : 1);
        if (fread(d->p[d->n], 1, n, f) != n)
            break;
        d->len[d->n++] = n;
    }
    fclose(f);
    return 0;
}

static int sock_to(int port, struct sockaddr_in *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return socket(AF_INET, SOCK_DGRAM, 0);
}

static int record(int port, const char *out)
{
    struct sockaddr_in sa;
    int fd = sock_to(port, &sa);
    int rcv = 64 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        perror("bind");
        return 1;
    }
    struct timeval tv = {3, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    FILE *f = fopen(out, "wb");
    static uint8_t buf[65536];
    size_t n = 0;
    for (;;) {
        ssize_t k = recv(fd, buf, sizeof(buf), 0);
        if (k < 0)
            break;
        uint32_t len = (uint32_t)k;
        fwrite(&len, 4, 1, f);
        fwrite(buf, 1, len, f);
        n++;
    }
    fclose(f);
    printf("recorded %zu datagrams\n", n);
    return 0;
}

static int send_all(const struct dgrams *d, int port, double rate, int rounds)
{
    struct sockaddr_in sa;
    int fd = sock_to(port, &sa);
    int64_t t0 = now_ns(), gap = (int64_t)(1e9 / rate);
    size_t sent = 0, failed = 0, k = 0;
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < d->n; i++, k++) {
            int64_t due = t0 + (int64_t)k * gap;
            while (now_ns() < due)
                ;
            if (sendto(fd, d->p[i], d->len[i], 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                failed++;
            else
                sent++;
        }
    double s = (double)(now_ns() - t0) / 1e9;
    printf("sent %zu datagrams (%zu failed) in %.3f s: %.0f datagrams/s offered\n", sent, failed, s,
           (double)sent / s);
    close(fd);
    return 0;
}

static void on_rec(void *arg, const struct flow_rec *r)
{
    (void)flow_agg_add(arg, 0, r, 1796119200000000LL);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int decode(const struct dgrams *d, int rounds)
{
    struct flow_ipfix *fx = flow_ipfix_new();
    struct flow_agg *agg = flow_agg_new(60, 1u << 20);
    struct flow_stats st = {0};
    struct flow_exporter ex = {.port = 1};
    size_t total = d->n * (size_t)rounds;
    int64_t *lat = malloc(total * sizeof(*lat));
    char err[256];
    int64_t t0 = now_ns();
    size_t k = 0;
    for (int r = 0; r < rounds; r++) {
        for (size_t i = 0; i < d->n; i++) {
            int64_t a = now_ns();
            (void)flow_ipfix_decode(fx, &ex, d->p[i], d->len[i], 1796119200000LL, on_rec, agg, &st,
                                    err, sizeof(err));
            lat[k++] = now_ns() - a;
        }
        struct flow_cell *cells; /* a window closes once per round, as in the collector */
        size_t nc;
        if (flow_agg_take(agg, INT64_MAX, &cells, &nc) == 0)
            free(cells);
    }
    double s = (double)(now_ns() - t0) / 1e9;
    qsort(lat, total, sizeof(*lat), cmp_i64);
    printf("decoded %zu datagrams (%llu records, %llu malformed) in %.3f s: %.0f datagrams/s, "
           "%.0f records/s; per datagram p50 %.2f us p99 %.2f us p999 %.2f us max %.2f us\n",
           total, (unsigned long long)st.records, (unsigned long long)st.malformed, s,
           (double)total / s, (double)st.records / s, lat[total / 2] / 1e3,
           lat[(size_t)(total * 0.99)] / 1e3, lat[(size_t)(total * 0.999)] / 1e3,
           lat[total - 1] / 1e3);
    free(lat);
    flow_agg_free(agg);
    flow_ipfix_free(fx);
    return 0;
}

int main(int argc, char **argv)
{
    struct dgrams d;
    if (argc == 4 && strcmp(argv[1], "record") == 0)
        return record(atoi(argv[2]), argv[3]);
    if (argc == 6 && strcmp(argv[1], "send") == 0 && load(argv[2], &d) == 0)
        return send_all(&d, atoi(argv[3]), atof(argv[4]), atoi(argv[5]));
    if (argc == 4 && strcmp(argv[1], "decode") == 0 && load(argv[2], &d) == 0)
        return decode(&d, atoi(argv[3]));
    fprintf(stderr, "usage: flow_replay record PORT OUT | send FILE PORT RATE N | decode FILE N\n");
    return 2;
}
