/* Request bodies read straight off the socket (reconciler/gate.c read_body), against the real
 * `wanledger reconcile` and PostgreSQL: agent reports of several hundred KiB on one keep-alive
 * connection, pipelined (the next request's head right behind a body, in the same write) and cut
 * into pieces with pauses between them (reads that come up short). Every report must be answered
 * 200 in order and stored whole: its flow count and byte sum are computed here from what was sent.
 * /metrics must account for every body byte once, by who read it (socket bufferevent or direct),
 * and the direct reads must have happened. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"

static struct fx F;
static int64_t W; /* a past window */
static const char AGENT[] = "body-read-agent";

struct sent {
    long long flows, tx; /* flows stored and their tx_bytes sum, as sent */
    uint64_t body_bytes;
};
static struct sent S;

/* One report as a complete request (head + body, NUL-terminated); adds what it holds to S. */
static char *request(int seq, int flows, size_t *len)
{
    size_t bl = 0;
    char *body = fx_socket_report_body(AGENT, W, seq, flows, &bl);
    char *head = fx_fmt("POST /v1/attributions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                        "Content-Type: application/json\r\nAuthorization: Bearer %s\r\n"
                        "Content-Length: %zu\r\n\r\n",
                        F.port, FX_TOKEN_AGENT, bl);
    size_t hl = strlen(head);
    char *r = malloc(hl + bl + 1);
    assert_non_null(r);
    memcpy(r, head, hl);
    memcpy(r + hl, body, bl);
    r[hl + bl] = 0;
    free(head);
    free(body);
    *len = hl + bl;
    S.flows += flows;
    /* tx_bytes of flow k is 1000 seq + k (fixture.h) */
    S.tx += (long long)flows * 1000 * seq + (long long)flows * (flows - 1) / 2;
    S.body_bytes += bl;
    return r;
}

static int connect_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)F.port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {60, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        assert_true(w > 0);
        p += w;
        n -= (size_t)w;
    }
}

static void pause_ms(int ms)
{
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* Reads n complete answers on fd (Content-Length framed) and asserts each is 200. */
static void expect_ok_answers(int fd, int n)
{
    size_t cap = 1 << 16, have = 0;
    char *buf = malloc(cap + 1);
    assert_non_null(buf);
    for (int i = 0; i < n; i++) {
        for (;;) {
            buf[have] = 0;
            char *end = strstr(buf, "\r\n\r\n");
            const char *cl = end ? strcasestr(buf, "\r\nContent-Length:") : NULL;
            if (end && cl && cl < end) {
                size_t body = strtoul(cl + 17, NULL, 10), total = (size_t)(end + 4 - buf) + body;
                if (have >= total) {
                    int status = 0;
                    assert_int_equal(sscanf(buf, "HTTP/1.1 %d", &status), 1);
                    if (status != 200)
                        fprintf(stderr, "answer %d: %.*s\n", i + 1, (int)total, buf);
                    assert_int_equal(status, 200);
                    memmove(buf, buf + total, have - total);
                    have -= total;
                    break;
                }
            }
            if (have == cap) {
                cap *= 2;
                buf = realloc(buf, cap + 1);
                assert_non_null(buf);
            }
            ssize_t r = recv(fd, buf + have, cap - have, 0);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                fprintf(stderr, "answer %d of %d missing (recv %zd: %s)\n", i + 1, n, r,
                        r < 0 ? strerror(errno) : "closed");
            assert_true(r > 0);
            have += (size_t)r;
        }
    }
    assert_int_equal(have, 0); /* nothing more than the n answers */
    free(buf);
}

static uint64_t metric(const char *text, const char *name)
{
    const char *p = strstr(text, name);
    assert_non_null(p);
    return strtoull(p + strlen(name), NULL, 10);
}

static void body_metrics(uint64_t *buffered, uint64_t *direct)
{
    char *m = NULL;
    assert_int_equal(fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &m), 200);
    *buffered = metric(m, "wanledger_http_body_bytes_total{read=\"bufferevent\"} ");
    *direct = metric(m, "wanledger_http_body_bytes_total{read=\"direct\"} ");
    free(m);
}

static void check_stored(void)
{
    char *q = fx_fmt("SELECT count(*) FROM flow_records WHERE agent_id = '%s'", AGENT);
    assert_int_equal(fx_num(&F, q), S.flows);
    free(q);
    q = fx_fmt("SELECT sum(tx_bytes) FROM flow_records WHERE agent_id = '%s'", AGENT);
    assert_int_equal(fx_num(&F, q), S.tx);
    free(q);
}

/* The body byte counters and what had been sent before a case. */
struct mark {
    uint64_t buffered, direct, sent;
};

static struct mark mark_now(void)
{
    struct mark m = {.sent = S.body_bytes};
    body_metrics(&m.buffered, &m.direct);
    return m;
}

/* After a case: every report stored whole, and every body byte sent since m counted once, by one
 * reader or the other (/metrics' own request has no body). The bytes read directly. */
static uint64_t check_case(struct mark m)
{
    check_stored();
    struct mark now = mark_now();
    assert_int_equal((now.buffered - m.buffered) + (now.direct - m.direct), now.sent - m.sent);
    fprintf(stderr, "body bytes: %" PRIu64 " by the bufferevent, %" PRIu64 " direct\n",
            now.buffered - m.buffered, now.direct - m.direct);
    return now.direct - m.direct;
}

/* Two large reports and a small one back to back in one write: every head but the first arrives
 * right behind a body, so a read past a body's end would take the next head. */
static void test_pipelined(void **state)
{
    (void)state;
    struct mark m = mark_now();
    size_t l1, l2, l3;
    char *r1 = request(1, 3000, &l1), *r2 = request(2, 2000, &l2), *r3 = request(3, 7, &l3);
    char *all = malloc(l1 + l2 + l3);
    assert_non_null(all);
    memcpy(all, r1, l1);
    memcpy(all + l1, r2, l2);
    memcpy(all + l1 + l2, r3, l3);
    int fd = connect_server();
    send_all(fd, all, l1 + l2 + l3);
    expect_ok_answers(fd, 3);
    close(fd);
    free(all);
    free(r1);
    free(r2);
    free(r3);
    check_case(m);
}

/* A report cut into pieces with pauses between them (short reads in the middle of a body), the
 * last piece followed by the next request in the same write. */
static void test_pieces(void **state)
{
    (void)state;
    struct mark m = mark_now();
    size_t l1, l2;
    char *r1 = request(4, 3000, &l1), *r2 = request(5, 11, &l2);
    size_t head = (size_t)(strstr(r1, "\r\n\r\n") + 4 - r1);
    /* the head and 1,000 body bytes, then 100,001, then 7, then the rest with request 2 */
    size_t cuts[] = {head + 1000, head + 101001, head + 101008, l1};
    int fd = connect_server();
    size_t at = 0;
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0] - 1; i++) {
        send_all(fd, r1 + at, cuts[i] - at);
        at = cuts[i];
        pause_ms(50);
    }
    char *tail = malloc(l1 - at + l2);
    assert_non_null(tail);
    memcpy(tail, r1 + at, l1 - at);
    memcpy(tail + (l1 - at), r2, l2);
    send_all(fd, tail, l1 - at + l2);
    expect_ok_answers(fd, 2);
    close(fd);
    free(tail);
    free(r1);
    free(r2);
    /* after the first piece the body's rest can only have come in through read_body's reads
     * beyond the socket bufferevent's 4 KiB: at least the 100,001-byte piece less 4 KiB */
    assert_true(check_case(m) >= 100001 - 4096);
}

int main(void)
{
    fx_setup(&F, "recon-bodyread", " \"tick_seconds\": 3600, \"open_on_loopback\": true,");
    W = fx_window_ago(5, 60);
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipelined),
        cmocka_unit_test(test_pieces),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
