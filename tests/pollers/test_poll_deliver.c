/* The poller's delivery path (common/deliver.h) against a real HTTP(S) receiver (wl-http-sink),
 * samples fed through the gnmic listener:
 * - spool on a full tmpfs: every sample still delivered (directly), in order, once;
 * - spool on a read-only mount holding batches from before: everything delivered once, POSTs =
 *   batches (no loop);
 * - a spool bound that drops the oldest batches: the next delivered body says how many
 *   ("spool_dropped": {"entries", "bytes"}), and what arrives is the newest, in order;
 * - HTTPS with the right CA delivers, a wrong CA is refused with the reason.
 * Built twice: test_poll_deliver_root (WL_ROOT_PART: the two tmpfs cases, root for mount) and
 * test_poll_deliver (the others, no root). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "harness.h"
#include "pt_util.h"
#include "th_tls.h"

#define TOKEN "ptok-0123456789abcdef"

struct env {
    char dir[256], cfg[512], out[512], err[512], spool[1024];
    int port, tport;
    pid_t sink;
};

static void env_init(struct env *e, const char *tag, const char *scheme, const char *delivery,
                     const char *extra)
{
    snprintf(e->dir, sizeof(e->dir), "%s", th_tmpdir(tag));
    char tokens[600], text[4096];
    snprintf(tokens, sizeof(tokens), "%s/tokens.json", e->dir);
    snprintf(e->cfg, sizeof(e->cfg), "%s/config.json", e->dir);
    snprintf(e->out, sizeof(e->out), "%s/received.ndjson", e->dir);
    snprintf(e->err, sizeof(e->err), "%s/poller.log", e->dir);
    snprintf(e->spool, sizeof(e->spool), "%s/spool", e->dir);
    e->port = th_free_port();
    e->tport = th_free_port();
    pt_write(tokens, "{\"poller\": [\"" TOKEN "\"]}\n");
    snprintf(text, sizeof(text),
             "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
             "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}],\n"
             " \"tokens_file\": \"%s\", \"reconciler_url\": \"%s://127.0.0.1:%d\",\n"
             " \"delivery\": %s, %s\n"
             " \"devices\": [{\"name\": \"leaf1\", \"site\": \"nyc\", \"gnmi\": {}}],\n"
             " \"links\": [{\"device\": \"leaf1\", \"interface\": \"Ethernet1\", \"site\": "
             "\"nyc\", \"peer_site\": \"chi\", \"circuit\": \"c1\"}]}\n",
             tokens, scheme, e->port, delivery, extra ? extra : "");
    pt_write(e->cfg, text);
}

static void start_sink(struct env *e, const struct th_tls *t)
{
    char port_arg[64];
    snprintf(port_arg, sizeof port_arg, "127.0.0.1:%d", e->port);
    char *argv[] = {WL_HTTP_SINK,
                    "--listen",
                    port_arg,
                    "--out",
                    e->out,
                    "--seconds",
                    "120",
                    t ? "--tls-cert" : NULL,
                    t ? (char *)t->srv_cert : NULL,
                    "--tls-key",
                    t ? (char *)t->srv_key : NULL,
                    NULL};
    e->sink = th_spawn(argv, NULL);
    assert_true(e->sink > 0);
    assert_int_equal(th_wait_port(e->port, 5000), 0);
}

static pid_t start_poller(struct env *e, const char *extra)
{
    char cmd[4096];
    snprintf(cmd, sizeof(cmd),
             "exec %s --config %s poll --no-snmp --flush-ms 100 --spool %s --name p1 "
             "--gnmi-tcp 127.0.0.1:%d %s 2>>%s",
             th_bin("wanledger"), e->cfg, e->spool, e->tport, extra ? extra : "", e->err);
    char *sh[] = {"sh", "-c", cmd, NULL};
    pid_t pid = th_spawn(sh, NULL);
    assert_true(pid > 0);
    assert_int_equal(th_wait_port(e->tport, 5000), 0);
    return pid;
}

/* Samples first..last of leaf1/Ethernet1, in_octets = sequence number, one batch each. */
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
                         1764446400000000000LL + (long long)i * 1000000000LL, i, 2 * i);
        assert_int_equal(write(fd, m, (size_t)n), n);
        usleep(200000); /* 2 flushes apart: one batch per sample */
    }
    close(fd);
}

struct got {
    struct pt_samples s;
    int posts, ok, with_drop;
    long long drop_entries, drop_bytes;
};

static void read_got(const struct env *e, struct got *g)
{
    memset(g, 0, sizeof(*g));
    char *text = pt_slurp(e->out);
    for (char *save, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        cJSON *req = cJSON_Parse(line);
        assert_non_null(req);
        g->posts++;
        if (cJSON_GetObjectItem(req, "status")->valueint == 200) {
            g->ok++;
            const char *body = cJSON_GetObjectItem(req, "body")->valuestring;
            assert_true(pt_parse_batch(body, strlen(body), &g->s) >= 0);
            cJSON *b = cJSON_Parse(body);
            const cJSON *sd = cJSON_GetObjectItem(b, "spool_dropped");
            if (sd) {
                g->with_drop++;
                g->drop_entries +=
                    (long long)cJSON_GetNumberValue(cJSON_GetObjectItem(sd, "entries"));
                g->drop_bytes += (long long)cJSON_GetNumberValue(cJSON_GetObjectItem(sd, "bytes"));
            }
            cJSON_Delete(b);
        }
        cJSON_Delete(req);
    }
    free(text);
}

static void wait_samples(const struct env *e, size_t n, int timeout_ms)
{
    struct got g;
    for (int w = 0; w <= timeout_ms; w += 100) {
        read_got(e, &g);
        size_t have = g.s.n;
        pt_samples_free(&g.s);
        if (have >= n)
            return;
        usleep(100000);
    }
}

/* The samples are first..last in order, each once. */
static void assert_in_order(const struct got *g, int first, int last)
{
    if (g->s.n != (size_t)(last - first + 1))
        fail_msg("expected %d samples, got %zu", last - first + 1, g->s.n);
    for (size_t i = 0; i < g->s.n; i++)
        assert_int_equal(g->s.v[i].in_octets, (uint64_t)first + i);
}

static void mount_tmpfs(const char *dir, const char *size)
{
    th_require(
        th_sh("mkdir -p '%s' && mount -t tmpfs -o size=%s wl-poll-test '%s'", dir, size, dir) == 0,
        "mount -t tmpfs (root)");
}

static void test_full_spool(void **state)
{
    (void)state;
    th_require_root();
    struct env e;
    env_init(&e, "pd-full", "http", "{}", NULL);
    char mnt[600];
    snprintf(mnt, sizeof(mnt), "%s/mnt", e.dir);
    mount_tmpfs(mnt, "256k");
    snprintf(e.spool, sizeof(e.spool), "%s/spool", mnt);
    assert_int_equal(th_sh("mkdir -p '%s'", e.spool), 0);
    th_sh("dd if=/dev/zero of='%s/fill' bs=4k 2>/dev/null", mnt);
    start_sink(&e, NULL);
    pid_t pid = start_poller(&e, NULL);
    send_samples(e.tport, 1, 12);
    wait_samples(&e, 12, 10000);
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    th_stop(e.sink, 2000);
    th_sh("umount '%s'", mnt);
    struct got g;
    read_got(&e, &g);
    printf("full spool: %zu of 12 samples delivered in %d batches, %d POSTs\n", g.s.n, g.ok,
           g.posts);
    assert_in_order(&g, 1, 12);
    assert_int_equal(g.posts, g.ok);
    assert_true(g.ok >= 6);
    char *log = pt_slurp(e.err);
    assert_int_equal(pt_count(log, "sending directly from memory"), 1);
    free(log);
    pt_samples_free(&g.s);
}

static void test_readonly_spool(void **state)
{
    (void)state;
    th_require_root();
    struct env e;
    env_init(&e, "pd-ro", "http", "{}", NULL);
    char mnt[600];
    snprintf(mnt, sizeof(mnt), "%s/mnt", e.dir);
    mount_tmpfs(mnt, "4m");
    snprintf(e.spool, sizeof(e.spool), "%s/spool", mnt);
    pid_t pid = start_poller(&e, NULL); /* nobody listens: 1..5 are spooled */
    send_samples(e.tport, 1, 5);
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    assert_int_equal(th_sh("mount -o remount,ro '%s'", mnt), 0);
    start_sink(&e, NULL);
    pid = start_poller(&e, NULL);
    send_samples(e.tport, 6, 12);
    wait_samples(&e, 12, 10000);
    sleep(1); /* a loop would show here */
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    th_stop(e.sink, 2000);
    th_sh("umount '%s'", mnt);
    struct got g;
    read_got(&e, &g);
    printf("read-only spool: %zu of 12 samples delivered in %d batches, %d POSTs\n", g.s.n, g.ok,
           g.posts);
    assert_in_order(&g, 1, 12);
    assert_int_equal(g.posts, g.ok);
    pt_samples_free(&g.s);
}

static void test_bound_drops_reported(void **state)
{
    (void)state;
    struct env e;
    env_init(&e, "pd-drop", "http", "{\"compress\": \"gzip\"}",
             "\"poller\": {\"spool_max_bytes\": 4096},");
    /* bound 4096 bytes: ~12 one-sample batches fit, 30 are made while nobody listens */
    pid_t pid = start_poller(&e, NULL);
    send_samples(e.tport, 1, 30);
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    /* restart with the reconciler up (the bound comes from the config: 4096) */
    start_sink(&e, NULL);
    pid = start_poller(&e, NULL);
    wait_samples(&e, 5, 10000);
    sleep(1);
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    th_stop(e.sink, 2000);
    struct got g;
    read_got(&e, &g);
    char *log = pt_slurp(e.err);
    printf("bounded spool: %zu of 30 samples kept, next body reported %lld dropped entries "
           "(%lld bytes)\n",
           g.s.n, g.drop_entries, g.drop_bytes);
    assert_true(g.s.n > 0 && g.s.n < 30);
    assert_in_order(&g, (int)(31 - g.s.n), 30); /* the newest survive, in order */
    assert_int_equal(g.with_drop, 1);           /* reported once, in the first body */
    assert_int_equal(g.drop_entries, (long long)(30 - g.s.n)); /* one sample per batch */
    assert_true(g.drop_bytes >= g.drop_entries * 100);
    assert_true(pt_count(log, "at its bound") >= 1);
    free(log);
    pt_samples_free(&g.s);
}

static void test_tls(void **state)
{
    (void)state;
    struct env e;
    const char *dir = th_tmpdir("pd-certs");
    struct th_tls t;
    th_require(th_tls_make(dir, &t) == 0, "openssl command line to make test certificates");
    char delivery[1200];
    snprintf(delivery, sizeof(delivery), "{\"ca_file\": \"%s\"}", t.other_ca);
    env_init(&e, "pd-tls-bad", "https", delivery, NULL);
    start_sink(&e, &t);
    pid_t pid = start_poller(&e, NULL);
    send_samples(e.tport, 1, 3);
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    th_stop(e.sink, 2000);
    struct got g;
    read_got(&e, &g);
    assert_int_equal(g.posts, 0);
    char *log = pt_slurp(e.err);
    assert_int_equal(pt_count(log, "not trusted"), 1);
    free(log);

    snprintf(delivery, sizeof(delivery), "{\"ca_file\": \"%s\"}", t.ca);
    env_init(&e, "pd-tls", "https", delivery, NULL);
    start_sink(&e, &t);
    pid = start_poller(&e, NULL);
    send_samples(e.tport, 1, 3);
    wait_samples(&e, 3, 10000);
    assert_int_equal(WEXITSTATUS(th_stop(pid, 15000)), 0);
    th_stop(e.sink, 2000);
    read_got(&e, &g);
    printf("https: wrong CA refused; right CA: %zu samples in %d POSTs\n", g.s.n, g.posts);
    assert_in_order(&g, 1, 3);
    pt_samples_free(&g.s);
}

int main(void)
{
#ifdef WL_ROOT_PART
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_spool),
        cmocka_unit_test(test_readonly_spool),
    };
    (void)test_bound_drops_reported;
    (void)test_tls;
#else
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bound_drops_reported),
        cmocka_unit_test(test_tls),
    };
    (void)test_full_spool;
    (void)test_readonly_spool;
#endif
    return cmocka_run_group_tests(tests, NULL, NULL);
}
