/* One TCP connection whose owner changes while it stays open (the kernel caches the socket's flow
 * slot in socket-local storage; agentlib/README.md "Per-event cost"): the bytes of each phase go
 * to the owner that wrote them — a child handed the socket with SCM_RIGHTS (another pid), the
 * parent after prctl(PR_SET_NAME) (another comm), after exec under another name (same pid,
 * another comm), after moving into another cgroup, after setresuid (another uid). Truth: the
 * writer's own write() sums per phase (wla_handoff) and the receiver's byte count; a cached slot
 * used for a stale owner would put a phase's bytes under the previous owner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_testlib.h"
#include "harness.h"

#define NS_A   "wla-ho-a"
#define NS_B   "wla-ho-b"
#define IP_A   "10.211.0.1"
#define IP_B   "10.211.0.2"
#define PORT   "9300"
#define CGNAME "wla-handoff-test"

static const char *g_dir;
static char g_cg[600];

/* (pid, program, uid, moved) → bytes */
struct owner_sum {
    long long pid, uid, bytes;
    char comm[32];
    int moved;
};

static struct owner_sum *sum_of(struct owner_sum *v, size_t *n, size_t cap, long long pid,
                                const char *comm, long long uid, int moved)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i].pid == pid && v[i].uid == uid && v[i].moved == moved && !strcmp(v[i].comm, comm))
            return &v[i];
    assert_true(*n < cap);
    struct owner_sum *s = &v[(*n)++];
    memset(s, 0, sizeof(*s));
    s->pid = pid;
    s->uid = uid;
    s->moved = moved;
    snprintf(s->comm, sizeof(s->comm), "%s", comm);
    return s;
}

static void test_owner_changes_on_one_socket(void **state)
{
    (void)state;
    char alias[600], truth[600], srv_out[600], line[256];
    /* exec under another name: the comm becomes the link's name */
    snprintf(alias, sizeof(alias), "%s/wla_hoexec", g_dir);
    assert_int_equal(symlink(atl_bin("wla_handoff"), alias), 0);
    struct atl_agent a;
    assert_int_equal(atl_agent_start(&a, g_dir, "handoff", NS_A, 1, NULL), 0);

    snprintf(srv_out, sizeof(srv_out), "%s/server.out", g_dir);
    char *srv_argv[] = {"ip",     "netns", "exec", NS_B, (char *)atl_bin("wla_handoff"),
                        "server", IP_B,    PORT,   NULL};
    pid_t srv = atl_spawn(srv_argv, srv_out, NULL);
    assert_true(srv > 0);
    assert_int_equal(atl_wait_contains(srv_out, "listening", 10000), 0);

    snprintf(truth, sizeof(truth), "%s/truth.txt", g_dir);
    /* fd 3: the other cgroup's cgroup.procs, opened before `ip netns exec` remounts /sys */
    assert_int_equal(th_sh("ip netns exec %s %s client %s %s %s 3 > %s 3>> %s/cgroup.procs", NS_A,
                           atl_bin("wla_handoff"), IP_B, PORT, alias, truth, g_cg),
                     0);
    int st = atl_wait_exit(srv, 10000);
    assert_int_equal(st, 0);
    assert_int_equal(th_stop(a.pid, 10000), 0);

    /* what the writers wrote, per owner */
    struct owner_sum want[16], got[16];
    size_t nwant = 0, ngot = 0;
    long long total = 0, phases = 0;
    FILE *f = fopen(truth, "r");
    assert_non_null(f);
    while (fgets(line, sizeof(line), f)) {
        long long pid, uid, bytes;
        char comm[32], cg[32];
        assert_int_equal(sscanf(line, "%lld %31s %lld %31s %lld", &pid, comm, &uid, cg, &bytes), 5);
        sum_of(want, &nwant, 16, pid, comm, uid, !strcmp(cg, "moved"))->bytes += bytes;
        total += bytes;
        phases++;
    }
    fclose(f);
    assert_int_equal(phases, 7);
    assert_int_equal(nwant, 6); /* (a) and (c) are the same owner */
    f = fopen(srv_out, "r");
    assert_non_null(f);
    long long received = -1;
    while (fgets(line, sizeof(line), f))
        sscanf(line, "received %lld", &received);
    fclose(f);
    assert_int_equal(received, total);

    /* what the agent reported for the connection, per owner */
    struct atl_reports rs;
    assert_int_equal(atl_reports_load(a.rep, &rs), 0);
    char cg_rel[64];
    snprintf(cg_rel, sizeof(cg_rel), "/%s", CGNAME);
    for (size_t i = 0; i < rs.n; i++) {
        const cJSON *fl;
        cJSON_ArrayForEach(fl, cJSON_GetObjectItemCaseSensitive(rs.r[i], "flows"))
        {
            if (strcmp(atl_str(fl, "remote"), IP_B ":" PORT) != 0)
                continue;
            const char *cg = atl_str(fl, "cgroup");
            size_t cl = strlen(cg), rl = strlen(cg_rel);
            int moved = cl >= rl && !strcmp(cg + cl - rl, cg_rel);
            print_message("report %zu: pid %lld %s uid %lld cgroup %s: %lld bytes\n", i,
                          atl_num(fl, "pid"), atl_str(fl, "program"), atl_num(fl, "uid"), cg,
                          atl_num(fl, "tx_bytes"));
            sum_of(got, &ngot, 16, atl_num(fl, "pid"), atl_str(fl, "program"), atl_num(fl, "uid"),
                   moved)
                ->bytes += atl_num(fl, "tx_bytes");
        }
    }
    atl_reports_free(&rs);
    for (size_t i = 0; i < nwant; i++) {
        struct owner_sum *g =
            sum_of(got, &ngot, 16, want[i].pid, want[i].comm, want[i].uid, want[i].moved);
        print_message("owner pid %lld %s uid %lld %s: wrote %lld, reported %lld\n", want[i].pid,
                      want[i].comm, want[i].uid, want[i].moved ? "moved" : "-", want[i].bytes,
                      g->bytes);
        assert_int_equal(g->bytes, want[i].bytes);
    }
    assert_int_equal(ngot, nwant); /* no other owner of the connection's bytes */
}

static int setup(void **state)
{
    (void)state;
    th_require_root();
    g_dir = th_tmpdir("agent-handoff");
    char mnt[512] = "";
    /* where cgroup v2 is mounted: /sys/fs/cgroup, or .../unified on hybrid hosts */
    FILE *mf = popen("findmnt -n -t cgroup2 -o TARGET | head -1", "r");
    if (!mf || !fgets(mnt, sizeof(mnt), mf))
        return -1;
    pclose(mf);
    mnt[strcspn(mnt, "\n")] = '\0';
    snprintf(g_cg, sizeof(g_cg), "%s/%s", mnt, CGNAME);
    th_sh("rmdir %s 2>/dev/null", g_cg);
    if (mkdir(g_cg, 0755) != 0)
        return -1;
    return atl_netns_pair(NS_A, NS_B, IP_A, IP_B);
}

static int teardown(void **state)
{
    (void)state;
    th_sh("rmdir %s 2>/dev/null", g_cg);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_owner_changes_on_one_socket),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
