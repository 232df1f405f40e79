/* The agent's own report encoder (agentlib/report.c) against the real reconciler service:
 * - strings that are not UTF-8 (a comm, exe, cgroup path, user or workflow made of raw bytes)
 *   are cleaned by the agent, so the report is accepted whole (200, every flow stored), where
 *   the same bytes sent raw make the reconciler refuse the whole report (400);
 * - an NFS flow's "local" (the client address, agentlib/nfslocal.c) is stored in
 *   flow_records.local_addr and decides the client's site, so a host with only NFS traffic is
 *   attributed: `reconcile --once` puts its reads on chi -> nyc and its writes on nyc -> chi.
 *
 * Window W = 3 windows ago (60 s windows, past the 90 s grace). Config (fixture.h): nyc
 * 10.1/16, chi 10.2/16, one circuit nyc-chi-1 (cells both ways). Host nyc-nfs-1 has no socket
 * flow at all; its NFS client address is 10.1.0.7, the filer is chi's 10.2.0.50:2049:
 *   read  3,000,000 bytes by alice/python3/train-42 -> rollup chi -> nyc nfs 3,000,000
 *   write 1,250,000 bytes by bob/dd/ckpt            -> rollup nyc -> chi nfs 1,250,000
 * Host osl-nfs-9 sends an NFS read of 777 bytes without "local" and has no socket flows: no
 * site for its client, so nothing of it is attributed. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "fixture.h"
#include "flowset.h"
#include "harness.h"
#include "report.h"
#include "timeutil.h"

static struct fx F;

static int setup(void **state)
{
    (void)state;
    fx_setup(&F, "agentreport", "");
    fx_start(&F);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fx_stop(&F);
    return 0;
}

static char *encode(const char *host, const char *agent_id, int64_t ws, const struct flowset *fs)
{
    struct report_header h = {.host = host,
                              .agent_id = agent_id,
                              .seq = 1,
                              .window_start_us = ws,
                              .window_seconds = 60,
                              .k = 1000,
                              .flows_seen = fs->n};
    char err[256];
    char *json = report_json(&h, fs, err, sizeof(err));
    if (!json)
        fail_msg("report_json: %s", err);
    return json;
}

static struct flow_rec *nfs_flow(struct flowset *fs, const char *comm, const char *op,
                                 uint64_t bytes, const char *local_v4, const struct flow_meta *m)
{
    struct flow_rec *r = flowset_add(fs);
    assert_non_null(r);
    r->source = FLOW_SRC_NFS;
    snprintf(r->server, sizeof(r->server), "10.2.0.50:2049");
    snprintf(r->export_path, sizeof(r->export_path), "/data");
    snprintf(r->op, sizeof(r->op), "%s", op);
    r->bytes = bytes;
    r->ops = 1;
    r->owner.pid = 4242;
    snprintf(r->owner.comm, sizeof(r->owner.comm), "%s", comm);
    if (local_v4) {
        r->family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, local_v4, r->laddr), 1);
    }
    r->meta = m;
    return r;
}

static int post(const char *body, char **resp)
{
    return fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, body, strlen(body), resp);
}

/* Raw bytes in every owner string: the agent's report is accepted and stored whole. */
static void test_invalid_utf8_accepted(void **state)
{
    (void)state;
    int64_t ws = fx_window_ago(3, 60);
    struct flow_meta m;
    memset(&m, 0, sizeof(m));
    snprintf(m.user, sizeof(m.user), "us\xe9r");
    snprintf(m.exe, sizeof(m.exe), "/opt/\xff\xfe/bin");
    snprintf(m.workflow, sizeof(m.workflow), "wf\xc0\xaf");
    snprintf(m.cgroup, sizeof(m.cgroup), "/sys\x01tem.slice");
    struct flowset fs = {0};
    struct flow_rec *r = flowset_add(&fs);
    assert_non_null(r);
    r->source = FLOW_SRC_SOCKET;
    r->family = AF_INET;
    r->proto = IPPROTO_TCP;
    inet_pton(AF_INET, "10.1.0.2", r->laddr);
    inet_pton(AF_INET, "10.2.0.2", r->raddr);
    r->lport = 41522;
    r->rport = 5201;
    r->role = 1;
    r->tx_bytes = 1000;
    snprintf(r->owner.comm, sizeof(r->owner.comm),
             "\xff\xfe"
             "bad\x01name");
    r->meta = &m;
    nfs_flow(&fs,
             "\xfe"
             "cp",
             "read", 4096, "10.1.0.2", &m);

    /* The same strings sent as raw bytes (what the agent sent before the cleaning): refused
     * whole. This is what the cleaning prevents, so the test fails if the reconciler ever
     * stops checking UTF-8 as well as when the agent stops cleaning. */
    char *raw = NULL;
    if (asprintf(&raw,
                 "{\"version\":1,\"host\":\"h\",\"agent_id\":\"raw\",\"seq\":1,"
                 "\"window_start\":\"%s\",\"window_seconds\":60,\"flows\":[{\"source\":\"nfs\","
                 "\"server\":\"10.2.0.50:2049\",\"op\":\"read\",\"bytes\":1,\"program\":\"%s\"}]}",
                 fx_ts(ws),
                 "\xff\xfe"
                 "bad") < 0)
        fail();
    char *resp = NULL;
    assert_int_equal(post(raw, &resp), 400);
    free(resp);
    free(raw);

    char *json = encode("nyc-gpu-\xff", "agent-utf8", ws, &fs);
    int st = post(json, &resp);
    if (st != 200)
        fprintf(stderr, "POST -> %d %s\n", st, resp ? resp : "");
    assert_int_equal(st, 200);
    assert_non_null(strstr(resp, "{\"received\":2,\"stored\":2,"));
    free(resp);
    free(json);
    flowset_free(&fs);

    /* Stored with U+FFFD in place of each bad byte and control character. */
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_records WHERE agent_id = 'agent-utf8'"),
                     2);
    assert_string_equal(fx_row(&F, "SELECT program, user_name, workflow, host FROM flow_records"
                                   " WHERE agent_id = 'agent-utf8' AND source = 'socket'"),
                        "\xef\xbf\xbd\xef\xbf\xbd"
                        "bad\xef\xbf\xbdname|us\xef\xbf\xbdr|wf\xef\xbf\xbd\xef\xbf\xbd|"
                        "nyc-gpu-\xef\xbf\xbd");
    assert_string_equal(fx_row(&F, "SELECT program, local_addr, local_port IS NULL FROM "
                                   "flow_records WHERE agent_id = 'agent-utf8' AND source = 'nfs'"),
                        "\xef\xbf\xbd"
                        "cp|10.1.0.2|t");
}

static const char *rollup(const char *src, const char *dst, int64_t ws)
{
    char sql[512];
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(string_agg(source || ':' || workflow || ':' || user_name || ':' ||"
             " program || ':' || host || ':' || bytes, ',' ORDER BY workflow), '-')"
             " FROM attribution_rollup WHERE src_site = '%s' AND dst_site = '%s'"
             " AND window_start = '%s'",
             src, dst, fx_ts(ws));
    return fx_row(&F, sql);
}

/* A host with only NFS traffic is placed by its NFS flows' client address. */
static void test_nfs_only_host_attributed(void **state)
{
    (void)state;
    int64_t ws = fx_window_ago(4, 60);
    struct flow_meta alice, bob, carol;
    memset(&alice, 0, sizeof(alice));
    memset(&bob, 0, sizeof(bob));
    memset(&carol, 0, sizeof(carol));
    snprintf(alice.user, sizeof(alice.user), "alice");
    snprintf(alice.workflow, sizeof(alice.workflow), "train-42");
    snprintf(bob.user, sizeof(bob.user), "bob");
    snprintf(bob.workflow, sizeof(bob.workflow), "ckpt");
    snprintf(carol.user, sizeof(carol.user), "carol");
    snprintf(carol.workflow, sizeof(carol.workflow), "lost");
    struct flowset fs = {0};
    nfs_flow(&fs, "python3", "read", 3000000, "10.1.0.7", &alice);
    nfs_flow(&fs, "dd", "write", 1250000, "10.1.0.7", &bob);
    char *json = encode("nyc-nfs-1", "agent-nfs-only", ws, &fs);
    assert_non_null(strstr(json, "\"local\":\"10.1.0.7\""));
    char *resp = NULL;
    assert_int_equal(post(json, &resp), 200);
    free(resp);
    free(json);
    flowset_clear(&fs);
    nfs_flow(&fs, "cat", "read", 777, NULL, &carol);
    json = encode("osl-nfs-9", "agent-nfs-nolocal", ws, &fs);
    assert_null(strstr(json, "\"local\""));
    assert_int_equal(post(json, &resp), 200);
    free(resp);
    free(json);
    flowset_free(&fs);

    char sql[256];
    snprintf(sql, sizeof(sql),
             "SELECT string_agg(host || ':' || coalesce(host(local_addr), '-'), ',' ORDER BY host)"
             " FROM flow_records WHERE source = 'nfs' AND window_start = '%s'",
             fx_ts(ws));
    assert_string_equal(fx_row(&F, sql), "nyc-nfs-1:10.1.0.7,nyc-nfs-1:10.1.0.7,osl-nfs-9:-");

    char *out = NULL;
    int rc = fx_run(&F, "reconcile --once", &out);
    fprintf(stderr, "%s", out);
    free(out);
    assert_int_equal(rc, 0);
    /* reads move server site -> client site, writes client -> server; carol's 777 bytes nowhere */
    assert_string_equal(rollup("chi", "nyc", ws), "nfs:train-42:alice:python3:nyc-nfs-1:3000000");
    assert_string_equal(rollup("nyc", "chi", ws), "nfs:ckpt:bob:dd:nyc-nfs-1:1250000");
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM attribution_rollup WHERE host = 'osl-nfs-9' OR bytes = 777");
    assert_int_equal(fx_num(&F, sql), 0);
    snprintf(sql, sizeof(sql),
             "SELECT nfs_bytes FROM heatmap_cells WHERE src_site = 'chi' AND dst_site = 'nyc'"
             " AND window_start = '%s'",
             fx_ts(ws));
    assert_int_equal(fx_num(&F, sql), 3000000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_utf8_accepted),
        cmocka_unit_test(test_nfs_only_host_attributed),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
