/* Spool: the reconciler (a recording stand-in, wla_receiver) is stopped for 3+ windows and
 * restarted; every report then arrives, in seq order, exactly once: the received seqs are
 * 1, 2, ..., N with N the last seq the agent recorded, and the agent logged the reports it had to
 * keep while the receiver was down. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_testlib.h"
#include "harness.h"

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    int n = 0, c;
    if (!f)
        return 0;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static int wait_lines(const char *path, int n, int timeout_ms)
{
    for (int waited = 0; waited <= timeout_ms; waited += 100) {
        if (count_lines(path) >= n)
            return 0;
        usleep(100000);
    }
    return -1;
}

static pid_t start_receiver(int port, const char *out, const char *log)
{
    char ps[16];
    snprintf(ps, sizeof(ps), "%d", port);
    char *argv[] = {(char *)atl_bin("wla_receiver"), ps, (char *)out, NULL};
    pid_t p = atl_spawn(argv, log, log);
    assert_int_equal(th_wait_port(port, 10000), 0);
    return p;
}

static void test_outage_resend_in_order_once(void **state)
{
    (void)state;
    th_require_root();
    const char *dir = th_tmpdir("agent-spool");
    char got[512], rlog[512], alog[512], spool[512], url[128], seqf[600];
    int port = th_free_port();
    snprintf(got, sizeof(got), "%s/received.txt", dir);
    snprintf(rlog, sizeof(rlog), "%s/receiver.log", dir);
    snprintf(alog, sizeof(alog), "%s/agent.log", dir);
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    snprintf(seqf, sizeof(seqf), "%s/seq", spool);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);

    pid_t rcv = start_receiver(port, got, rlog);
    char *argv[] = {(char *)th_bin("wanledger-agent"),
                    "--reconciler",
                    url,
                    "--window",
                    "1",
                    "--spool",
                    spool,
                    "--agent-id",
                    "spool-test",
                    NULL};
    pid_t agent = atl_spawn(argv, alog, alog);
    assert_int_equal(wait_lines(got, 3, 15000), 0);

    /* outage: at least 3 windows */
    assert_true(WIFEXITED(th_stop(rcv, 5000)));
    int before = count_lines(got);
    sleep(4);
    assert_int_equal(count_lines(got), before);
    rcv = start_receiver(port, got, rlog);
    assert_int_equal(wait_lines(got, before + 6, 15000), 0);
    assert_int_equal(th_stop(agent, 10000), 0);
    usleep(200000);
    assert_true(WIFEXITED(th_stop(rcv, 5000)));

    FILE *f = fopen(got, "r");
    assert_non_null(f);
    long long seq, expect = 1;
    char ws[64];
    int flows;
    while (fscanf(f, "%lld %63s %d", &seq, ws, &flows) == 3) {
        if (seq != expect)
            fail_msg("report %lld arrived where %lld was due (out of order, lost or repeated)", seq,
                     expect);
        expect++;
    }
    fclose(f);
    long long last = 0;
    f = fopen(seqf, "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%lld", &last), 1);
    fclose(f);
    printf("received seqs 1..%lld in order, once each; agent's last seq %lld\n", expect - 1, last);
    assert_int_equal(expect - 1, last);
    assert_true(last >= before + 6);
    assert_int_equal(atl_wait_contains(alog, "retrying with backoff", 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outage_resend_in_order_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
