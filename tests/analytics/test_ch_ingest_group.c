/* The grouped commit of agent reports with ClickHouse configured (reconciler/store_group.h, the
 * outbox path): the group's fresh reports each get their ch_outbox block in the group's one
 * transaction, every block is handed to the flusher's memory queue only after the COMMIT (several
 * held at once: chstore_queue.h), a resend in the group adds no block, and a report the database
 * refuses (a CHECK constraint on ch_outbox that only the database knows) fails alone: its block
 * is neither queued nor stored. Drained into a real clickhouse-server, the FINAL counts and byte
 * sums are the ones the test put in the bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "chstore.h"
#include "chstore_flush.h"
#include "chstore_queue.h"
#include "config.h"
#include "db.h"
#include "grp_report.h"
#include "harness.h"
#include "store.h"
#include "store_group.h"
#include "th_clickhouse.h"

static PGconn *g_db;
static struct cfg *g_cfg;
static struct store *g_st;
static struct th_ch CH;
static const int64_t W0 = 1796119200000000LL; /* 2026-12-01T10:00:00Z */
#define NOW (W0 + 3600000000LL)

static long long num(const char *sql)
{
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

static long long ch(const char *agents, const char *what)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM wanledger.flow_records FINAL WHERE agent_id IN (%s)",
             what, agents);
    return th_ch_num(&CH, sql);
}

static void write_group(struct grp_report **r, size_t n, struct sg_item *it)
{
    for (size_t i = 0; i < n; i++) { /* the block built where parsed (as the workers do) for
                                      * every other one; the writer builds the others' */
        it[i] = (struct sg_item){.b = &r[i]->b};
        if (i % 2 == 0)
            store_group_prepare(g_cfg, &r[i]->b, &it[i].blk);
    }
    store_write_group(g_st, it, n);
}

static void drain(void)
{
    char err[512];
    if (chflush_drain(g_db, g_cfg, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(num("SELECT count(*) FROM ch_outbox"), 0);
}

static int setup(void **state)
{
    (void)state;
    th_ch_start(&CH, NULL);
    const char *pg = th_pg_default();
    char err[512];
    g_db = db_connect_str(pg, err, sizeof err);
    assert_non_null(g_db);
    char json[2048];
    snprintf(json, sizeof json,
             "{\"window_seconds\": 60, \"database\": \"%s\", \"listen\": \"127.0.0.1:1\","
             " \"sites\": [{\"name\": \"a\", \"prefixes\": [\"10.0.1.0/24\"]},"
             "             {\"name\": \"b\", \"prefixes\": [\"10.0.2.0/24\"]}],"
             " \"analytics\": {\"clickhouse\": {\"url\": \"%s\", \"database\": \"wanledger\","
             " \"password_file\": \"%s\"}}}",
             pg, CH.url, CH.password_file);
    struct cfg_errors errs = {0};
    g_cfg = cfg_parse("ch-ingest-group.json", json, &errs);
    assert_non_null(g_cfg);
    assert_true(g_cfg->clickhouse.enabled);
    if (chstore_ensure_schema(&g_cfg->clickhouse, err, sizeof err) != 0)
        fail_msg("%s", err);
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
    th_ch_stop(&CH);
    return 0;
}

/* Two fresh reports with flows, a resend of one, a report without flows: two outbox blocks,
 * both queued after the COMMIT, 30 flows in ClickHouse once. */
static void test_outbox_group(void **state)
{
    (void)state;
    struct grp_report k, l, k2, m;
    grp_report(&k, g_cfg, "ck", 1, W0, 20, 1000, 0, NOW);
    grp_report(&l, g_cfg, "cl", 1, W0 + 60000000LL, 10, 7000, 0, NOW);
    grp_report(&k2, g_cfg, "ck", 1, W0, 20, 1000, 0, NOW);
    grp_report(&m, g_cfg, "cm", 1, W0, 0, 0, 0, NOW);
    chq_enable(true); /* as a running flusher does */
    struct grp_report *r[] = {&k, &l, &k2, &m};
    struct sg_item it[4];
    write_group(r, 4, it);
    size_t stored[] = {20, 10, 0, 0};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(it[i].rc, 0);
        assert_int_equal(it[i].res.received, r[i]->flows);
        assert_int_equal(it[i].res.stored, stored[i]);
    }
    struct chq_state q;
    chq_state(&q);
    assert_int_equal(q.blocks, 2);
    assert_int_equal(q.rows, 30);
    chq_enable(false); /* the memory copies go; the blocks stay in ch_outbox */
    assert_int_equal(num("SELECT count(*) FROM ch_outbox"), 2);
    assert_int_equal(num("SELECT sum(n_rows) FROM ch_outbox"), 30);
    assert_int_equal(num("SELECT count(*) FROM flow_records"), 0);
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE agent_id IN ('ck','cl','cm')"),
                     3);
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE ch_pending"), 2);
    assert_int_equal(num("SELECT count(DISTINCT xmin::text) FROM flow_reports"), 1);
    assert_int_equal(num("SELECT count(*) FROM window_state WHERE dirty"), 2);
    drain();
    assert_int_equal(ch("'ck','cl','cm'", "count()"), 30);
    assert_int_equal(ch("'ck'", "sum(tx_bytes)"), k.tx_sum);
    assert_int_equal(ch("'cl'", "sum(tx_bytes)"), l.tx_sum);
    assert_int_equal(ch("'ck','cl'", "sum(rx_bytes)"), k.rx_sum + l.rx_sum);
    grp_report_free(&k), grp_report_free(&l), grp_report_free(&k2), grp_report_free(&m);

    /* a report alone, its block built where it was parsed: written with that block */
    struct grp_report q1;
    grp_report(&q1, g_cfg, "cq", 1, W0, 12, 50, 0, NOW);
    chq_enable(true);
    struct grp_report *one[] = {&q1};
    write_group(one, 1, it);
    assert_int_equal(it[0].rc, 0);
    assert_int_equal(it[0].res.stored, 12);
    chq_state(&q);
    assert_int_equal(q.blocks, 1);
    assert_int_equal(q.rows, 12);
    chq_enable(false);
    drain();
    assert_int_equal(ch("'cq'", "count()"), 12);
    assert_int_equal(ch("'cq'", "sum(tx_bytes)"), q1.tx_sum);
    grp_report_free(&q1);
}

/* One report of three is refused by the database (its outbox row breaks a CHECK): rolled back
 * and written one by one, the other two stored and shipped once, nothing of the third queued
 * or stored. */
static void test_outbox_group_one_fails(void **state)
{
    (void)state;
    exec("ALTER TABLE ch_outbox ADD CONSTRAINT test_poison CHECK (n_rows <> 7)");
    struct grp_report n, o, p;
    grp_report(&n, g_cfg, "cn", 1, W0, 5, 100, 0, NOW);
    grp_report(&o, g_cfg, "co", 1, W0, 7, 200, 0, NOW);
    grp_report(&p, g_cfg, "cp", 1, W0, 9, 300, 0, NOW);
    chq_enable(true);
    struct grp_report *r[] = {&n, &o, &p};
    struct sg_item it[3];
    write_group(r, 3, it);
    assert_int_equal(it[0].rc, 0);
    assert_int_equal(it[0].res.stored, 5);
    assert_int_equal(it[1].rc, -1);
    assert_non_null(strstr(it[1].err, "test_poison"));
    assert_int_equal(it[2].rc, 0);
    assert_int_equal(it[2].res.stored, 9);
    struct chq_state q;
    chq_state(&q);
    assert_int_equal(q.blocks, 2); /* the rolled-back group's blocks were dropped */
    assert_int_equal(q.rows, 14);
    chq_enable(false);
    exec("ALTER TABLE ch_outbox DROP CONSTRAINT test_poison");
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE agent_id = 'co'"), 0);
    assert_int_equal(num("SELECT count(*) FROM ch_outbox WHERE agent_id = 'co'"), 0);
    drain();
    assert_int_equal(ch("'cn','co','cp'", "count()"), 14);
    assert_int_equal(ch("'cn','cp'", "sum(tx_bytes)"), n.tx_sum + p.tx_sum);
    grp_report_free(&n), grp_report_free(&o), grp_report_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_outbox_group),
        cmocka_unit_test(test_outbox_group_one_fails),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
