/* The grouped commit of agent reports (reconciler/store_group.h), PostgreSQL only, against a real
 * server: several parsed reports in one transaction with one COPY per day partition, and every
 * report still all-or-nothing and idempotent — a resend inside the group or of a stored report
 * stores nothing, a later seq of an agent already in the group is written after it (its seq gap
 * recorded exactly as alone), and a report the database refuses (a CHECK constraint the
 * validator knows nothing of) fails alone while the others of its group are stored once. The
 * expected rows and byte sums are computed from what the test put in the bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>

#include "config.h"
#include "db.h"
#include "grp_report.h"
#include "harness.h"
#include "store.h"
#include "store_group.h"
#include "timeutil.h"

static PGconn *g_db;
static struct cfg *g_cfg;
static struct store *g_st;
static const int64_t W0 = 1796119200000000LL; /* 2026-12-01T10:00:00Z */
static const int64_t MIN = 60000000LL;
#define NOW (W0 + 3600000000LL)

static long long num(const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = PQexec(g_db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("%s: %s", sql, PQerrorMessage(g_db));
    long long v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void exec(const char *sql)
{
    PGresult *r = PQexec(g_db, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(g_db));
    PQclear(r);
}

/* A value of store_group_metrics' output. */
static long long metric(const char *name)
{
    struct evbuffer *out = evbuffer_new();
    store_group_metrics(out);
    evbuffer_add(out, "", 1);
    const char *s = (const char *)evbuffer_pullup(out, -1);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *p = strstr(s, key);
    if (!p)
        fail_msg("%s not in %s", name, s);
    long long v = atoll(p + strlen(key));
    evbuffer_free(out);
    return v;
}

/* The agent's flows and sums in flow_records, compared with the report(s) it sent. */
static void assert_flows(const char *agent, long long rows, long long tx, long long rx)
{
    assert_int_equal(num("SELECT count(*) FROM flow_records WHERE agent_id = '%s'", agent), rows);
    assert_int_equal(
        num("SELECT coalesce(sum(tx_bytes), 0) FROM flow_records WHERE agent_id = '%s'", agent),
        tx);
    assert_int_equal(
        num("SELECT coalesce(sum(rx_bytes), 0) FROM flow_records WHERE agent_id = '%s'", agent),
        rx);
}

static void write_group(struct grp_report **r, size_t n, struct sg_item *it)
{
    for (size_t i = 0; i < n; i++)
        it[i] = (struct sg_item){.b = &r[i]->b};
    store_write_group(g_st, it, n);
}

static int setup(void **state)
{
    (void)state;
    const char *pg = th_pg_default();
    char err[512];
    g_db = db_connect_str(pg, err, sizeof err);
    assert_non_null(g_db);
    char json[1024];
    snprintf(json, sizeof json,
             "{\"window_seconds\": 60, \"database\": \"%s\", \"listen\": \"127.0.0.1:1\","
             " \"sites\": [{\"name\": \"a\", \"prefixes\": [\"10.0.1.0/24\"]},"
             "             {\"name\": \"b\", \"prefixes\": [\"10.0.2.0/24\"]}]}",
             pg);
    struct cfg_errors errs = {0};
    g_cfg = cfg_parse("ingest-group.json", json, &errs);
    assert_non_null(g_cfg);
    g_st = store_open(g_cfg, err, sizeof err);
    if (!g_st)
        fail_msg("%s", err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    store_close(g_st);
    cfg_free(g_cfg);
    PQfinish(g_db);
    return 0;
}

/* Four reports, one an exact resend of another, over three windows on two days: one
 * transaction, each fresh report's flows once, the resend answered 0 stored. */
static void test_group_with_resend_inside(void **state)
{
    (void)state;
    struct grp_report a, b, a2, c;
    const int64_t prev_day = W0 - 11 * 3600000000LL; /* 2026-11-30T23:00:00Z */
    grp_report(&a, g_cfg, "ga", 1, W0, 100, 1000, 0, NOW);
    grp_report(&b, g_cfg, "gb", 1, W0 + MIN, 50, 5000, 0, NOW);
    grp_report(&a2, g_cfg, "ga", 1, W0, 100, 1000, 0, NOW);
    grp_report(&c, g_cfg, "gc", 1, prev_day, 30, 70000, 0, NOW);
    long long commits = metric("wanledger_ingest_commit_reports_count");
    long long reports = metric("wanledger_ingest_commit_reports_sum");
    struct grp_report *r[] = {&a, &b, &a2, &c};
    struct sg_item it[4];
    write_group(r, 4, it);
    size_t stored[] = {100, 50, 0, 30};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(it[i].rc, 0);
        assert_int_equal(it[i].res.received, r[i]->flows);
        assert_int_equal(it[i].res.stored, stored[i]);
    }
    assert_int_equal(metric("wanledger_ingest_commit_reports_count"), commits + 1);
    assert_int_equal(metric("wanledger_ingest_commit_reports_sum"), reports + 4);
    assert_flows("ga", 100, a.tx_sum, a.rx_sum);
    assert_flows("gb", 50, b.tx_sum, b.rx_sum);
    assert_flows("gc", 30, c.tx_sum, c.rx_sum);
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE agent_id IN ('ga','gb','gc')"),
                     3);
    /* one transaction: every row of the group carries the same xmin */
    assert_int_equal(num("SELECT count(DISTINCT x) FROM (SELECT xmin::text AS x FROM flow_reports"
                         " WHERE agent_id IN ('ga','gb','gc') UNION SELECT xmin::text FROM"
                         " flow_packed WHERE agent_id IN ('ga','gb','gc')) s"),
                     1);
    /* the three windows marked for reconciliation */
    assert_int_equal(num("SELECT count(*) FROM window_state WHERE dirty AND window_start IN"
                         " ('2026-12-01T10:00:00Z', '2026-12-01T10:01:00Z',"
                         " '2026-11-30T23:00:00Z')"),
                     3);
    grp_report_free(&a), grp_report_free(&b), grp_report_free(&a2), grp_report_free(&c);
}

/* A resend of a stored report in a group stores nothing; a later seq of an agent already in
 * the group is written after the group, and the seq between them is recorded missing once. */
static void test_group_with_stored_report(void **state)
{
    (void)state;
    struct grp_report d, d2, e, g1, g3;
    grp_report(&d, g_cfg, "gd", 1, W0, 40, 100, 0, NOW);
    struct store_result res;
    char err[512];
    assert_int_equal(store_write(g_st, &d.b, &res, err, sizeof err), 0);
    assert_int_equal(res.stored, 40);
    grp_report(&d2, g_cfg, "gd", 1, W0, 40, 100, 0, NOW);
    grp_report(&e, g_cfg, "ge", 1, W0, 25, 900, 0, NOW);
    grp_report(&g1, g_cfg, "gg", 1, W0, 10, 300, 0, NOW);
    grp_report(&g3, g_cfg, "gg", 3, W0 + 2 * MIN, 20, 400, 0, NOW);
    struct grp_report *r[] = {&d2, &g1, &e, &g3};
    struct sg_item it[4];
    write_group(r, 4, it);
    size_t stored[] = {0, 10, 25, 20};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(it[i].rc, 0);
        assert_int_equal(it[i].res.received, r[i]->flows);
        assert_int_equal(it[i].res.stored, stored[i]);
    }
    assert_int_equal(it[3].res.gaps, 1); /* seq 2 of gg */
    assert_flows("gd", 40, d.tx_sum, d.rx_sum);
    assert_flows("ge", 25, e.tx_sum, e.rx_sum);
    assert_flows("gg", 30, g1.tx_sum + g3.tx_sum, g1.rx_sum + g3.rx_sum);
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE agent_id IN ('gd','ge','gg')"),
                     4);
    assert_int_equal(num("SELECT count(*) FROM agent_gaps WHERE agent_id = 'gg'"), 1);
    assert_int_equal(num("SELECT count(*) FROM agent_gaps WHERE agent_id = 'gg' AND"
                         " reason = 'seq_missing' AND seq_from = 2 AND seq_to = 2"),
                     1);
    assert_int_equal(num("SELECT count(*) FROM agent_gaps WHERE agent_id IN ('gd','ge')"), 0);
    grp_report_free(&d), grp_report_free(&d2), grp_report_free(&e), grp_report_free(&g1);
    grp_report_free(&g3);
}

/* One report of three breaks a constraint only the database checks: the group is rolled back
 * and written again one by one — the two others stored once, nothing of the third. */
static void test_group_one_fails(void **state)
{
    (void)state;
    const long long POISON = 666666;
    exec("ALTER TABLE flow_packed ADD CONSTRAINT test_poison CHECK (NOT 666666 = ANY (tx_bytes))");
    struct grp_report h, i1, j;
    grp_report(&h, g_cfg, "gh", 1, W0, 60, 10, 0, NOW);
    grp_report(&i1, g_cfg, "gi", 1, W0, 70, 20, POISON, NOW);
    grp_report(&j, g_cfg, "gj", 1, W0 + MIN, 80, 30, 0, NOW);
    long long fallbacks = metric("wanledger_ingest_group_fallbacks_total");
    struct grp_report *r[] = {&h, &i1, &j};
    struct sg_item it[3];
    write_group(r, 3, it);
    assert_int_equal(metric("wanledger_ingest_group_fallbacks_total"), fallbacks + 1);
    assert_int_equal(it[0].rc, 0);
    assert_int_equal(it[0].res.stored, 60);
    assert_int_equal(it[1].rc, -1);
    assert_int_equal(it[1].res.stored, 0);
    assert_non_null(strstr(it[1].err, "test_poison"));
    assert_int_equal(it[2].rc, 0);
    assert_int_equal(it[2].res.stored, 80);
    assert_flows("gh", 60, h.tx_sum, h.rx_sum);
    assert_flows("gj", 80, j.tx_sum, j.rx_sum);
    assert_flows("gi", 0, 0, 0);
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE agent_id = 'gi'"), 0);
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE agent_id IN ('gh','gj')"), 2);
    /* the agent resends it once the database takes it: stored then, exactly once */
    exec("ALTER TABLE flow_packed DROP CONSTRAINT test_poison");
    struct grp_report h2;
    grp_report(&h2, g_cfg, "gh", 1, W0, 60, 10, 0, NOW);
    struct grp_report *r2[] = {&h2, &i1};
    write_group(r2, 2, it);
    assert_int_equal(it[0].rc, 0);
    assert_int_equal(it[0].res.stored, 0);
    assert_int_equal(it[1].rc, 0);
    assert_int_equal(it[1].res.stored, 70);
    assert_flows("gi", 70, i1.tx_sum, i1.rx_sum);
    assert_flows("gh", 60, h.tx_sum, h.rx_sum);
    grp_report_free(&h), grp_report_free(&i1), grp_report_free(&j), grp_report_free(&h2);
}

/* A report's row is written once: its spool drops and its flows' local sites go in with the
 * INSERT (ingest_batch.report), so wl_record_report, which sets them when they differ, finds
 * nothing to change. Before, every fresh report's row was inserted and then updated (a second
 * row version, its WAL and, later, vacuum). Checked on the values and on PostgreSQL's own count
 * of updates to flow_reports' partitions over this whole binary (nothing here updates a report),
 * read once the store's backend has flushed its statistics (its inserts are all counted). */
static void test_report_row_written_once(void **state)
{
    (void)state;
    struct grp_report a1, b2;
    grp_report(&a1, g_cfg, "gw", 1, W0 + 2 * MIN, 5, 10, 0, NOW);
    char t[TM_RFC3339_LEN], body[1024];
    int n = snprintf(body, sizeof body,
                     "{\"version\":1,\"host\":\"gw\",\"agent_id\":\"gw\",\"seq\":2,"
                     "\"window_start\":\"%s\",\"spool\":{\"dropped_reports\":3},\"flows\":["
                     "{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.0.2.9:40000\","
                     "\"remote\":\"10.0.1.7:5201\",\"role\":\"client\",\"tx_bytes\":5,"
                     "\"rx_bytes\":6}]}",
                     tm_format_rfc3339(W0 + 3 * MIN, t));
    memset(&b2, 0, sizeof b2);
    struct ingest_error e;
    if (ingest_parse(g_cfg, INGEST_ATTRIBUTIONS, body, (size_t)n, NOW, &b2.b, &e) != 0)
        fail_msg("%s at %s", e.msg, e.path);
    struct grp_report *r[] = {&a1, &b2};
    struct sg_item it[2];
    write_group(r, 2, it);
    assert_int_equal(it[0].rc, 0);
    assert_int_equal(it[1].rc, 0);
    PGresult *q = PQexec(g_db, "SELECT seq, spool_dropped_reports, local_sites::text"
                               " FROM flow_reports WHERE agent_id = 'gw' ORDER BY seq");
    assert_int_equal(PQresultStatus(q), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(q), 2);
    assert_string_equal(PQgetvalue(q, 0, 1), "0");
    assert_string_equal(PQgetvalue(q, 0, 2), "{a}"); /* 10.0.1.x */
    assert_string_equal(PQgetvalue(q, 1, 1), "3");
    assert_string_equal(PQgetvalue(q, 1, 2), "{b}"); /* 10.0.2.9 */
    PQclear(q);
    long long rows = num("SELECT count(*) FROM flow_reports");
    const char *stats = "FROM pg_stat_user_tables WHERE relname LIKE 'flow\\_reports\\_p%%'";
    long long ins = 0;
    for (int k = 0; k < 150 && (ins = num("SELECT coalesce(sum(n_tup_ins), 0) %s", stats)) < rows;
         k++)
        usleep(100000);
    if (ins < rows)
        fail_msg("the store's backend did not report its inserts in 15 s (%lld of %lld)", ins,
                 rows);
    assert_int_equal(num("SELECT coalesce(sum(n_tup_upd), 0) %s", stats), 0);
    grp_report_free(&a1), grp_report_free(&b2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_with_resend_inside),
        cmocka_unit_test(test_group_with_stored_report),
        cmocka_unit_test(test_group_one_fails),
        cmocka_unit_test(test_report_row_written_once),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
