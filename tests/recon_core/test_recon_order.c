/* The order of the attribution rollup and the dependency map where their figures tie, and the
 * identity of their rows by string content, against hand-written expectations, on 1, 2 and 3
 * threads. recon_run orders rows by interned owners' ranks and keys them by owner ids
 * (reconciler/recon_rollup.c, recon_deps.c): this pins down that the result is still the one of
 * comparing the strings: a pair's rows by bytes descending, then source, workflow, user, program,
 * host, pod namespace, pod, container (strcmp); dependency rows by local site, owner, bytes
 * descending, remote site, kind, endpoint; two flows whose owner strings are equal but separate
 * copies make one row; an endpoint's text is what inet_ntop writes (short IPv4 ones are written
 * by hand; a long IPv6 one is kept out of line). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "recon.h"

static const char CFG[] =
    "{\"window_seconds\": 60,"
    " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\", \"fd00:1::/32\"]},"
    "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\", \"fd00:2::/32\"]},"
    "            {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],"
    " \"devices\": [{\"name\": \"r1\", \"site\": \"nyc\", \"gnmi\": {}},"
    "              {\"name\": \"r2\", \"site\": \"chi\", \"gnmi\": {}}],"
    " \"links\": [{\"device\": \"r1\", \"interface\": \"a\", \"site\": \"nyc\", \"peer_site\": "
    "\"chi\", \"circuit\": \"nyc-chi-1\"},"
    "            {\"device\": \"r2\", \"interface\": \"b\", \"site\": \"chi\", \"peer_site\": "
    "\"osl\", \"circuit\": \"chi-osl-1\"}],"
    " \"routes\": [{\"src\": \"nyc\", \"dst\": \"osl\", \"via\": [\"chi\"]}]"
    "}";

#define WS (INT64_C(1764442380) * 1000000)

enum { NYC, CHI, OSL };

static struct recon_addr addr(const char *s)
{
    struct recon_addr a = {.family = strchr(s, ':') ? AF_INET6 : AF_INET};
    assert_int_equal(inet_pton(a.family, s, a.addr), 1);
    return a;
}

/* Every string its own copy (as the PostgreSQL loader gives them); freed by free_flow. */
static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

static struct recon_flow sock(const char *remote, uint16_t lport, uint16_t rport,
                              enum recon_role role, uint64_t tx, const char *wf, const char *user,
                              const char *program, const char *host, const char *pod_ns)
{
    struct recon_flow f = {.source = RECON_FLOW_SOCKET,
                           .host = dup_or_null(host),
                           .user = dup_or_null(user),
                           .program = dup_or_null(program),
                           .workflow = dup_or_null(wf),
                           .kube = {dup_or_null(pod_ns), dup_or_null(pod_ns ? "p" : NULL),
                                    dup_or_null(pod_ns ? "c" : NULL)},
                           .proto = 6,
                           .local = addr(strchr(remote, ':') ? "fd00:1::2" : "10.1.0.2"),
                           .remote = addr(remote),
                           .local_port = lport,
                           .remote_port = rport,
                           .role = role,
                           .tx_bytes = tx};
    return f;
}

static void free_flow(struct recon_flow *f)
{
    free((char *)f->host);
    free((char *)f->user);
    free((char *)f->program);
    free((char *)f->workflow);
    free((char *)f->kube.ns);
    free((char *)f->kube.pod);
    free((char *)f->kube.container);
}

struct want_roll {
    int src, dst;
    const char *wf, *user, *program, *host, *ns;
    uint64_t bytes;
};

struct want_dep {
    int local, remote;
    const char *wf, *user, *program, *kind;
    const char *endpoint;
    uint64_t out, conns;
};

static void check(const struct recon_result *r, const struct want_roll *wr, size_t n_wr,
                  const struct want_dep *wd, size_t n_wd, int threads)
{
    if (r->n_rollup != n_wr)
        fail_msg("%d threads: %zu rollup rows, want %zu", threads, r->n_rollup, n_wr);
    for (size_t i = 0; i < n_wr; i++) {
        const struct recon_rollup *x = &r->rollup[i];
        const struct want_roll *w = &wr[i];
        if (x->src_site != w->src || x->dst_site != w->dst || x->bytes != w->bytes ||
            strcmp(x->source, "socket") || strcmp(x->workflow, w->wf) || strcmp(x->user, w->user) ||
            strcmp(x->program, w->program) || strcmp(x->host, w->host) ||
            strcmp(x->kube.ns, w->ns ? w->ns : "") || strcmp(x->kube.pod, w->ns ? "p" : "") ||
            strcmp(x->kube.container, w->ns ? "c" : ""))
            fail_msg("%d threads: rollup row %zu is %d->%d %s/%s/%s/%s/%s %llu, want %d->%d "
                     "%s/%s/%s/%s/%s %llu",
                     threads, i, x->src_site, x->dst_site, x->workflow, x->user, x->program,
                     x->host, x->kube.ns, (unsigned long long)x->bytes, w->src, w->dst, w->wf,
                     w->user, w->program, w->host, w->ns ? w->ns : "",
                     (unsigned long long)w->bytes);
    }
    if (r->n_deps != n_wd)
        fail_msg("%d threads: %zu dependency rows, want %zu", threads, r->n_deps, n_wd);
    for (size_t i = 0; i < n_wd; i++) {
        const struct recon_dep *d = &r->deps[i];
        const struct want_dep *w = &wd[i];
        if (d->local_site != w->local || d->remote_site != w->remote ||
            strcmp(d->workflow, w->wf) || strcmp(d->user, w->user) ||
            strcmp(d->program, w->program) || strcmp(recon_dep_kind_name(d->kind), w->kind) ||
            strcmp(d->endpoint, w->endpoint) || d->bytes_out != w->out || d->bytes_in != 0 ||
            d->connections != w->conns)
            fail_msg("%d threads: dependency row %zu is %d->%d %s %s %s out %llu conns %llu, "
                     "want %d->%d %s %s %s out %llu conns %llu",
                     threads, i, d->local_site, d->remote_site, d->workflow,
                     recon_dep_kind_name(d->kind), d->endpoint, (unsigned long long)d->bytes_out,
                     (unsigned long long)d->connections, w->local, w->remote, w->wf, w->kind,
                     w->endpoint, (unsigned long long)w->out, (unsigned long long)w->conns);
    }
}

/* IP:PORT as inet_ntop and printf write it (the expectation, made apart from recon's writer). */
static char *ep_text(char *buf, size_t len, const char *ip, int port)
{
    struct recon_addr a = addr(ip);
    char t[INET6_ADDRSTRLEN];
    assert_non_null(inet_ntop(a.family, a.addr, t, sizeof t));
    if (port < 0)
        snprintf(buf, len, "%s", t);
    else
        snprintf(buf, len, a.family == AF_INET6 ? "[%s]:%d" : "%s:%d", t, port);
    return buf;
}

static void test_ties(void **state)
{
    (void)state;
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("test.json", CFG, &errs);
    if (!cfg) {
        for (size_t i = 0; i < errs.n; i++)
            fprintf(stderr, "%s: %s\n", errs.items[i].jpath, errs.items[i].msg);
        cfg_errors_free(&errs);
        fail();
    }
    const enum recon_role C = RECON_ROLE_CLIENT;
    /* scrambled: arrival order is not the order of the result */
    struct recon_flow flows[] = {
        sock("10.2.0.9", 40001, 80, C, 1000, "wf-b", "alice", "py", "h1", NULL),   /* A */
        sock("10.2.0.9", 40002, 80, C, 1000, "wf-a", "bob", "py", "h1", NULL),     /* B */
        sock("10.2.0.9", 40003, 80, C, 1000, "wf-a", "alice", "py", "h2", NULL),   /* C */
        sock("10.2.0.9", 40004, 80, C, 600, "wf-a", "alice", "py", "h1", NULL),    /* D */
        sock("10.2.0.9", 40005, 80, C, 1000, "wf-a", "alice", "java", "h1", NULL), /* E */
        sock("10.2.0.9", 40006, 80, C, 1000, "wf-a", "alice", "py", "h1", "x"),    /* F */
        sock("10.2.0.9", 40007, 80, C, 2000, "wf-c", "alice", "py", "h1", NULL),   /* G */
        sock("10.2.0.9", 40008, 80, C, 1000, NULL, "alice", "py", "h1", NULL),     /* H */
        sock("10.2.0.9", 40009, 80, C, 400, "wf-a", "alice", "py", "h1", NULL),    /* D again */
        sock("10.3.0.9", 40010, 80, C, 1000, "wf-b", "alice", "py", "h1", NULL),   /* A, routed */
        /* owner W = (wf-w, carol, sh): dependency rows tying on bytes */
        sock("10.2.0.9", 41001, 80, C, 500, "wf-w", "carol", "sh", "h9", NULL),
        sock("10.2.0.10", 41002, 80, C, 500, "wf-w", "carol", "sh", "h9", NULL),
        sock("10.3.0.1", 41003, 65535, C, 500, "wf-w", "carol", "sh", "h9", NULL),
        sock("10.2.100.255", 41004, 0, C, 500, "wf-w", "carol", "sh", "h9", NULL),
        sock("fd00:2::1234:5678:9abc:def0", 41005, 443, C, 300, "wf-w", "carol", "sh", "h9", NULL),
        sock("fd00:2::1234:5678:9abc:def0", 41006, 443, C, 200, "wf-w", "carol", "sh", "h9", NULL),
        sock("10.2.0.77", 41007, 50000, RECON_ROLE_SERVER, 500, "wf-w", "carol", "sh", "h9", NULL),
    };
    size_t n = sizeof flows / sizeof flows[0];
    /* nyc -> chi: W (3000: every flow of W crosses it, the routed one too) first; A (2000 with
     * its routed flow) ties with G and wins on workflow; the 1000s in string order ("" first;
     * java < py; h1 before h2 and its kube-less owner before its pod; alice < bob); D's two
     * flows (separate copies of one owner's strings) make one row. The server-side flow is
     * credited to its own side (the other end never reported): nyc -> chi too. */
    const struct want_roll wr[] = {
        {NYC, CHI, "wf-w", "carol", "sh", "h9", NULL, 3000},
        {NYC, CHI, "wf-b", "alice", "py", "h1", NULL, 2000},
        {NYC, CHI, "wf-c", "alice", "py", "h1", NULL, 2000},
        {NYC, CHI, "", "alice", "py", "h1", NULL, 1000},
        {NYC, CHI, "wf-a", "alice", "java", "h1", NULL, 1000},
        {NYC, CHI, "wf-a", "alice", "py", "h1", NULL, 1000},
        {NYC, CHI, "wf-a", "alice", "py", "h1", "x", 1000},
        {NYC, CHI, "wf-a", "alice", "py", "h2", NULL, 1000},
        {NYC, CHI, "wf-a", "bob", "py", "h1", NULL, 1000},
        {CHI, OSL, "wf-b", "alice", "py", "h1", NULL, 1000},
        {CHI, OSL, "wf-w", "carol", "sh", "h9", NULL, 500},
    };
    char e[8][64];
    /* by owner (workflow, user, program; no host or pod: C, D x2 and F share a row), then
     * bytes; W's rows all 500: chi's before osl's, then the endpoint's text ("10.2.0.10:80" <
     * "10.2.0.77" (the server side names its remote client without a port) < "10.2.0.9:80" <
     * "10.2.100.255:0" < "[fd00:...]:443", its two connections summed) */
    const char *v6 = "fd00:2::1234:5678:9abc:def0";
    const struct want_dep wd[] = {
        {NYC, CHI, "", "alice", "py", "peer", ep_text(e[0], 64, "10.2.0.9", 80), 1000, 1},
        {NYC, CHI, "wf-a", "alice", "java", "peer", e[0], 1000, 1},
        {NYC, CHI, "wf-a", "alice", "py", "peer", e[0], 3000, 4},
        {NYC, CHI, "wf-a", "bob", "py", "peer", e[0], 1000, 1},
        {NYC, CHI, "wf-b", "alice", "py", "peer", e[0], 1000, 1},
        {NYC, OSL, "wf-b", "alice", "py", "peer", ep_text(e[1], 64, "10.3.0.9", 80), 1000, 1},
        {NYC, CHI, "wf-c", "alice", "py", "peer", e[0], 2000, 1},
        {NYC, CHI, "wf-w", "carol", "sh", "peer", ep_text(e[2], 64, "10.2.0.10", 80), 500, 1},
        {NYC, CHI, "wf-w", "carol", "sh", "peer", ep_text(e[3], 64, "10.2.0.77", -1), 500, 1},
        {NYC, CHI, "wf-w", "carol", "sh", "peer", e[0], 500, 1},
        {NYC, CHI, "wf-w", "carol", "sh", "peer", ep_text(e[4], 64, "10.2.100.255", 0), 500, 1},
        {NYC, CHI, "wf-w", "carol", "sh", "peer", ep_text(e[5], 64, v6, 443), 500, 2},
        {NYC, OSL, "wf-w", "carol", "sh", "peer", ep_text(e[6], 64, "10.3.0.1", 65535), 500, 1},
    };
    for (int threads = 1; threads <= 3; threads++) {
        struct recon_input in = {
            .window_start_us = WS, .flows = flows, .n_flows = n, .threads = threads};
        struct recon_result res;
        char err[256];
        assert_int_equal(recon_run(cfg, &in, &res, err, sizeof err), 0);
        check(&res, wr, sizeof wr / sizeof wr[0], wd, sizeof wd / sizeof wd[0], threads);
        recon_result_free(&res);
    }
    for (size_t i = 0; i < n; i++)
        free_flow(&flows[i]);
    cfg_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_ties)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
