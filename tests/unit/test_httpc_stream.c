/* common/httpc.c's streamed body (httpc_req.sink): a loopback server thread writes a response in
 * the pieces a test chooses (one byte at a time through the chunk framing, a chunk split across
 * writes, a connection closed early), each piece flushed on its own (TCP_NODELAY and a pause), and
 * the test compares what the sink was handed, byte for byte, with the body it meant to send.
 * ClickHouse's own chunked answers go through the same code in tests/analytics (test_ch_store). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
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

#include "httpc.h"

/* What the server writes: pieces, each sent with its own write() after a 2 ms pause. */
struct script {
    const char *pieces[16];
    size_t n;
    int lfd, port;
};

static void *serve(void *arg)
{
    struct script *s = arg;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char req[4096];
    size_t got = 0; /* the request: head and its short body, read until the blank line */
    while (got < sizeof req - 1) {
        ssize_t r = read(fd, req + got, sizeof req - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        req[got] = 0;
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    for (size_t i = 0; i < s->n; i++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        const char *p = s->pieces[i];
        if (send(fd, p, strlen(p), MSG_NOSIGNAL) < 0)
            break;
    }
    /* the end of the answer as a FIN, never a reset: a close() with the request's body still
     * unread would send RST, which may discard what the client has not yet read */
    shutdown(fd, SHUT_WR);
    while (read(fd, req, sizeof req) > 0)
        ;
    close(fd);
    return NULL;
}

static void listen_on(struct script *s)
{
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 1), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &al), 0);
    s->port = ntohs(a.sin_port);
}

struct got {
    char data[65536];
    size_t n, calls;
    size_t stop_after; /* 0: never stop */
};

static int sink(void *ctx, const char *data, size_t len)
{
    struct got *g = ctx;
    g->calls++;
    if (g->n + len > sizeof g->data)
        return -1;
    memcpy(g->data + g->n, data, len);
    g->n += len;
    return g->stop_after && g->n >= g->stop_after ? -1 : 0;
}

/* Runs the script; the return of httpc_do, the response and err. */
static int run(struct script *s, struct got *g, struct httpc_response *resp, char *err,
               size_t errlen)
{
    listen_on(s);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, serve, s), 0);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/q", s->port);
    struct httpc_req rq = {
        .url = url, .body = "x", .len = 1, .timeout_ms = 5000, .sink = sink, .sink_ctx = g};
    int rc = httpc_do(&rq, resp, err, errlen);
    pthread_join(th, NULL);
    close(s->lfd);
    return rc;
}

static void test_chunked_byte_by_byte(void **state)
{
    (void)state;
    /* the head and the framing cut everywhere: in the size line, between CR and LF, inside data */
    struct script s = {.pieces = {"HTTP/1.1 200 OK\r\nTransfer-", "Encoding: chunked\r\n\r", "\n5",
                                  "\r", "\nhel", "lo\r\n1", "a;ext=1\r\nabcdefghijklm",
                                  "nopqrstuvwxyz\r\n0\r\nX-Trailer: 1\r\n", "\r\n"},
                       .n = 9};
    struct got g = {0};
    struct httpc_response resp;
    char err[256] = "";
    assert_int_equal(run(&s, &g, &resp, err, sizeof err), 0);
    assert_int_equal(resp.status, 200);
    assert_null(resp.body);
    const char *want = "helloabcdefghijklmnopqrstuvwxyz"; /* 5 + 0x1a = 31 bytes */
    assert_int_equal(g.n, strlen(want));
    assert_memory_equal(g.data, want, strlen(want));
    assert_true(g.calls >= 2); /* piece by piece (at least one per chunk), not collected */
    httpc_response_free(&resp);
}

static void test_chunked_truncated(void **state)
{
    (void)state;
    /* the connection ends before the last (zero) chunk: an error, even after data was handed */
    struct script s = {.pieces = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                                  "4\r\nrow1\r\n", "4\r\nro"},
                       .n = 3};
    struct got g = {0};
    struct httpc_response resp;
    char err[256] = "";
    assert_int_equal(run(&s, &g, &resp, err, sizeof err), -1);
    assert_non_null(strstr(err, "response truncated after 6 body bytes"));
    assert_int_equal(g.n, 6);
}

static void test_length_short(void **state)
{
    (void)state;
    struct script s = {.pieces = {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", "12345"},
                       .n = 2};
    struct got g = {0};
    struct httpc_response resp;
    char err[256] = "";
    assert_int_equal(run(&s, &g, &resp, err, sizeof err), -1);
    assert_non_null(strstr(err, "response truncated after 5 body bytes"));
}

static void test_length_exact_and_to_close(void **state)
{
    (void)state;
    /* by Content-Length (bytes after it are not the body's), then a body that runs to the close */
    struct script s = {.pieces = {"HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nabc", "defgEXTRA"},
                       .n = 2};
    struct got g = {0};
    struct httpc_response resp;
    char err[256] = "";
    assert_int_equal(run(&s, &g, &resp, err, sizeof err), 0);
    assert_int_equal(g.n, 7);
    assert_memory_equal(g.data, "abcdefg", 7);
    struct script s2 = {.pieces = {"HTTP/1.0 200 OK\r\n\r\nto the", " end"}, .n = 2};
    struct got g2 = {0};
    assert_int_equal(run(&s2, &g2, &resp, err, sizeof err), 0);
    assert_int_equal(g2.n, 10);
    assert_memory_equal(g2.data, "to the end", 10);
}

static void test_error_status_kept(void **state)
{
    (void)state;
    /* not a 200: the body is the server's message, kept whole; the sink sees nothing */
    struct script s = {.pieces = {"HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: "
                                  "chunked\r\n\r\n",
                                  "f\r\nCode: 241, DB::\r\n", "0\r\n\r\n"},
                       .n = 3};
    struct got g = {0};
    struct httpc_response resp;
    char err[256] = "";
    assert_int_equal(run(&s, &g, &resp, err, sizeof err), 0);
    assert_int_equal(resp.status, 500);
    assert_string_equal(resp.body, "Code: 241, DB::");
    assert_int_equal(g.n, 0);
    httpc_response_free(&resp);
}

static void test_sink_stops(void **state)
{
    (void)state;
    struct script s = {.pieces = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                                  "3\r\nabc\r\n", "3\r\ndef\r\n", "0\r\n\r\n"},
                       .n = 4};
    struct got g = {.stop_after = 3};
    struct httpc_response resp;
    char err[256] = "";
    assert_int_equal(run(&s, &g, &resp, err, sizeof err), -1);
    assert_non_null(strstr(err, "the receiver stopped the transfer"));
    assert_int_equal(g.n, 3);
}

static void test_bad_framing(void **state)
{
    (void)state;
    struct script s = {.pieces = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
                                  "3\r\nabcX\r\n0\r\n\r\n"},
                       .n = 2};
    struct got g = {0};
    struct httpc_response resp;
    char err[256] = "";
    assert_int_equal(run(&s, &g, &resp, err, sizeof err), -1);
    assert_non_null(strstr(err, "malformed chunk framing after 3 body bytes"));
    struct script s2 = {
        .pieces = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "zz\r\nabc\r\n"},
        .n = 2};
    struct got g2 = {0};
    assert_int_equal(run(&s2, &g2, &resp, err, sizeof err), -1);
    assert_non_null(strstr(err, "malformed chunk framing after 0 body bytes"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunked_byte_by_byte),
        cmocka_unit_test(test_chunked_truncated),
        cmocka_unit_test(test_length_short),
        cmocka_unit_test(test_length_exact_and_to_close),
        cmocka_unit_test(test_error_status_kept),
        cmocka_unit_test(test_sink_stops),
        cmocka_unit_test(test_bad_framing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
