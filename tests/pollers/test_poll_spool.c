/* Delivery through the on-disk spool: with the reconciler down, batches wait on disk across a
 * poller restart; when a receiver comes up every sample arrives exactly once, in order, with the
 * poller token. The receiver is a tiny HTTP server in this test; samples come in through the
 * gnmic listener so the test needs no root. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "pt_util.h"
#include "spool.h"
#include "th_decode.h"

#define TOKEN "ptok-0123456789abcdef"

struct receiver {
    int port, lfd;
    pthread_t th;
    volatile bool stop;
    pthread_mutex_t mu;
    struct pt_samples got;
    int requests, bad_auth;
};

static void *receiver_main(void *arg)
{
    struct receiver *r = arg;
    while (!r->stop) {
        struct pollfd p = {.fd = r->lfd, .events = POLLIN};
        if (poll(&p, 1, 100) <= 0)
            continue;
        int fd = accept(r->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        char buf[1 << 16];
        size_t n = 0;
        char *body = NULL;
        long clen = -1;
        while (n < sizeof(buf) - 1) {
            ssize_t k = read(fd, buf + n, sizeof(buf) - 1 - n);
            if (k <= 0)
                break;
            n += (size_t)k;
            buf[n] = '\0';
            char *hend = strstr(buf, "\r\n\r\n");
            if (hend && clen < 0) {
                const char *cl = strcasestr(buf, "Content-Length:");
                clen = cl ? strtol(cl + 15, NULL, 10) : 0;
                body = hend + 4;
            }
            if (body && (long)(n - (size_t)(body - buf)) >= clen)
                break;
        }
        pthread_mutex_lock(&r->mu);
        r->requests++;
        if (!strstr(buf, "Authorization: Bearer " TOKEN) || !strstr(buf, "POST /v1/counters "))
            r->bad_auth++;
        if (body) {
            /* zstd by default (common/deliver_post.h): decoded as a reconciler would */
            char enc[32] = "";
            const char *ce = strcasestr(buf, "Content-Encoding:");
            if (ce && ce < body)
                sscanf(ce + 17, " %31[a-z]", enc);
            size_t dl = 0;
            char *dec = th_decode_body(enc[0] ? enc : NULL, body, (size_t)clen, &dl);
            if (dec)
                pt_parse_batch(dec, dl, &r->got);
            else
                r->bad_auth++;
            free(dec);
        }
        pthread_mutex_unlock(&r->mu);
        const char *resp = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                           "2\r\nConnection: close\r\n\r\n{}";
        if (write(fd, resp, strlen(resp)) < 0)
            r->bad_auth++;
        close(fd);
    }
    return NULL;
}

static void receiver_start(struct receiver *r)
{
    r->lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(r->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)r->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(r->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(r->lfd, 16), 0);
    pthread_mutex_init(&r->mu, NULL);
    assert_int_equal(pthread_create(&r->th, NULL, receiver_main, r), 0);
}

static size_t received(struct receiver *r)
{
    pthread_mutex_lock(&r->mu);
    size_t n = r->got.n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

static pid_t start_poller(const char *cfg, const char *spool, int tport, const char *err)
{
    static char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "exec %s --config %s poll --no-snmp --flush-ms 100 --spool %s --name p1 "
             "--gnmi-tcp 127.0.0.1:%d 2>>%s",
             th_bin("wanledger"), cfg, spool, tport, err);
    char *sh[] = {"sh", "-c", cmd, NULL};
    pid_t pid = th_spawn(sh, NULL);
    assert_true(pid > 0);
    assert_int_equal(th_wait_port(tport, 5000), 0);
    return pid;
}

/* Sends samples first..last of leaf1/Ethernet1, one message each, in_octets = sequence number. */
/* Sample times: an hour ago (the reconciler refuses times older than max_past_days). */
static long long t0_ns(void)
{
    static long long t0;
    if (!t0)
        t0 = ((long long)time(NULL) - 3600) / 60 * 60 * 1000000000LL;
    return t0;
}

static void send_samples(int tport, int first, int last)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)tport),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    for (int i = first; i <= last; i++) {
        char m[512];
        int n = snprintf(m, sizeof(m),
                         "[{\"name\":\"if\",\"timestamp\":%lld,\"tags\":{\"source\":\"leaf1\","
                         "\"interface_name\":\"Ethernet1\"},\"values\":{\"/interfaces/interface/"
                         "state/counters/in-octets\":%d,\"/interfaces/interface/state/counters/"
                         "out-octets\":\"%d\"}}]\n",
                         t0_ns() + (long long)i * 1000000000LL, i, 2 * i);
        assert_int_equal(write(fd, m, (size_t)n), n);
        usleep(20000); /* several batches, not one */
    }
    close(fd);
}

static void test_spool_survives_restarts_in_order(void **state)
{
    (void)state;
    const char *dir = th_tmpdir("wlp-spool");
    char cfg[512], tokens[512], spool[512], err[512], text[2048];
    snprintf(cfg, sizeof(cfg), "%s/config.json", dir);
    snprintf(tokens, sizeof(tokens), "%s/tokens.json", dir);
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    snprintf(err, sizeof(err), "%s/err", dir);
    struct receiver r = {.port = th_free_port()};
    pt_write(tokens, "{\"poller\": [\"" TOKEN "\"]}\n");
    chmod(tokens, 0600); /* a secret: group/others may not read it */
    snprintf(text, sizeof(text),
             "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
             "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}],\n"
             " \"tokens_file\": \"%s\", \"reconciler_url\": \"http://127.0.0.1:%d\",\n"
             " \"devices\": [{\"name\": \"leaf1\", \"site\": \"nyc\", \"gnmi\": {}}],\n"
             " \"links\": [{\"device\": \"leaf1\", \"interface\": \"Ethernet1\", \"site\": "
             "\"nyc\", \"peer_site\": \"chi\", \"circuit\": \"c1\"}]}\n",
             tokens, r.port);
    pt_write(cfg, text);
    int tport = th_free_port();

    /* reconciler down: samples 1..10 go to the spool; the poller stops (a restart) */
    pid_t pid = start_poller(cfg, spool, tport, err);
    send_samples(tport, 1, 10);
    usleep(400000);
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    char serr[256];
    struct spool *sp = spool_open(spool, 1 << 30, serr, sizeof(serr));
    assert_non_null(sp);
    size_t spooled = spool_count(sp);
    spool_close(sp);
    fprintf(stderr, "# %zu batches spooled while the reconciler was down\n", spooled);
    assert_true(spooled >= 2);

    /* restarted poller, still no reconciler: 11..20 */
    pid = start_poller(cfg, spool, tport, err);
    send_samples(tport, 11, 20);
    usleep(300000);
    /* the reconciler comes up: everything arrives */
    receiver_start(&r);
    for (int i = 0; i < 400 && received(&r) < 20; i++)
        usleep(100000);
    usleep(500000); /* no duplicates trailing */
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    r.stop = true;
    pthread_join(r.th, NULL);
    close(r.lfd);

    char *e = pt_slurp(err);
    if (r.got.n != 20)
        fail_msg("expected 20 samples, got %zu; log:\n%s", r.got.n, e);
    for (size_t i = 0; i < 20; i++) {
        assert_int_equal(r.got.v[i].in_octets, i + 1); /* in order, each once */
        assert_int_equal(r.got.v[i].out_octets, 2 * (i + 1));
    }
    assert_int_equal(r.bad_auth, 0);
    /* the outage was logged once per run, not once per retry */
    assert_true(pt_count(e, "retrying with backoff") <= 2);
    assert_true(pt_count(e, "accepts again") == 1);
    sp = spool_open(spool, 1 << 30, serr, sizeof(serr));
    assert_int_equal(spool_count(sp), 0);
    spool_close(sp);
    free(e);
    pt_samples_free(&r.got);
    pthread_mutex_destroy(&r.mu);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spool_survives_restarts_in_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
