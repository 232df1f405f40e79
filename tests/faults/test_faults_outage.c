/* The reconciler down for several windows while a real agent counts real traffic: nothing lost,
 * nothing doubled. Namespaces joined by veth; wanledger-agent (1 s windows, --netns) reports to
 * the real `wanledger reconcile` (window_seconds 1) on its real PostgreSQL; wla_traffic makes 40
 * TCP connections and UDP over 16 s and counts its own bytes. The reconciler is SIGKILLed 4 s in
 * and started again 6 s later: the agent spools the reports of those windows and delivers them
 * once it is back. Then flow_records hold, flow for flow, exactly the bytes the program counted,
 * flow_reports hold seqs 1..N once each (N = the agent's last seq) and agent_gaps is empty.
 * Second case, the control for the gap records: the same outage with a spool bound of 4 KiB, so
 * the agent's spool must drop reports; the reconciler then records the missing seqs in agent_gaps
 * with the spool drops the agent counted (its last report's "spool": {"dropped_reports"}). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_testlib.h"
#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

#define NS_A "wlf-out-a"
#define NS_B "wlf-out-b"
#define IP_A "10.204.0.1"
#define IP_B "10.204.0.2"

static struct fx F;

struct run {
    char truth[512], spool[512];
    long long last_seq;
};

static void outage_run(const char *tag, const char *agent_id, const char *spool_max,
                       struct run *out)
{
    th_require_root();
    assert_int_equal(atl_netns_pair(NS_A, NS_B, IP_A, IP_B), 0);
    const char *dir = th_tmpdir(tag);
    char tokf[600], alog[600], srv_log[600], truth_s[600], url[64];
    snprintf(tokf, sizeof(tokf), "%s/agent.token", dir);
    snprintf(alog, sizeof(alog), "%s/agent.log", dir);
    snprintf(srv_log, sizeof(srv_log), "%s/server.log", dir);
    snprintf(truth_s, sizeof(truth_s), "%s/server.txt", dir);
    snprintf(out->truth, sizeof(out->truth), "%s/client.txt", dir);
    snprintf(out->spool, sizeof(out->spool), "%s/spool", dir);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", F.port);
    FILE *f = fopen(tokf, "w");
    assert_non_null(f);
    fputs(FX_TOKEN_AGENT "\n", f);
    fclose(f);
    chmod(tokf, 0600);

    pid_t agent = atl_agent_spawn(alog, alog, "--reconciler", url, "--token-file", tokf, "--window",
                                  "1", "--k", "100000", "--netns", "/run/netns/" NS_A, "--spool",
                                  out->spool, "--spool-max-bytes", spool_max, "--agent-id",
                                  agent_id, "--host", agent_id, NULL);
    assert_true(agent > 0);
    const char *traffic = atl_bin("wla_traffic");
    char *argv_s[] = {"ip",   "netns", "exec",  NS_B, (char *)traffic, "server", IP_B,
                      "5201", "5202",  truth_s, NULL};
    pid_t ps = atl_spawn(argv_s, srv_log, srv_log);
    assert_int_equal(atl_wait_contains(srv_log, "ready", 10000), 0);
    char *argv_c[] = {"ip",   "netns", "exec",  NS_A, (char *)traffic, "client", IP_B, "5201",
                      "5202", "40",    "16000", IP_A, out->truth,      NULL};
    pid_t pc = atl_spawn(argv_c, NULL, NULL);
    sleep(4);
    assert_int_equal(kill(F.pid, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(F.pid, &st, 0), F.pid);
    F.pid = 0;
    sleep(6);
    fx_start(&F);
    st = atl_wait_exit(pc, 60000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    usleep(500000);
    st = th_stop(ps, 5000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    sleep(2);
    assert_int_equal(th_stop(agent, 15000), 0); /* reports the partial window, delivers the rest */
    char seqf[600];
    snprintf(seqf, sizeof(seqf), "%s/seq", out->spool);
    f = fopen(seqf, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%lld", &out->last_seq), 1);
    fclose(f);
    assert_int_equal(atl_wait_contains(alog, "retrying with backoff", 0), 0); /* it was down */
}

static void test_outage_loses_nothing(void **state)
{
    (void)state;
    struct run r;
    outage_run("faults-outage", "out-a", "67108864", &r);
    char *sql = fx_fmt("SELECT count(*) || '|' || count(DISTINCT seq) || '|' || min(seq) || '|' ||"
                       " max(seq) FROM flow_reports WHERE agent_id = 'out-a'");
    char want[96];
    snprintf(want, sizeof(want), "%lld|%lld|1|%lld", r.last_seq, r.last_seq, r.last_seq);
    assert_string_equal(fx_row(&F, sql), want);
    free(sql);
    /* flow for flow: the program's own counts against the stored records */
    FILE *f = fopen(r.truth, "r");
    assert_non_null(f);
    char proto[8], l[64], rm[64];
    unsigned long long tx, rx, ttx = 0, trx = 0;
    int flows = 0;
    while (fscanf(f, "%7s %63s %63s %llu %llu", proto, l, rm, &tx, &rx) == 5) {
        char *lp = strrchr(l, ':'), *rp = strrchr(rm, ':');
        assert_non_null(lp);
        assert_non_null(rp);
        *lp++ = 0;
        *rp++ = 0;
        char *q = fx_fmt("SELECT coalesce(sum(tx_bytes), 0) || '|' || coalesce(sum(rx_bytes), 0)"
                         " FROM flow_records WHERE agent_id = 'out-a' AND proto = '%s' AND"
                         " host(local_addr) = '%s' AND local_port = %s AND host(remote_addr) ="
                         " '%s' AND remote_port = %s",
                         proto, l, lp, rm, rp);
        char exp[64];
        snprintf(exp, sizeof(exp), "%llu|%llu", tx, rx);
        const char *got = fx_row(&F, q);
        if (strcmp(got, exp) != 0)
            fail_msg("flow %s %s:%s %s:%s: program counted %s, stored %s", proto, l, lp, rm, rp,
                     exp, got);
        free(q);
        ttx += tx;
        trx += rx;
        flows++;
    }
    fclose(f);
    char totals[64];
    snprintf(totals, sizeof(totals), "%llu|%llu", ttx, trx);
    assert_string_equal(fx_row(&F, "SELECT sum(tx_bytes) || '|' || sum(rx_bytes) FROM"
                                   " flow_records WHERE agent_id = 'out-a'"),
                        totals);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM agent_gaps WHERE agent_id = 'out-a'"), 0);
    printf("reconciler down 6 s (6 windows): %d flows, %llu + %llu bytes, reports 1..%lld, all "
           "stored once\n",
           flows, ttx, trx, r.last_seq);
    assert_true(flows >= 30);
}

static void test_spool_drops_recorded_as_gaps(void **state)
{
    (void)state;
    struct run r;
    outage_run("faults-outage-drop", "out-b", "4096", &r);
    long long stored = fx_num(&F, "SELECT count(*) FROM flow_reports WHERE agent_id = 'out-b'");
    long long missing = fx_num(&F, "SELECT coalesce(sum(seq_to - seq_from + 1), 0) FROM"
                                   " agent_gaps WHERE agent_id = 'out-b' AND reason ="
                                   " 'seq_missing'");
    long long dropped = fx_num(&F, "SELECT coalesce(sum(spool_dropped_reports), 0) FROM"
                                   " agent_gaps WHERE agent_id = 'out-b'");
    char *q = fx_fmt("SELECT spool_dropped_reports FROM flow_reports WHERE agent_id = 'out-b'"
                     " AND seq = %lld",
                     r.last_seq);
    long long agent_says = fx_num(&F, q);
    free(q);
    printf("4 KiB spool: %lld of %lld reports stored, %lld missing in agent_gaps, %lld spool "
           "drops recorded with them, the agent counted %lld\n",
           stored, r.last_seq, missing, dropped, agent_says);
    assert_true(missing > 0);
    assert_int_equal(stored + missing, r.last_seq);
    assert_int_equal(dropped, agent_says);
    assert_int_equal(missing, agent_says);
}

int main(void)
{
    fx_setup(&F, "faults-outage-recon", " \"window_seconds\": 1, \"tick_seconds\": 3600,");
    fx_start(&F);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outage_loses_nothing),
        cmocka_unit_test(test_spool_drops_recorded_as_gaps),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
