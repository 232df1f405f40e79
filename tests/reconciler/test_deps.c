/* The dependency map end to end (docs/design.md "Dependency map"), with a real agent in network
 * namespaces, the real reconciler on a real PostgreSQL, and iperf3 as the workload.
 *
 * Sites: ams 10.4/16 (the workflow's host, namespace wld-ws), nyc 10.1/16 (the filer), chi
 * 10.2/16 (the service, namespace wld-svc), osl 10.3/16 (a peer, namespace wld-peer). Circuits
 * ams-nyc, nyc-chi, chi-osl; routes ams<->chi via nyc and ams<->osl via nyc, chi (transit).
 * The workflow mover-1 on ams sends 2 MiB to the configured endpoint "feature-store"
 * (10.2.0.5:8080, iperf3 -n 2M) and pulls 1 MiB from the peer 10.3.0.7:9100 (iperf3 -R); its
 * NFS reads of nyc's 10.1.0.50:/data (5,000,000 bytes) arrive as the agent's encoder writes NFS
 * records (this kernel has no NFS client; the NFS VM test covers the probe).
 *
 * Checked: `wanledger deps --workflow mover-1 --json` lists the three endpoints with bytes each
 * way equal to what the agents reported (summed from flow_records, not from the rollup);
 * `--move-to nyc` gives per-circuit-direction changes equal to a hand computation from those
 * sums (including the transit hops through chi); GET /api/v1/deps returns the same document and
 * /heatmap/deps draws it. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "fixture.h"
#include "flowset.h"
#include "harness.h"
#include "report.h"
#include "timeutil.h"

#define WIN 5
static struct fx F;

static const char CFG_FMT[] =
    "{\"window_seconds\": %d, \"grace_seconds\": 1, \"tick_seconds\": 1,\n"
    " \"database\": \"%s\", \"listen\": \"127.0.0.1:%d\", \"tokens_file\": \"tokens.json\",\n"
    " \"sites\": [{\"name\": \"ams\", \"prefixes\": [\"10.4.0.0/16\"]},\n"
    "           {\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
    "           {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},\n"
    "           {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],\n"
    " \"devices\": [{\"name\": \"nyc-r\", \"site\": \"nyc\", \"gnmi\": {}},\n"
    "             {\"name\": \"chi-r\", \"site\": \"chi\", \"gnmi\": {}}],\n"
    " \"links\": [{\"device\": \"nyc-r\", \"interface\": \"to-ams\", \"site\": \"nyc\","
    " \"peer_site\": \"ams\", \"circuit\": \"ams-nyc-1\"},\n"
    "   {\"device\": \"nyc-r\", \"interface\": \"to-chi\", \"site\": \"nyc\", \"peer_site\": "
    "\"chi\", \"circuit\": \"nyc-chi-1\"},\n"
    "   {\"device\": \"chi-r\", \"interface\": \"to-osl\", \"site\": \"chi\", \"peer_site\": "
    "\"osl\", \"circuit\": \"chi-osl-1\"}],\n"
    " \"routes\": [{\"src\": \"ams\", \"dst\": \"chi\", \"via\": [\"nyc\"]},\n"
    "   {\"src\": \"chi\", \"dst\": \"ams\", \"via\": [\"nyc\"]},\n"
    "   {\"src\": \"ams\", \"dst\": \"osl\", \"via\": [\"nyc\", \"chi\"]},\n"
    "   {\"src\": \"osl\", \"dst\": \"ams\", \"via\": [\"chi\", \"nyc\"]},\n"
    "   {\"src\": \"nyc\", \"dst\": \"osl\", \"via\": [\"chi\"]},\n"
    "   {\"src\": \"osl\", \"dst\": \"nyc\", \"via\": [\"chi\"]}],\n"
    " \"endpoints\": [{\"name\": \"feature-store\", \"address\": \"10.2.0.5\", \"ports\": "
    "[8080]}]\n"
    "}\n";

static void del_ns(void)
{
    th_sh("for n in wld-ws wld-svc wld-peer; do ip netns pids $n 2>/dev/null | xargs -r kill "
          "2>/dev/null; ip netns del $n 2>/dev/null; done; true");
}

/* ws(10.4.0.2) <-> svc(10.2.0.5) and ws(10.4.0.3) <-> peer(10.3.0.7), point-to-point /32s. */
static void topology(void)
{
    del_ns();
    atexit(del_ns);
    const char *steps[] = {
        "ip netns add wld-ws && ip netns add wld-svc && ip netns add wld-peer",
        "for n in wld-ws wld-svc wld-peer; do ip -n $n link set lo up; done",
        "ip link add wldws-s netns wld-ws type veth peer name wldsvc netns wld-svc",
        "ip link add wldws-p netns wld-ws type veth peer name wldpeer netns wld-peer",
        "ip -n wld-ws addr add 10.4.0.2/32 dev wldws-s && ip -n wld-ws link set wldws-s up",
        "ip -n wld-ws addr add 10.4.0.3/32 dev wldws-p && ip -n wld-ws link set wldws-p up",
        "ip -n wld-svc addr add 10.2.0.5/32 dev wldsvc && ip -n wld-svc link set wldsvc up",
        "ip -n wld-peer addr add 10.3.0.7/32 dev wldpeer && ip -n wld-peer link set wldpeer up",
        "ip -n wld-ws route add 10.2.0.5/32 dev wldws-s src 10.4.0.2",
        "ip -n wld-ws route add 10.3.0.7/32 dev wldws-p src 10.4.0.3",
        "ip -n wld-svc route add 10.4.0.2/32 dev wldsvc",
        "ip -n wld-peer route add 10.4.0.3/32 dev wldpeer",
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (th_sh("%s", steps[i]) != 0)
            fail_msg("topology step failed: %s", steps[i]);
}

static int setup(void **state)
{
    (void)state;
    th_require_root();
    th_require(th_sh("command -v iperf3 >/dev/null") == 0, "iperf3 (Debian iperf3) is needed");
    fx_setup(&F, "deps", "");
    /* replace the fixture's configuration with this test's four sites */
    char *cfg = fx_fmt(CFG_FMT, WIN, F.conninfo, F.port);
    FILE *fp = fopen(F.cfg_path, "w");
    assert_non_null(fp);
    fputs(cfg, fp);
    fclose(fp);
    free(cfg);
    assert_int_equal(fx_run(&F, "migrate", NULL), 0);
    topology();
    fx_start(&F);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fx_stop(&F);
    del_ns();
    return 0;
}

/* The NFS reads of the workflow's host, as the agent's encoder writes them (one window). */
static void post_nfs(int64_t ws, uint64_t bytes)
{
    struct flow_meta m;
    memset(&m, 0, sizeof m);
    snprintf(m.user, sizeof m.user, "root");
    snprintf(m.workflow, sizeof m.workflow, "mover-1");
    struct flowset fs = {0};
    struct flow_rec *r = flowset_add(&fs);
    assert_non_null(r);
    r->source = FLOW_SRC_NFS;
    snprintf(r->server, sizeof r->server, "10.1.0.50:2049");
    snprintf(r->export_path, sizeof r->export_path, "/data");
    snprintf(r->op, sizeof r->op, "read");
    r->bytes = bytes;
    r->ops = 40;
    r->owner.pid = 4242;
    snprintf(r->owner.comm, sizeof r->owner.comm, "reader");
    r->family = AF_INET;
    assert_int_equal(inet_pton(AF_INET, "10.4.0.2", r->laddr), 1);
    r->meta = &m;
    struct report_header h = {.host = "ams-ws-1",
                              .agent_id = "ams-ws-1-nfs",
                              .seq = 1,
                              .window_start_us = ws,
                              .window_seconds = WIN,
                              .k = 1000,
                              .flows_seen = 1};
    char err[256];
    char *json = report_json(&h, &fs, err, sizeof err);
    assert_non_null(json);
    assert_int_equal(
        fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, json, strlen(json), NULL),
        200);
    free(json);
    flowset_free(&fs);
}

/* Sums of what the agent reported for the workflow's flows to one remote endpoint. */
static void reported(const char *addr, int port, uint64_t *tx, uint64_t *rx)
{
    char *sql = fx_fmt("SELECT coalesce(sum(tx_bytes), 0) FROM flow_records WHERE "
                       "workflow = 'mover-1' AND remote_addr = '%s' AND remote_port = %d",
                       addr, port);
    *tx = (uint64_t)fx_num(&F, sql);
    free(sql);
    sql = fx_fmt("SELECT coalesce(sum(rx_bytes), 0) FROM flow_records WHERE "
                 "workflow = 'mover-1' AND remote_addr = '%s' AND remote_port = %d",
                 addr, port);
    *rx = (uint64_t)fx_num(&F, sql);
    free(sql);
}

/* end.<sum>.bytes of an iperf3 -J result file in the test directory. */
static uint64_t iperf_bytes(const char *file, const char *sum)
{
    char path[700];
    snprintf(path, sizeof path, "%s/%s", F.dir, file);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf);
    assert_non_null(j);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "end"), sum), "bytes");
    assert_true(cJSON_IsNumber(b));
    uint64_t v = (uint64_t)b->valuedouble;
    cJSON_Delete(j);
    return v;
}

static const cJSON *find_ep(const cJSON *doc, const char *endpoint)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "endpoints"))
    {
        if (strcmp(cJSON_GetObjectItemCaseSensitive(e, "endpoint")->valuestring, endpoint) == 0)
            return e;
    }
    fail_msg("endpoint %s not listed", endpoint);
    return NULL;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        fail_msg("%s is not a number", k);
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double delta(const cJSON *doc, const char *src, const char *dst)
{
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(doc, "circuits"))
    {
        if (!strcmp(str(c, "src_site"), src) && !strcmp(str(c, "dst_site"), dst))
            return num(c, "delta_bytes");
    }
    return 0; /* not crossed before or after */
}

static void test_deps_end_to_end(void **state)
{
    (void)state;
    char spool[600], tok[600], url[64], alog[600];
    snprintf(spool, sizeof spool, "%s/spool", F.dir);
    snprintf(tok, sizeof tok, "%s/agent.token", F.dir);
    snprintf(alog, sizeof alog, "%s/agent.log", F.dir);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", F.port);
    FILE *fp = fopen(tok, "w");
    assert_non_null(fp);
    fputs(FX_TOKEN_AGENT "\n", fp);
    fclose(fp);
    assert_int_equal(chmod(tok, 0600), 0); /* the agent refuses a token others can read */
    char win[8];
    snprintf(win, sizeof win, "%d", WIN);
    char *argv[] = {(char *)th_bin("wanledger-agent"),
                    "--reconciler",
                    url,
                    "--token-file",
                    tok,
                    "--window",
                    win,
                    "--netns",
                    "/run/netns/wld-ws",
                    "--spool",
                    spool,
                    "--host",
                    "ams-ws-1",
                    NULL};
    int64_t t_start = tm_window_start(tm_now_us(), WIN);
    pid_t agent = th_spawn(argv, alog);
    assert_true(agent > 0);
    for (int i = 0; i < 100 && th_sh("grep -q 'reporting to' '%s'", alog) != 0; i++)
        usleep(100000);
    assert_int_equal(
        th_sh("ip netns exec wld-svc iperf3 -s -1 -p 8080 -D --logfile %s/s1.log", F.dir), 0);
    assert_int_equal(
        th_sh("ip netns exec wld-peer iperf3 -s -1 -p 9100 -D --logfile %s/s2.log", F.dir), 0);
    usleep(300000);
    /* both run 6 s (over a window edge), so the agent reads their owner while they live */
    assert_int_equal(th_sh("ip netns exec wld-ws env WANLEDGER_WORKFLOW=mover-1 iperf3 -J -c "
                           "10.3.0.7 -p 9100 -t 6 -b 8M -R > %s/c2.json & "
                           "ip netns exec wld-ws env WANLEDGER_WORKFLOW=mover-1 iperf3 -J -c "
                           "10.2.0.5 -p 8080 -t 6 -b 20M > %s/c1.json; wait",
                           F.dir, F.dir),
                     0);
    post_nfs(t_start, 5000000);
    sleep(1);
    assert_int_equal(th_stop(agent, 15000) & 0x7f, 0); /* SIGTERM reports the partial window */
    int64_t t_end = tm_window_start(tm_now_us(), WIN) + WIN * TM_USEC_PER_SEC;
    /* every window done and past its grace, then reconciled once more by --once */
    while (tm_now_us() < t_end + 1500000)
        usleep(100000);
    /* the running reconciler's loop has seen them too; --once makes sure in the foreground */
    assert_int_equal(fx_run(&F, "reconcile --once", NULL), 0);

    uint64_t svc_tx, svc_rx, peer_tx, peer_rx;
    reported("10.2.0.5", 8080, &svc_tx, &svc_rx);
    reported("10.3.0.7", 9100, &peer_tx, &peer_rx);
    fprintf(stderr,
            "reported: reports %lld, records %lld; svc tx %llu rx %llu, peer tx %llu rx %llu\n",
            fx_num(&F, "SELECT count(*) FROM flow_reports"),
            fx_num(&F, "SELECT count(*) FROM flow_records"), (unsigned long long)svc_tx,
            (unsigned long long)svc_rx, (unsigned long long)peer_tx, (unsigned long long)peer_rx);
    /* the agent saw at least the payload iperf3 says it moved (its control traffic comes on top) */
    assert_true(svc_tx >= iperf_bytes("c1.json", "sum_sent") && svc_tx > 0);
    assert_true(peer_rx >= iperf_bytes("c2.json", "sum_received") && peer_rx > 0);
    const uint64_t nfs = 5000000;

    char *args = fx_fmt("deps --workflow mover-1 --from %s --to %s --json",
                        fx_ts(t_start - WIN * TM_USEC_PER_SEC), fx_ts(t_end));
    char *out = NULL;
    assert_int_equal(fx_run(&F, args, &out), 0);
    free(args);
    cJSON *doc = cJSON_Parse(out);
    if (!doc)
        fail_msg("deps --json did not print JSON: %s", out);
    free(out);
    const cJSON *e = find_ep(doc, "feature-store");
    assert_string_equal(str(e, "kind"), "service");
    assert_string_equal(str(e, "local_site"), "ams");
    assert_string_equal(str(e, "remote_site"), "chi");
    assert_int_equal((uint64_t)num(e, "bytes_out"), svc_tx);
    assert_int_equal((uint64_t)num(e, "bytes_in"), svc_rx);
    assert_true(num(e, "connections") >= 2); /* iperf3's control and data connections */
    e = find_ep(doc, "10.3.0.7:9100");
    assert_string_equal(str(e, "kind"), "peer");
    assert_string_equal(str(e, "remote_site"), "osl");
    assert_int_equal((uint64_t)num(e, "bytes_out"), peer_tx);
    assert_int_equal((uint64_t)num(e, "bytes_in"), peer_rx);
    e = find_ep(doc, "10.1.0.50:/data");
    assert_string_equal(str(e, "kind"), "nfs");
    assert_string_equal(str(e, "remote_site"), "nyc");
    assert_int_equal((uint64_t)num(e, "bytes_in"), nfs);
    assert_int_equal((uint64_t)num(e, "bytes_out"), 0);
    assert_int_equal((uint64_t)num(doc, "total_bytes"), svc_tx + svc_rx + peer_tx + peer_rx + nfs);
    cJSON_Delete(doc);

    /* moving it to nyc, by hand: ams's circuits lose everything, nyc->chi and chi->osl keep
     * the service's and peer's bytes (they now start at nyc), the NFS read stays inside nyc */
    args = fx_fmt("deps --workflow mover-1 --from %s --to %s --move-to nyc --json",
                  fx_ts(t_start - WIN * TM_USEC_PER_SEC), fx_ts(t_end));
    assert_int_equal(fx_run(&F, args, &out), 0);
    free(args);
    doc = cJSON_Parse(out);
    assert_non_null(doc);
    free(out);
    assert_true(delta(doc, "ams", "nyc") == -(double)(svc_tx + peer_tx));
    assert_true(delta(doc, "nyc", "ams") == -(double)(svc_rx + peer_rx + nfs));
    assert_true(delta(doc, "nyc", "chi") == 0);
    assert_true(delta(doc, "chi", "nyc") == 0);
    assert_true(delta(doc, "chi", "osl") == 0);
    assert_true(delta(doc, "osl", "chi") == 0);
    const cJSON *c;
    int n_circuits = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(doc, "circuits"))
    {
        n_circuits++;
        if (!strcmp(str(c, "src_site"), "chi") && !strcmp(str(c, "dst_site"), "osl")) {
            assert_int_equal((uint64_t)num(c, "bytes_now"), peer_tx); /* transit */
            assert_int_equal((uint64_t)num(c, "bytes_moved"), peer_tx);
        }
    }
    assert_int_equal(n_circuits, 6);
    /* the Sankey's links out of the owner add up to the total */
    const cJSON *sk = cJSON_GetObjectItemCaseSensitive(doc, "sankey");
    double from_owner = 0;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(sk, "links"))
    {
        if (num(c, "source") == 0)
            from_owner += num(c, "bytes");
    }
    assert_true(from_owner == num(doc, "total_bytes"));
    cJSON_Delete(doc);

    /* the same over HTTP, and the page */
    char *path = fx_fmt("/api/v1/deps?workflow=mover-1&from=%s&to=%s",
                        fx_ts(t_start - WIN * TM_USEC_PER_SEC), fx_ts(t_end));
    char *resp = NULL;
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    doc = cJSON_Parse(strstr(resp, "\r\n\r\n") ? strstr(resp, "\r\n\r\n") + 4 : resp);
    if (!doc)
        doc = cJSON_Parse(resp);
    assert_non_null(doc);
    assert_int_equal((uint64_t)num(find_ep(doc, "feature-store"), "bytes_out"), svc_tx);
    cJSON_Delete(doc);
    free(resp);
    free(path);
    assert_int_equal(fx_http(&F, "GET", "/api/v1/deps?workflow=mover-1&program=x", FX_TOKEN_READER,
                             NULL, NULL, 0, NULL),
                     400);
    path = fx_fmt("/heatmap/deps?workflow=mover-1&from=%s&to=%s&move_to=nyc",
                  fx_ts(t_start - WIN * TM_USEC_PER_SEC), fx_ts(t_end));
    assert_int_equal(fx_http(&F, "GET", path, FX_TOKEN_READER, NULL, NULL, 0, &resp), 200);
    assert_non_null(strstr(resp, "<svg class=\"sankey\""));
    assert_non_null(strstr(resp, "feature-store"));
    assert_non_null(strstr(resp, "data-src=\"nyc\" data-dst=\"ams\""));
    free(resp);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_deps_end_to_end, setup, teardown)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
