/* Restarts lose nothing: the agent (in a namespace, 1 s windows, --stdout) is SIGKILLed twice
 * while wla_traffic moves TCP and UDP through it, and restarted each time; the restarted agent
 * adopts the probe pinned in bpffs and finishes the drain the killed one left. Over the whole run
 * the reports (one per seq: a report re-submitted after a kill must be byte-identical to the
 * first copy) add up, flow for flow, to exactly the bytes the traffic program counted, and the
 * seqs run 1..N without a hole.
 * The control: the same kill, but the pins are removed before the restart (as a reboot would):
 * bytes are lost, and the first report of the new run says from when to when ("lost"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "agent_testlib.h"
#include "harness.h"
#include "timeutil.h"

#define NS_A "wla-rs-a"
#define NS_B "wla-rs-b"
#define IP_A "10.203.0.1"
#define IP_B "10.203.0.2"
/* outside /sys/fs/bpf/wanledger, which other tests remove at exit (tests/harness th_bin) */
#define PIN_DIR "/sys/fs/bpf/wltest-restart"
#define MAXSEQ  512

/* Reports by seq, over every run's output: a line cut by SIGKILL is a report not delivered (the
 * restarted agent re-submits it), so unparsable lines are skipped and counted. */
struct runs {
    char *by_seq[MAXSEQ + 1]; /* the report's text */
    cJSON *parsed[MAXSEQ + 1];
    int first_seq_of_run[8];
    int nruns;
    int cut_lines, duplicates;
};

static void load_run(struct runs *rs, const char *path)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int first = 0;
    assert_non_null(f);
    while ((n = getline(&line, &cap, f)) > 0) {
        if (line[0] != '{')
            continue;
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        cJSON *j = cJSON_Parse(line);
        if (!j) {
            rs->cut_lines++;
            continue;
        }
        long long seq = atl_num(j, "seq");
        assert_true(seq >= 1 && seq <= MAXSEQ);
        if (!first)
            first = (int)seq;
        if (rs->by_seq[seq]) {
            if (strcmp(rs->by_seq[seq], line) != 0)
                fail_msg("seq %lld reported twice with different contents", seq);
            rs->duplicates++;
            cJSON_Delete(j);
            continue;
        }
        rs->by_seq[seq] = strdup(line);
        rs->parsed[seq] = j;
    }
    free(line);
    fclose(f);
    rs->first_seq_of_run[rs->nruns++] = first;
}

static int last_seq(const struct runs *rs)
{
    int last = 0;
    for (int s = 1; s <= MAXSEQ; s++)
        if (rs->by_seq[s])
            last = s;
    return last;
}

static void sum_reports(const struct runs *rs, struct atl_sums *out, int *holes)
{
    *holes = 0;
    for (int s = 1; s <= last_seq(rs); s++) {
        if (!rs->parsed[s]) {
            (*holes)++;
            continue;
        }
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(rs->parsed[s], "flows"))
        {
            char key[160];
            snprintf(key, sizeof(key), "%s %s %s", atl_str(f, "proto"), atl_str(f, "local"),
                     atl_str(f, "remote"));
            struct atl_sum *e = atl_sum_of(out, key);
            assert_non_null(e);
            e->tx += (unsigned long long)atl_num(f, "tx_bytes");
            e->rx += (unsigned long long)atl_num(f, "rx_bytes");
        }
    }
}

static void runs_free(struct runs *rs)
{
    for (int s = 0; s <= MAXSEQ; s++) {
        free(rs->by_seq[s]);
        cJSON_Delete(rs->parsed[s]);
    }
}

static unsigned long long total(const struct atl_sums *s)
{
    unsigned long long t = 0;
    for (size_t i = 0; i < s->n; i++)
        t += s->v[i].tx + s->v[i].rx;
    return t;
}

static pid_t start_agent(const char *out, const char *log, const char *spool, const char *pins)
{
    pid_t p = atl_agent_spawn(out, log, "--stdout", "--window", "1", "--k", "100000", "--netns",
                              "/run/netns/" NS_A, "--spool", spool, "--pin-dir", pins, "--agent-id",
                              "rs-a", "--host", "rs-a", NULL);
    assert_true(p > 0);
    return p;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void kill9(pid_t p)
{
    int st;
    assert_int_equal(kill(p, SIGKILL), 0);
    assert_int_equal(waitpid(p, &st, 0), p);
}

/* Runs traffic for ~22 s with the agent killed at the given times (ms after the traffic starts),
 * restarted after the given pauses; remove_pins wipes the pin directory before each restart. */
static void run_scenario(const char *tag, const int *kill_at, const int *pause, int nkills,
                         bool remove_pins, struct runs *rs, struct atl_sums *truth,
                         int64_t *kill_us)
{
    assert_int_equal(atl_netns_pair(NS_A, NS_B, IP_A, IP_B), 0);
    th_sh("rm -rf " PIN_DIR);
    const char *dir = th_tmpdir(tag);
    char spool[512], truth_c[512], truth_s[512], srv_log[512], out[8][512], log[512];
    snprintf(spool, sizeof(spool), "%s/spool", dir);
    snprintf(truth_c, sizeof(truth_c), "%s/client.txt", dir);
    snprintf(truth_s, sizeof(truth_s), "%s/server.txt", dir);
    snprintf(srv_log, sizeof(srv_log), "%s/server.log", dir);
    snprintf(log, sizeof(log), "%s/agent.log", dir);
    for (int i = 0; i <= nkills; i++)
        snprintf(out[i], sizeof(out[i]), "%s/run%d.jsonl", dir, i);

    pid_t agent = start_agent(out[0], log, spool, PIN_DIR);
    const char *traffic = atl_bin("wla_traffic");
    char *argv_s[] = {"ip",   "netns", "exec",  NS_B, (char *)traffic, "server", IP_B,
                      "5101", "5102",  truth_s, NULL};
    pid_t ps = atl_spawn(argv_s, srv_log, srv_log);
    assert_int_equal(atl_wait_contains(srv_log, "ready", 10000), 0);
    char *argv_c[] = {"ip",   "netns", "exec",  NS_A, (char *)traffic, "client", IP_B, "5101",
                      "5102", "40",    "22000", IP_A, truth_c,         NULL};
    pid_t pc = atl_spawn(argv_c, NULL, NULL);
    int elapsed = 0;
    for (int k = 0; k < nkills; k++) {
        sleep_ms(kill_at[k] - elapsed);
        kill9(agent);
        kill_us[k] = tm_now_us();
        if (remove_pins)
            assert_int_equal(th_sh("rm -rf " PIN_DIR), 0);
        sleep_ms(pause[k]);
        elapsed = kill_at[k] + pause[k];
        agent = start_agent(out[k + 1], log, spool, PIN_DIR);
    }
    int st = atl_wait_exit(pc, 60000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    usleep(500000);
    st = th_stop(ps, 5000);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    sleep(2);
    assert_int_equal(th_stop(agent, 10000), 0);
    th_sh("rm -rf " PIN_DIR);

    for (int i = 0; i <= nkills; i++)
        load_run(rs, out[i]);
    assert_int_equal(atl_load_truth(truth_c, truth), 0);
}

static void test_sigkill_loses_nothing(void **state)
{
    (void)state;
    th_require_root();
    static struct runs rs;
    static struct atl_sums truth, got;
    const int kill_at[] = {6300, 14700}, pause[] = {2200, 1500};
    int64_t kill_us[2];
    run_scenario("agent-restart", kill_at, pause, 2, false, &rs, &truth, kill_us);
    int holes = 0;
    sum_reports(&rs, &got, &holes);
    printf("runs: 3, reports 1..%d, %d re-submitted after a kill (identical), %d lines cut by "
           "SIGKILL\n",
           last_seq(&rs), rs.duplicates, rs.cut_lines);
    assert_int_equal(holes, 0);
    assert_true(rs.first_seq_of_run[1] > 1 && rs.first_seq_of_run[2] > rs.first_seq_of_run[1]);
    for (size_t i = 0; i < truth.n; i++) {
        const struct atl_sum *t = &truth.v[i];
        const struct atl_sum *a = NULL;
        for (size_t j = 0; j < got.n; j++)
            if (!strcmp(got.v[j].key, t->key))
                a = &got.v[j];
        if (!a || a->tx != t->tx || a->rx != t->rx)
            fail_msg("flow %s: program counted tx %llu rx %llu, agent reported tx %llu rx %llu",
                     t->key, t->tx, t->rx, a ? a->tx : 0, a ? a->rx : 0);
    }
    for (size_t j = 0; j < got.n; j++) {
        int known = 0;
        for (size_t i = 0; i < truth.n; i++)
            known |= !strcmp(got.v[j].key, truth.v[i].key);
        if (!known)
            fail_msg("agent reported a flow the program never made: %s", got.v[j].key);
    }
    /* no report of an adopting run says anything was lost */
    for (int s = 1; s <= last_seq(&rs); s++)
        assert_null(cJSON_GetObjectItemCaseSensitive(rs.parsed[s], "lost"));
    printf("%zu flows, %llu bytes sent, %llu bytes reported, lost 0 over 2 SIGKILLs\n", truth.n,
           total(&truth), total(&got));
    assert_true(truth.n >= 30);
    runs_free(&rs);
}

static void test_lost_probe_is_reported(void **state)
{
    (void)state;
    th_require_root();
    static struct runs rs;
    static struct atl_sums truth, got;
    const int kill_at[] = {8300}, pause[] = {2500};
    int64_t kill_us[1];
    run_scenario("agent-restart-lost", kill_at, pause, 1, true, &rs, &truth, kill_us);
    int holes = 0;
    sum_reports(&rs, &got, &holes);
    assert_int_equal(holes, 0);
    unsigned long long sent = total(&truth), reported = total(&got);
    printf("pins removed before the restart: %llu bytes sent, %llu reported, %llu lost\n", sent,
           reported, sent - reported);
    assert_true(reported < sent);
    /* the first report of the second run names the lost span: from the end of the last window the
     * first run reported to the restart */
    int with_lost = 0, first = 0;
    for (int s = 1; s <= last_seq(&rs); s++)
        if (cJSON_GetObjectItemCaseSensitive(rs.parsed[s], "lost")) {
            with_lost++;
            first = s;
        }
    assert_int_equal(with_lost, 1);
    assert_true(first > 1 && first >= rs.first_seq_of_run[1]);
    const cJSON *lost = cJSON_GetObjectItemCaseSensitive(rs.parsed[first], "lost");
    int64_t ws = 0, from = 0, to = 0;
    assert_int_equal(tm_parse_rfc3339(atl_str(rs.parsed[first - 1], "window_start"), &ws), 0);
    assert_int_equal(tm_parse_rfc3339(atl_str(lost, "from"), &from), 0);
    assert_int_equal(tm_parse_rfc3339(atl_str(lost, "to"), &to), 0);
    printf("lost span reported: %s .. %s (killed %.3f s after its start)\n", atl_str(lost, "from"),
           atl_str(lost, "to"), (double)(kill_us[0] - from) / 1e6);
    assert_int_equal(from, ws + 1000000);
    assert_true(from <= kill_us[0]);
    assert_true(to >= kill_us[0] && to <= kill_us[0] + 10 * 1000000LL);
    assert_string_equal(atl_str(lost, "reason"), "restarted_without_pinned_probe");
    runs_free(&rs);
}

static void rm_pins(void)
{
    if (system("rm -rf " PIN_DIR) != 0)
        fprintf(stderr, "could not remove %s\n", PIN_DIR);
}

int main(void)
{
    atexit(rm_pins); /* also when an assertion ends a run early */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigkill_loses_nothing),
        cmocka_unit_test(test_lost_probe_is_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
