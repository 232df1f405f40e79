/* An agent's report tail (sql/033_report_tail.sql) against a throwaway real PostgreSQL: the seq
 * gaps wl_record_report writes when a report's neighbours come from agent_report_tail instead of
 * a lookup over every day's partition of flow_reports. Each report is written as ingest writes it
 * (reconciler/store.c): its flow_reports row and wl_record_report in one transaction.
 *
 * What a user relies on: agent_gaps' seq_missing rows are the runs of seqs missing between the
 * agent's stored reports, whatever order the reports arrive in. The expected runs are computed
 * here from the set of seqs the test stored, not read from the database. Also: a report whose
 * predecessor row was deleted, reports written by another writer (no wl_record_report), and an
 * agent whose seqs start again lower. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "db.h"
#include "harness.h"
#include "th_db.h"
#include "timeutil.h"

/* windows of 60 s from a past day's 00:00 UTC (2025-11-02) */
#define DAY0_S INT64_C(1762041600)

static PGconn *db;

/* a statement on db that must succeed (th_db.h) */
#define exec(...) th_db_exec(db, __VA_ARGS__)

/* the single value of a query, as text ("" for NULL, "<none>" for no row; th_db.h) */
#define one(...) th_db_one(db, __VA_ARGS__)

static const char *ts(int64_t s)
{
    static char buf[4][TM_RFC3339_LEN];
    static int i;
    i = (i + 1) % 4;
    return tm_format_rfc3339(s * TM_USEC_PER_SEC, buf[i]);
}

/* Report seq of agent in window w (minutes after DAY0_S), as ingest stores a fresh one. */
static void report(const char *agent, long seq, long w)
{
    const char *ws = ts(DAY0_S + 60 * w);
    exec("BEGIN");
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) "
         "VALUES ('%s', %ld, 'h-%s', '%s', 60, 0)",
         agent, seq, agent, ws);
    exec("SELECT wl_record_report('%s', %ld, '%s', 60, 0, NULL, NULL, NULL, '{}')", agent, seq, ws);
    exec("COMMIT");
}

/* A report row written by something other than ingest: no wl_record_report. */
static void report_row_only(const char *agent, long seq, long w)
{
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) "
         "VALUES ('%s', %ld, 'h-%s', '%s', 60, 0)",
         agent, seq, agent, ts(DAY0_S + 60 * w));
}

static const char *gaps(const char *agent)
{
    return one("SELECT string_agg(seq_from || '|' || seq_to, ',' ORDER BY seq_from) FROM "
               "agent_gaps WHERE agent_id = '%s' AND reason = 'seq_missing'",
               agent);
}

static const char *tail(const char *agent)
{
    return one("SELECT seq || '|' || CASE WHEN exact THEN 't' ELSE 'f' END FROM "
               "agent_report_tail WHERE agent_id = '%s'",
               agent);
}

static int setup(void **state)
{
    (void)state;
    char err[512];
    db = db_connect_str(th_pg_default(), err, sizeof err);
    assert_non_null(db);
    /* the past day and the next: a report's window decides its partition */
    if (db_ensure_partitions(db, DAY0_S * TM_USEC_PER_SEC, (DAY0_S + 2 * 86400) * TM_USEC_PER_SEC,
                             err, sizeof err))
        fail_msg("%s", err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    PQfinish(db);
    return 0;
}

/* In order, one late, then in order again; the tail follows the highest seq. */
static void test_in_order_and_one_late(void **state)
{
    (void)state;
    for (long s = 1; s <= 3; s++)
        report("ag-a", s, s);
    assert_string_equal(gaps("ag-a"), "");
    assert_string_equal(tail("ag-a"), "3|t"); /* exact from the second report on */
    report("ag-a", 6, 6);
    assert_string_equal(gaps("ag-a"), "4|5");
    report("ag-a", 5, 5); /* late: splits nothing off above, leaves 4 */
    assert_string_equal(gaps("ag-a"), "4|4");
    assert_string_equal(tail("ag-a"), "6|t");
    report("ag-a", 7, 7);
    report("ag-a", 9, 9);
    assert_string_equal(gaps("ag-a"), "4|4,8|8");
    report("ag-a", 4, 4);
    report("ag-a", 8, 8);
    assert_string_equal(gaps("ag-a"), "");
    assert_string_equal(tail("ag-a"), "9|t");
}

/* The row of the report before this one is gone (deleted by hand, or its day pruned): the gap
 * starts after the highest seq still stored, as without the tail. */
static void test_deleted_predecessor(void **state)
{
    (void)state;
    for (long s = 1; s <= 3; s++)
        report("ag-d", s, s);
    exec("DELETE FROM flow_reports WHERE agent_id = 'ag-d' AND seq = 3");
    report("ag-d", 4, 4);
    assert_string_equal(gaps("ag-d"), "3|3");
    /* every report of the agent gone: the next one has no neighbour, so no gap */
    exec("DELETE FROM flow_reports WHERE agent_id = 'ag-d'");
    exec("DELETE FROM agent_gaps WHERE agent_id = 'ag-d'");
    report("ag-d", 10, 10);
    assert_string_equal(gaps("ag-d"), "");
}

/* Rows written without wl_record_report still raise the tail (the trigger), so a later report's
 * neighbours are the stored rows, not the last recorded one. */
static void test_other_writer(void **state)
{
    (void)state;
    for (long s = 1; s <= 3; s++)
        report("ag-o", s, s);
    report_row_only("ag-o", 10, 10);
    assert_string_equal(tail("ag-o"), "10|t");
    report("ag-o", 11, 11); /* its predecessor is 10: nothing missing between them */
    assert_string_equal(gaps("ag-o"), "");
    report("ag-o", 5, 5); /* between 3 and 10 */
    assert_string_equal(gaps("ag-o"), "4|4,6|9");
}

/* An agent whose seqs start again at 1 (its state lost) after its old reports were deleted: the
 * tail above every stored seq is lowered by the first report with nothing stored above it. */
static void test_seqs_start_again(void **state)
{
    (void)state;
    for (long s = 50; s <= 52; s++)
        report("ag-r", s, s);
    exec("DELETE FROM flow_reports WHERE agent_id = 'ag-r'");
    report("ag-r", 1, 60);
    assert_string_equal(tail("ag-r"), "1|t");
    report("ag-r", 2, 61);
    report("ag-r", 4, 63);
    assert_string_equal(gaps("ag-r"), "3|3");
    assert_string_equal(tail("ag-r"), "4|t");
}

/* Reports of three agents in a shuffled order with runs in order between (the tail's fast path
 * and the full lookup interleaved): the gap rows are the missing runs between stored seqs. */
static void test_shuffled_matches_missing_runs(void **state)
{
    (void)state;
    enum { N = 300, AGENTS = 3 };
    unsigned seed = 20261206;
    srand(seed);
    static long order[AGENTS * N][2];
    static bool stored[AGENTS][N + 1];
    size_t n = 0;
    for (int a = 0; a < AGENTS; a++)
        for (long s = 1; s <= N; s++)
            if (rand() % 4) /* about a quarter never arrive */
                order[n][0] = a, order[n++][1] = s;
    /* shuffle blocks of 10 consecutive entries, each block kept in order */
    size_t blocks = (n + 9) / 10;
    size_t *perm = malloc(blocks * sizeof *perm);
    assert_non_null(perm);
    for (size_t i = 0; i < blocks; i++)
        perm[i] = i;
    for (size_t i = blocks - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (size_t b = 0; b < blocks; b++)
        for (size_t k = perm[b] * 10; k < n && k < perm[b] * 10 + 10; k++) {
            char agent[16];
            snprintf(agent, sizeof agent, "ag-s%ld", order[k][0]);
            report(agent, order[k][1], order[k][1]);
            stored[order[k][0]][order[k][1]] = true;
        }
    free(perm);
    for (int a = 0; a < AGENTS; a++) {
        char want[8192] = "", agent[16];
        size_t w = 0;
        long last = 0; /* the previous stored seq, 0 before the first */
        for (long s = 1; s <= N; s++) {
            if (!stored[a][s])
                continue;
            if (last && s > last + 1)
                w += (size_t)snprintf(want + w, sizeof want - w, "%s%ld|%ld", w ? "," : "",
                                      last + 1, s - 1);
            last = s;
        }
        snprintf(agent, sizeof agent, "ag-s%d", a);
        print_message("# %s (seed %u): %zu bytes of expected runs\n", agent, seed, w);
        assert_string_equal(gaps(agent), want);
        char t[32];
        snprintf(t, sizeof t, "%ld|t", last);
        assert_string_equal(tail(agent), t);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order_and_one_late),
        cmocka_unit_test(test_deleted_predecessor),
        cmocka_unit_test(test_other_writer),
        cmocka_unit_test(test_seqs_start_again),
        cmocka_unit_test(test_shuffled_matches_missing_runs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
