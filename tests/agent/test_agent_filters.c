/* Kernel-side filters and the shutdown report: with --exclude-ports 9000 a datagram to port 9000
 * is never counted while one to 9001 is; with --cgroup only processes inside that cgroup subtree
 * are counted; and bytes sent just before SIGTERM appear in the partial window reported on exit
 * (window_start = the window SIGTERM arrived in). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_testlib.h"
#include "harness.h"

#define NS_A "wla-fl-a"
#define NS_B "wla-fl-b"
#define IP_A "10.206.0.1"
#define IP_B "10.206.0.2"

static char CG[600]; /* <cgroup2 mount>/wla-filter-test */

static const char *g_dir;

/* Sum of tx_bytes to `remote` over all reports; *last_ws gets the last report's window_start. */
static long long tx_to(const char *path, const char *remote, char *last_ws, size_t len,
                       long long *in_last)
{
    struct atl_reports rs;
    long long tx = 0;
    assert_int_equal(atl_reports_load(path, &rs), 0);
    *in_last = 0;
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows"))
        {
            if (strcmp(atl_str(f, "remote"), remote) != 0)
                continue;
            tx += atl_num(f, "tx_bytes");
            if (i + 1 == rs.n)
                *in_last += atl_num(f, "tx_bytes");
        }
    }
    if (rs.n && last_ws)
        snprintf(last_ws, len, "%s", atl_str(rs.r[rs.n - 1], "window_start"));
    atl_reports_free(&rs);
    return tx;
}

static pid_t agent(const char *tag, char *rep, size_t len, char **extra, int nextra)
{
    struct atl_agent a;
    char *more[16];
    for (int i = 0; i < nextra && i < 15; i++)
        more[i] = extra[i];
    more[nextra < 15 ? nextra : 15] = NULL;
    assert_int_equal(atl_agent_start(&a, g_dir, tag, NS_A, 5, more), 0);
    snprintf(rep, len, "%s", a.rep);
    return a.pid;
}

static void test_excluded_ports_and_partial_window(void **state)
{
    (void)state;
    char rep[512], ws[64];
    char *extra[] = {"--exclude-ports", "9000,22"};
    pid_t p = agent("ports", rep, sizeof(rep), extra, 2);
    const char *traffic = atl_bin("wla_traffic");
    /* start 0.2 s into a 5 s window so that sending and SIGTERM fall inside it */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ms_into = (long)(ts.tv_sec % 5) * 1000 + ts.tv_nsec / 1000000;
    usleep((useconds_t)((5000 - ms_into + 200) % 5000) * 1000);
    time_t start = time(NULL);
    start -= start % 5;
    assert_int_equal(th_sh("ip netns exec %s %s udp %s 9000 1000 0", NS_A, traffic, IP_B), 0);
    assert_int_equal(th_sh("ip netns exec %s %s udp %s 9001 1001 0", NS_A, traffic, IP_B), 0);
    assert_int_equal(th_stop(p, 10000), 0);
    assert_true(time(NULL) - start < 5); /* still the same window */
    long long last;
    assert_int_equal(tx_to(rep, IP_B ":9000", ws, sizeof(ws), &last), 0);
    assert_int_equal(tx_to(rep, IP_B ":9001", ws, sizeof(ws), &last), 1001);
    /* the report written on SIGTERM is the partial window and holds the datagram */
    struct tm tm;
    char expect[64];
    gmtime_r(&start, &tm);
    strftime(expect, sizeof(expect), "%Y-%m-%dT%H:%M:%SZ", &tm);
    assert_string_equal(ws, expect);
    assert_int_equal(last, 1001);
}

static void test_cgroup_subtree(void **state)
{
    (void)state;
    char rep[512], mnt[512] = "";
    /* where cgroup v2 is mounted: /sys/fs/cgroup, or .../unified on hybrid hosts */
    FILE *mf = popen("findmnt -n -t cgroup2 -o TARGET | head -1", "r");
    assert_non_null(mf);
    assert_non_null(fgets(mnt, sizeof(mnt), mf));
    pclose(mf);
    mnt[strcspn(mnt, "\n")] = '\0';
    snprintf(CG, sizeof(CG), "%s/wla-filter-test", mnt);
    th_sh("rmdir %s 2>/dev/null", CG);
    assert_int_equal(mkdir(CG, 0755), 0);
    char *extra[] = {"--cgroup", CG};
    pid_t p = agent("cgroup", rep, sizeof(rep), extra, 2);
    const char *traffic = atl_bin("wla_traffic");
    /* inside: the shell moves itself into the cgroup, then execs the sender */
    assert_int_equal(th_sh("sh -c 'echo $$ > %s/cgroup.procs && exec ip netns exec %s %s udp "
                           "%s 9101 555 0'",
                           CG, NS_A, traffic, IP_B),
                     0);
    /* outside */
    assert_int_equal(th_sh("ip netns exec %s %s udp %s 9102 666 0", NS_A, traffic, IP_B), 0);
    assert_int_equal(th_stop(p, 10000), 0);
    th_sh("rmdir %s", CG);
    long long last;
    assert_int_equal(tx_to(rep, IP_B ":9101", NULL, 0, &last), 555);
    assert_int_equal(tx_to(rep, IP_B ":9102", NULL, 0, &last), 0);
}

static int setup(void **state)
{
    (void)state;
    th_require_root();
    g_dir = th_tmpdir("agent-filters");
    return atl_netns_pair(NS_A, NS_B, IP_A, IP_B);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_excluded_ports_and_partial_window),
        cmocka_unit_test(test_cgroup_subtree),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
