/* Attach modes and the agent's own reporting of them: auto probing picks what this kernel loads
 * (tp_btf where sock_send_length exists) and says so in the log and /metrics; --attach forces a
 * mode and fails clearly where the kernel cannot load it; bad flags exit 2; without root or
 * CAP_BPF+CAP_PERFMON the agent says what it needs. */
#include <setjmp.h>
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
#include "harness.h"
#include "httpc.h"

static const char *g_dir;

static int run_agent(char **extra, int nextra, const char *log, const char *out)
{
    char spool[512];
    snprintf(spool, sizeof(spool), "%s/spool", g_dir);
    char *argv[32] = {
        (char *)th_bin("wanledger-agent"), "--stdout", "--once", "--window", "1", "--spool", spool};
    int n = 7;
    for (int i = 0; i < nextra; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t p = atl_spawn(argv, out, log);
    return atl_wait_exit(p, 20000);
}

static void test_auto_picks_tp_btf_and_metrics_say_so(void **state)
{
    (void)state;
    char log[512], out[512], spool[512], addr[64], url[128];
    int port = th_free_port();
    snprintf(log, sizeof(log), "%s/auto.log", g_dir);
    snprintf(out, sizeof(out), "%s/auto.jsonl", g_dir);
    snprintf(spool, sizeof(spool), "%s/spool-auto", g_dir);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    snprintf(url, sizeof(url), "http://%s/metrics", addr);
    char *argv[] = {(char *)th_bin("wanledger-agent"),
                    "--stdout",
                    "--window",
                    "1",
                    "--attach",
                    "auto",
                    "--metrics",
                    addr,
                    "--spool",
                    spool,
                    NULL};
    pid_t p = atl_spawn(argv, out, log);
    assert_int_equal(atl_wait_contains(log, "reporting to", 15000), 0);
    assert_int_equal(atl_wait_contains(log, "attach mode tp_btf (probed)", 0), 0);
    assert_int_equal(atl_wait_contains(out, "\"seq\":3", 10000), 0);
    struct httpc_response resp = {0};
    char err[256];
    assert_int_equal(httpc_get(url, NULL, 5000, &resp, err, sizeof(err)), 0);
    assert_int_equal(resp.status, 200);
    assert_non_null(resp.body);
    assert_non_null(strstr(resp.body, "wanledger_agent_attach_mode{mode=\"tp_btf\"} 1"));
    assert_non_null(strstr(resp.body, "wanledger_agent_drain_seconds{quantile=\"0.99\"}"));
    const char *w = strstr(resp.body, "\nwanledger_agent_windows_total ");
    assert_non_null(w);
    assert_true(atoi(w + strlen("\nwanledger_agent_windows_total ")) >= 2);
    /* the exposition is what Prometheus' own linter accepts (HELP and TYPE for every metric) */
    char prom[600];
    snprintf(prom, sizeof(prom), "%s/metrics.txt", g_dir);
    FILE *pf = fopen(prom, "w");
    assert_non_null(pf);
    fputs(resp.body, pf);
    fclose(pf);
    th_require(system("command -v promtool >/dev/null") == 0,
               "promtool is needed (package prometheus, scripts/install-deps.sh)");
    assert_int_equal(th_sh("promtool check metrics < %s", prom), 0);
    httpc_response_free(&resp);
    assert_int_equal(th_stop(p, 10000), 0);
}

static void test_forced_modes(void **state)
{
    (void)state;
    static const char *modes[] = {"tp_btf", "fentry", "kprobe"};
    for (int i = 0; i < 3; i++) {
        char log[512], out[512], need[128];
        snprintf(log, sizeof(log), "%s/%s.log", g_dir, modes[i]);
        snprintf(out, sizeof(out), "%s/%s.jsonl", g_dir, modes[i]);
        char *extra[] = {"--attach", (char *)modes[i]};
        int st = run_agent(extra, 2, log, out);
        assert_true(WIFEXITED(st));
        if (WEXITSTATUS(st) == 0) {
            /* this kernel loads the mode: it must say so and report */
            snprintf(need, sizeof(need), "attach mode %s (--attach)", modes[i]);
            assert_int_equal(atl_wait_contains(log, need, 0), 0);
            assert_int_equal(atl_wait_contains(out, "\"seq\":", 0), 0);
            printf("%s: loads here\n", modes[i]);
        } else {
            assert_int_equal(WEXITSTATUS(st), 1);
            snprintf(need, sizeof(need), "cannot load the socket probe: %s:", modes[i]);
            assert_int_equal(atl_wait_contains(log, need, 0), 0);
            printf("%s: refused here, clearly\n", modes[i]);
        }
    }
    /* the kernel these tests run on has sock_send_length: tp_btf must have loaded */
    char log0[512];
    snprintf(log0, sizeof(log0), "%s/tp_btf.log", g_dir);
    assert_int_equal(atl_wait_contains(log0, "attach mode tp_btf (--attach)", 0), 0);
}

static void test_bad_flags_and_no_privilege(void **state)
{
    (void)state;
    char log[512], out[512];
    snprintf(log, sizeof(log), "%s/bad.log", g_dir);
    snprintf(out, sizeof(out), "%s/bad.out", g_dir);
    char *extra[] = {"--attach", "uprobe"};
    int st = run_agent(extra, 2, log, out);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 2);
    assert_int_equal(atl_wait_contains(log, "--attach: expected tp_btf, fentry, kprobe or auto", 0),
                     0);

    snprintf(log, sizeof(log), "%s/nopriv.log", g_dir);
    st = th_sh("setpriv --reuid=65534 --regid=65534 --clear-groups %s --stdout --once "
               "--spool %s/np > /dev/null 2> %s",
               th_bin("wanledger-agent"), g_dir, log);
    assert_int_equal(st, 1);
    assert_int_equal(atl_wait_contains(log, "needs root or CAP_BPF+CAP_PERFMON", 0), 0);
}

static int setup(void **state)
{
    (void)state;
    th_require_root();
    g_dir = th_tmpdir("agent-attach");
    chmod(g_dir, 0777);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_picks_tp_btf_and_metrics_say_so),
        cmocka_unit_test(test_forced_modes),
        cmocka_unit_test(test_bad_flags_and_no_privilege),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
