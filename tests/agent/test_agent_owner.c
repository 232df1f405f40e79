/* Owners and roles. A process started as another user with WANLEDGER_WORKFLOW=train-42 is
 * reported with that user, its program and workflow; a child that sends and exits at once is
 * still reported with its comm, uid and its parent's workflow; a TCP connection opened before the
 * agent started gets its role from the listening sockets (server side) and their absence
 * (client side). */
#include <pwd.h>
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

#define NS_A "wla-ow-a"
#define NS_B "wla-ow-b"
#define IP_A "10.202.0.1"
#define IP_B "10.202.0.2"

static const char *g_dir;

/* The one flow of all reports whose remote is `remote` (summing tx over windows). */
static cJSON *find_flow(const char *path, const char *remote, long long *tx, int *count)
{
    struct atl_reports rs;
    cJSON *found = NULL;
    *tx = 0;
    *count = 0;
    assert_int_equal(atl_reports_load(path, &rs), 0);
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows"))
        {
            if (strcmp(atl_str(f, "remote"), remote) != 0)
                continue;
            *tx += atl_num(f, "tx_bytes");
            (*count)++;
            cJSON_Delete(found);
            found = cJSON_Duplicate(f, 1);
        }
    }
    atl_reports_free(&rs);
    return found;
}

static pid_t start_agent(const char *ns, const char *tag, char *rep, char *log, size_t len)
{
    struct atl_agent a;
    assert_int_equal(atl_agent_start(&a, g_dir, tag, ns, 1, NULL), 0);
    snprintf(rep, len, "%s", a.rep);
    snprintf(log, len, "%s", a.log);
    return a.pid;
}

static void test_owner_user_program_workflow(void **state)
{
    (void)state;
    char rep[512], log[512];
    pid_t agent = start_agent(NS_A, "owner", rep, log, sizeof(rep));
    const char *traffic = atl_bin("wla_traffic");
    struct passwd *pw = getpwuid(65534);
    assert_non_null(pw);
    char expect_user[64];
    snprintf(expect_user, sizeof(expect_user), "%s", pw->pw_name);

    /* 1: long-lived, another user, its own workflow variable */
    assert_int_equal(th_sh("ip netns exec %s setpriv --reuid=65534 --regid=65534 --clear-groups "
                           "env WANLEDGER_WORKFLOW=train-42 %s udp %s 9000 1234 2500",
                           NS_A, traffic, IP_B),
                     0);
    /* 2: the child sends and exits at once; only its parent has the workflow variable */
    char spawn_log[512];
    snprintf(spawn_log, sizeof(spawn_log), "%s/spawn.log", g_dir);
    assert_int_equal(th_sh("ip netns exec %s env WANLEDGER_WORKFLOW=wf-parent-7 %s spawn %s 9001 "
                           "777 65534 3000 > %s",
                           NS_A, traffic, IP_B, spawn_log),
                     0);
    sleep(1);
    assert_int_equal(th_stop(agent, 10000), 0);

    long long tx;
    int n;
    cJSON *f = find_flow(rep, IP_B ":9000", &tx, &n);
    assert_non_null(f);
    assert_int_equal(tx, 1234);
    assert_int_equal(atl_num(f, "uid"), 65534);
    assert_string_equal(atl_str(f, "user"), expect_user);
    assert_string_equal(atl_str(f, "program"), "wla_traffic");
    const char *exe = atl_str(f, "exe");
    assert_true(strlen(exe) > 12 && !strcmp(exe + strlen(exe) - 12, "/wla_traffic"));
    assert_string_equal(atl_str(f, "workflow"), "train-42");
    cJSON_Delete(f);

    f = find_flow(rep, IP_B ":9001", &tx, &n);
    assert_non_null(f);
    assert_int_equal(tx, 777);
    assert_int_equal(atl_num(f, "uid"), 65534);
    assert_string_equal(atl_str(f, "user"), expect_user);
    assert_string_equal(atl_str(f, "program"), "wla_child");
    assert_string_equal(atl_str(f, "workflow"), "wf-parent-7");
    assert_true(atl_num(f, "ppid") != atl_num(f, "pid"));
    /* it is the spawned child (which had exited when its parent printed this) */
    char line[128] = "";
    FILE *sl = fopen(spawn_log, "r");
    assert_non_null(sl);
    assert_non_null(fgets(line, sizeof(line), sl));
    fclose(sl);
    char expect_line[64];
    snprintf(expect_line, sizeof(expect_line), "child %lld exited", atl_num(f, "pid"));
    assert_non_null(strstr(line, expect_line));
    cJSON_Delete(f);
}

static void test_roles_of_older_connection(void **state)
{
    (void)state;
    const char *traffic = atl_bin("wla_traffic");
    char srv_log[512], cli_log[512], truth[512];
    snprintf(srv_log, sizeof(srv_log), "%s/old-server.log", g_dir);
    snprintf(cli_log, sizeof(cli_log), "%s/old-client.log", g_dir);
    snprintf(truth, sizeof(truth), "%s/old-server.txt", g_dir);
    char *argv_s[] = {"ip",   "netns", "exec", NS_B, (char *)traffic, "server", IP_B,
                      "5101", "5102",  truth,  NULL};
    pid_t ps = atl_spawn(argv_s, srv_log, srv_log);
    assert_int_equal(atl_wait_contains(srv_log, "ready", 10000), 0);
    /* connects now, sends 50,000 bytes 4 s later: after both agents started */
    char *argv_c[] = {"ip",   "netns", "exec",  NS_A, (char *)traffic, "slow-client", IP_B,
                      "5101", "4000",  "50000", NULL};
    pid_t pc = atl_spawn(argv_c, cli_log, cli_log);
    assert_int_equal(atl_wait_contains(cli_log, "connected", 10000), 0);

    char rep_a[512], log_a[512], rep_b[512], log_b[512];
    pid_t aa = start_agent(NS_A, "old-a", rep_a, log_a, sizeof(rep_a));
    pid_t ab = start_agent(NS_B, "old-b", rep_b, log_b, sizeof(rep_b));
    int st = atl_wait_exit(pc, 15000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    sleep(2);
    assert_true(WIFEXITED(th_stop(ps, 5000)));
    assert_int_equal(th_stop(aa, 10000), 0);
    assert_int_equal(th_stop(ab, 10000), 0);

    long long tx;
    int n;
    cJSON *f = find_flow(rep_a, IP_B ":5101", &tx, &n);
    assert_non_null(f);
    assert_int_equal(tx, 50000);
    assert_string_equal(atl_str(f, "role"), "client");
    cJSON_Delete(f);

    /* the server side: remote is the client's address and ephemeral port */
    struct atl_reports rs;
    long long rx = 0;
    int servers = 0;
    assert_int_equal(atl_reports_load(rep_b, &rs), 0);
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *g;
        cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows"))
        {
            if (strcmp(atl_str(g, "local"), IP_B ":5101") != 0)
                continue;
            rx += atl_num(g, "rx_bytes");
            servers += !strcmp(atl_str(g, "role"), "server");
            assert_string_equal(atl_str(g, "role"), "server");
        }
    }
    atl_reports_free(&rs);
    assert_int_equal(rx, 50000);
    assert_true(servers >= 1);
}

static int setup(void **state)
{
    (void)state;
    th_require_root();
    g_dir = th_tmpdir("agent-owner");
    return atl_netns_pair(NS_A, NS_B, IP_A, IP_B);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_user_program_workflow),
        cmocka_unit_test(test_roles_of_older_connection),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
