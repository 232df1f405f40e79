/* The dependency map of one window (recon_run's deps), against hand-computed rows: a connection
 * seen from both ends counts max(sender tx, receiver rx) each way and is named by the configured
 * endpoint; a connection seen only from its server side names the remote client by address; an
 * unknown-role flow names the remote ADDR:PORT; NFS reads and writes of one export add up on one
 * row; a transfer is credited to its requester at the destination; flows on a service's port
 * stay out, as in the attribution rollup. */
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
    " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
    "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},"
    "            {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],"
    " \"devices\": [{\"name\": \"r1\", \"site\": \"nyc\", \"gnmi\": {}},"
    "              {\"name\": \"r2\", \"site\": \"chi\", \"gnmi\": {}}],"
    " \"links\": [{\"device\": \"r1\", \"interface\": \"a\", \"site\": \"nyc\", \"peer_site\": "
    "\"chi\", \"circuit\": \"nyc-chi-1\"},"
    "            {\"device\": \"r2\", \"interface\": \"b\", \"site\": \"chi\", \"peer_site\": "
    "\"osl\", \"circuit\": \"chi-osl-1\"}],"
    " \"routes\": [{\"src\": \"nyc\", \"dst\": \"osl\", \"via\": [\"chi\"]},"
    "             {\"src\": \"osl\", \"dst\": \"nyc\", \"via\": [\"chi\"]}],"
    " \"dedup\": {\"services\": [{\"name\": \"dupedog\", \"ports\": [7100]}]},"
    " \"endpoints\": [{\"name\": \"feature-store\", \"address\": \"10.2.0.5\", \"ports\": [8080]}]"
    "}";

#define WS (INT64_C(1764442380) * 1000000)

static struct recon_addr addr(const char *s)
{
    struct recon_addr a = {.family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, s, a.addr), 1);
    return a;
}

static struct recon_flow sock(const char *local, uint16_t lport, const char *remote, uint16_t rport,
                              enum recon_role role, uint64_t tx, uint64_t rx, const char *workflow)
{
    struct recon_flow f = {.source = RECON_FLOW_SOCKET,
                           .host = "h",
                           .user = "alice",
                           .program = "py",
                           .workflow = workflow,
                           .proto = 6,
                           .local = addr(local),
                           .remote = addr(remote),
                           .local_port = lport,
                           .remote_port = rport,
                           .role = role,
                           .tx_bytes = tx,
                           .rx_bytes = rx};
    return f;
}

static struct recon_flow nfs(enum recon_nfs_op op, uint64_t bytes)
{
    struct recon_flow f = {.source = RECON_FLOW_NFS,
                           .host = "h",
                           .user = "alice",
                           .program = "py",
                           .workflow = "wf-a",
                           .local = addr("10.1.0.2"),
                           .nfs_server = addr("10.2.0.50"),
                           .nfs_port = 2049,
                           .nfs_export = "/data",
                           .nfs_op = op,
                           .nfs_bytes = bytes};
    return f;
}

static const struct recon_dep *find(const struct recon_result *r, const char *wf,
                                    const char *endpoint)
{
    for (size_t i = 0; i < r->n_deps; i++)
        if (strcmp(r->deps[i].workflow, wf) == 0 && strcmp(r->deps[i].endpoint, endpoint) == 0)
            return &r->deps[i];
    return NULL;
}

static void expect(const struct recon_result *r, const struct cfg *cfg, const char *wf,
                   const char *endpoint, const char *kind, const char *local, const char *remote,
                   uint64_t out, uint64_t in, uint64_t conns)
{
    const struct recon_dep *d = find(r, wf, endpoint);
    if (!d)
        fail_msg("no dependency row for %s -> %s", wf, endpoint);
    assert_string_equal(recon_dep_kind_name(d->kind), kind);
    assert_string_equal(cfg->sites[d->local_site].name, local);
    assert_string_equal(cfg->sites[d->remote_site].name, remote);
    assert_int_equal(d->bytes_out, out);
    assert_int_equal(d->bytes_in, in);
    assert_int_equal(d->connections, conns);
}

static void test_deps_rows(void **state)
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
    struct recon_flow flows[] = {
        /* 1: both ends of one connection */
        sock("10.1.0.2", 40000, "10.2.0.5", 8080, RECON_ROLE_CLIENT, 1000, 5000, "wf-a"),
        sock("10.2.0.5", 8080, "10.1.0.2", 40000, RECON_ROLE_SERVER, 5200, 900, "srv"),
        /* 2: only the server end reported */
        sock("10.2.0.9", 22, "10.1.0.77", 51000, RECON_ROLE_SERVER, 300, 40, "sshd-wf"),
        /* 3: unknown role, one end, a routed pair (nyc -> osl via chi) */
        sock("10.1.0.3", 5555, "10.3.0.7", 9100, RECON_ROLE_UNKNOWN, 0, 777, "wf-a"),
        /* 4: on the transfer service's port: left out */
        sock("10.1.0.2", 41000, "10.2.0.50", 7100, RECON_ROLE_CLIENT, 123456, 0, "wf-a"),
        /* 5, 6: NFS read and write of one export */
        nfs(RECON_NFS_READ, 4096),
        nfs(RECON_NFS_WRITE, 100),
    };
    struct recon_transfer tr = {.service = "dupedog",
                                .requester = "bob",
                                .workflow = "wf-t",
                                .src = "10.2.0.50",
                                .dst = "nyc",
                                .bytes = 6000,
                                .start_us = WS,
                                .end_us = WS + 60 * INT64_C(1000000)};
    struct recon_input in = {.window_start_us = WS,
                             .flows = flows,
                             .n_flows = sizeof flows / sizeof flows[0],
                             .transfers = &tr,
                             .n_transfers = 1};
    struct recon_result res;
    char err[256];
    assert_int_equal(recon_run(cfg, &in, &res, err, sizeof err), 0);
    assert_int_equal(res.n_deps, 5);
    expect(&res, cfg, "wf-a", "feature-store", "service", "nyc", "chi", 1000, 5200, 1);
    expect(&res, cfg, "sshd-wf", "10.1.0.77", "peer", "chi", "nyc", 300, 40, 1);
    expect(&res, cfg, "wf-a", "10.3.0.7:9100", "peer", "nyc", "osl", 0, 777, 1);
    expect(&res, cfg, "wf-a", "10.2.0.50:/data", "nfs", "nyc", "chi", 100, 4096, 2);
    expect(&res, cfg, "wf-t", "dupedog 10.2.0.50", "transfer", "nyc", "chi", 0, 6000, 1);
    assert_null(find(&res, "wf-a", "10.2.0.50:7100"));
    /* the rollup says the same bytes per pair (the routed flow on both hops) */
    uint64_t nyc_chi = 0;
    for (size_t i = 0; i < res.n_rollup; i++)
        if (strcmp(cfg->sites[res.rollup[i].src_site].name, "nyc") == 0 &&
            strcmp(cfg->sites[res.rollup[i].dst_site].name, "chi") == 0)
            nyc_chi += res.rollup[i].bytes;
    assert_int_equal(nyc_chi, 1000 + 100 + 40); /* service out, NFS write, sshd in */
    recon_result_free(&res);
    cfg_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_deps_rows)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
