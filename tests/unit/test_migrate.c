/* Migrations on a real PostgreSQL: the contract's tables and columns exist with their types
 * (checked through information_schema against DESIGN.md, written out here by hand), extra columns
 * all have defaults, migrate is idempotent and safe from two processes at once, partitions are
 * made ahead and pruned whole, an upgrade to sql/020 keeps the hourly owner rows it finds, an
 * upgrade to sql/021 keeps every row and every reader's answer and index, an upgrade to sql/024
 * moves every flow record into flow_packed and reads it back the same through the view. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "db.h"
#include "harness.h"
#include "timeutil.h"

static const char *g_conn;

struct col {
    const char *table, *column, *type;
};

/* DESIGN.md "PostgreSQL": the stable columns and their types. */
static const struct col contract[] = {
    {"heatmap_cells", "window_start", "timestamp with time zone"},
    {"heatmap_cells", "window_seconds", "integer"},
    {"heatmap_cells", "src_site", "text"},
    {"heatmap_cells", "dst_site", "text"},
    {"heatmap_cells", "observed_bytes", "bigint"},
    {"heatmap_cells", "observed_payload_bytes", "bigint"},
    {"heatmap_cells", "attributed_bytes", "bigint"},
    {"heatmap_cells", "socket_bytes", "bigint"},
    {"heatmap_cells", "nfs_bytes", "bigint"},
    {"heatmap_cells", "service_bytes", "bigint"},
    {"heatmap_cells", "unattributed_bytes", "bigint"},
    {"heatmap_cells", "coverage", "double precision"},
    {"heatmap_cells", "status", "text"},
    {"gap_alerts", "id", "bigint"},
    {"gap_alerts", "kind", "text"},
    {"gap_alerts", "src_site", "text"},
    {"gap_alerts", "dst_site", "text"},
    {"gap_alerts", "state", "text"},
    {"gap_alerts", "opened_at", "timestamp with time zone"},
    {"gap_alerts", "resolved_at", "timestamp with time zone"},
    {"gap_alerts", "first_window", "timestamp with time zone"},
    {"gap_alerts", "last_window", "timestamp with time zone"},
    {"gap_alerts", "peak_unattributed_bytes", "bigint"},
    {"gap_alerts", "peak_ratio", "double precision"},
    {"gap_alerts", "summary", "text"},
    {"attribution_rollup", "window_start", "timestamp with time zone"},
    {"attribution_rollup", "src_site", "text"},
    {"attribution_rollup", "dst_site", "text"},
    {"attribution_rollup", "source", "text"},
    {"attribution_rollup", "workflow", "text"},
    {"attribution_rollup", "user_name", "text"},
    {"attribution_rollup", "program", "text"},
    {"attribution_rollup", "host", "text"},
    {"attribution_rollup", "bytes", "bigint"},
};

static PGresult *q(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    return r;
}

static void test_contract_columns(void **state)
{
    (void)state;
    char err[512];
    PGconn *db = db_connect_str(g_conn, err, sizeof(err));
    assert_non_null(db);
    for (size_t i = 0; i < sizeof(contract) / sizeof(contract[0]); i++) {
        const char *p[2] = {contract[i].table, contract[i].column};
        PGresult *r =
            PQexecParams(db,
                         "SELECT data_type FROM information_schema.columns WHERE "
                         "table_schema = 'public' AND table_name = $1 AND column_name = $2",
                         2, NULL, p, NULL, NULL, 0);
        if (PQntuples(r) != 1)
            fail_msg("%s.%s is missing", contract[i].table, contract[i].column);
        assert_string_equal(PQgetvalue(r, 0, 0), contract[i].type);
        PQclear(r);
    }
    /* every column beyond the contract has a default (or is nullable), so inserts naming only
     * the contract's columns work */
    PGresult *r = q(db, "SELECT table_name, column_name FROM information_schema.columns c WHERE "
                        "table_schema = 'public' AND table_name IN ('heatmap_cells', 'gap_alerts', "
                        "'attribution_rollup') AND is_nullable = 'NO' AND column_default IS NULL");
    for (int i = 0; i < PQntuples(r); i++) {
        int in_contract = 0;
        for (size_t k = 0; k < sizeof(contract) / sizeof(contract[0]); k++)
            if (strcmp(contract[k].table, PQgetvalue(r, i, 0)) == 0 &&
                strcmp(contract[k].column, PQgetvalue(r, i, 1)) == 0)
                in_contract = 1;
        if (!in_contract)
            fail_msg("%s.%s is NOT NULL without a default", PQgetvalue(r, i, 0),
                     PQgetvalue(r, i, 1));
    }
    PQclear(r);
    PQclear(q(db, "BEGIN"));
    PQclear(q(db, "INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, "
                  "observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, "
                  "nfs_bytes, service_bytes, unattributed_bytes, coverage, status) VALUES "
                  "('2026-11-29T18:53:00Z', 60, 'nyc', 'chi', 100, 90, 80, 50, 20, 10, 10, 0.888, "
                  "'warn')"));
    PQclear(q(db, "INSERT INTO gap_alerts (kind, src_site, dst_site, state, opened_at, "
                  "first_window, last_window, peak_unattributed_bytes, peak_ratio, summary) "
                  "VALUES ('gap', 'nyc', 'chi', 'open', now(), now(), now(), 5, 0.5, 's')"));
    PQclear(q(db, "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, "
                  "workflow, user_name, program, host, bytes) VALUES ('2026-11-29T18:53:00Z', "
                  "'nyc', 'chi', 'socket', 'w', 'u', 'p', 'h', 80)"));
    /* at most one open alert per (kind, pair) */
    PGresult *dup = PQexec(db, "INSERT INTO gap_alerts (kind, src_site, dst_site, state) VALUES "
                               "('gap', 'nyc', 'chi', 'open')");
    assert_int_equal(PQresultStatus(dup), PGRES_FATAL_ERROR);
    PQclear(dup);
    PQclear(q(db, "ROLLBACK"));
    /* the view and the partitioned raw tables */
    r = q(db, "SELECT count(*) FROM information_schema.views WHERE table_name = 'coverage_weekly'");
    assert_string_equal(PQgetvalue(r, 0, 0), "1");
    PQclear(r);
    r = q(db, "SELECT count(*) FROM pg_class WHERE relkind = 'p' AND relname IN "
              "('counter_samples', 'flow_reports', 'flow_packed', 'transfers')");
    assert_string_equal(PQgetvalue(r, 0, 0), "4");
    PQclear(r);
    r = q(db, "SELECT count(*) FROM information_schema.tables WHERE table_name IN ('sites', "
              "'links', 'schema_migrations', 'window_state', 'link_windows')");
    assert_string_equal(PQgetvalue(r, 0, 0), "5");
    PQclear(r);
    PQfinish(db);
}

static void test_migrate_twice_and_concurrently(void **state)
{
    (void)state;
    char err[512];
    PGconn *db = db_connect_str(g_conn, err, sizeof(err));
    int applied = -1;
    assert_int_equal(db_migrate(db, &applied, err, sizeof(err)), 0);
    assert_int_equal(applied, 0); /* already applied by the harness */
    PQclear(q(db, "DROP DATABASE IF EXISTS wl_concurrent"));
    PQclear(q(db, "CREATE DATABASE wl_concurrent"));
    char conn2[512];
    snprintf(conn2, sizeof(conn2), "%s", g_conn);
    assert_non_null(strstr(g_conn, "dbname=wanledger"));
    snprintf(conn2, sizeof(conn2), "%.*sdbname=wl_concurrent%s",
             (int)(strstr(g_conn, "dbname=") - g_conn), g_conn,
             strstr(g_conn, "dbname=wanledger") + strlen("dbname=wanledger"));
    pid_t kids[2];
    for (int k = 0; k < 2; k++) {
        kids[k] = fork();
        if (kids[k] == 0) {
            char e[512];
            int a = 0;
            PGconn *c = db_connect_str(conn2, e, sizeof(e));
            int rc = c ? db_migrate(c, &a, e, sizeof(e)) : -1;
            if (rc != 0)
                fprintf(stderr, "child %d: %s\n", k, e);
            _exit(rc == 0 ? (a > 0 ? 10 : 11) : 1);
        }
    }
    int st0, st1;
    waitpid(kids[0], &st0, 0);
    waitpid(kids[1], &st1, 0);
    /* both succeed; exactly one of them applied the files */
    assert_true(WIFEXITED(st0) && WIFEXITED(st1));
    int a = WEXITSTATUS(st0), b = WEXITSTATUS(st1);
    assert_true((a == 10 && b == 11) || (a == 11 && b == 10));
    PGconn *c2 = db_connect_str(conn2, err, sizeof(err));
    PGresult *r = q(c2, "SELECT count(*) FROM schema_migrations");
    char want[16];
    snprintf(want, sizeof(want), "%u", db_n_migrations);
    assert_string_equal(PQgetvalue(r, 0, 0), want);
    PQclear(r);
    PQfinish(c2);
    PQfinish(db);
}

static void test_partitions_and_prune(void **state)
{
    (void)state;
    char err[512];
    PGconn *db = db_connect_str(g_conn, err, sizeof(err));
    int64_t day = 86400 * TM_USEC_PER_SEC;
    int64_t now = tm_now_us();
    /* 40 days ago .. 38 days ago, and today */
    assert_int_equal(db_ensure_partitions(db, now - 40 * day, now - 38 * day, err, sizeof(err)), 0);
    assert_int_equal(db_ensure_partitions(db, now, now + day, err, sizeof(err)), 0);
    PGresult *r = q(db, "SELECT count(*) FROM pg_inherits i JOIN pg_class p ON p.oid = "
                        "i.inhparent WHERE p.relname = 'transfers'");
    int before = atoi(PQgetvalue(r, 0, 0));
    PQclear(r);
    assert_true(before >= 5);
    /* a row in an old partition and one today */
    char ts_old[TM_RFC3339_LEN], ts_new[TM_RFC3339_LEN], sql[512];
    tm_format_rfc3339(now - 39 * day, ts_old);
    tm_format_rfc3339(now, ts_new);
    snprintf(sql, sizeof(sql),
             "INSERT INTO transfers (service, id, src, dst, bytes, start_at, end_at) VALUES "
             "('s', 'old', 'nyc', 'chi', 1, '%s', '%s'), ('s', 'new', 'nyc', 'chi', 1, '%s', '%s')",
             ts_old, ts_old, ts_new, ts_new);
    PQclear(q(db, sql));
    int dropped = -1;
    assert_int_equal(db_prune(db, now - 30 * day, &dropped, err, sizeof(err)), 0);
    assert_int_equal(dropped, 3 * 4); /* 3 old days x 4 raw tables */
    r = q(db, "SELECT id FROM transfers ORDER BY id");
    assert_int_equal(PQntuples(r), 1);
    assert_string_equal(PQgetvalue(r, 0, 0), "new");
    PQclear(r);
    /* writing into a day with no partition fails loudly rather than vanishing */
    tm_format_rfc3339(now - 39 * day, ts_old);
    snprintf(sql, sizeof(sql),
             "INSERT INTO transfers (service, id, src, dst, bytes, start_at, end_at) VALUES "
             "('s', 'x', 'a', 'b', 1, '%s', '%s')",
             ts_old, ts_old);
    PGresult *bad = PQexec(db, sql);
    assert_int_equal(PQresultStatus(bad), PGRES_FATAL_ERROR);
    PQclear(bad);
    PQfinish(db);
}

static void test_migrate_command(void **state)
{
    (void)state;
    /* `wanledger migrate` against the same cluster: loads sites and links from the example */
    const char *dir = th_tmpdir("mig");
    char cfgpath[512];
    snprintf(cfgpath, sizeof(cfgpath), "%s/config.json", dir);
    th_sh("cp %s/examples/tokens.json %s/examples/community %s/examples/snmp-auth "
          "%s/examples/snmp-priv %s/ && chmod 600 %s/tokens.json %s/community %s/snmp-auth "
          "%s/snmp-priv",
          getenv("WL_SOURCE_DIR"), getenv("WL_SOURCE_DIR"), getenv("WL_SOURCE_DIR"),
          getenv("WL_SOURCE_DIR"), dir, dir, dir, dir, dir);
    assert_int_equal(th_sh("sed 's|\"database\": \"[^\"]*\"|\"database\": \"%s\"|' "
                           "%s/examples/config.json > %s",
                           g_conn, getenv("WL_SOURCE_DIR"), cfgpath),
                     0);
    assert_int_equal(th_sh("%s --config %s migrate", th_bin("wanledger"), cfgpath), 0);
    char err[512];
    PGconn *db = db_connect_str(g_conn, err, sizeof(err));
    PGresult *r = q(db, "SELECT (SELECT count(*) FROM sites), (SELECT count(*) FROM links), "
                        "(SELECT prefixes::text FROM sites WHERE name = 'nyc')");
    assert_string_equal(PQgetvalue(r, 0, 0), "3");
    assert_string_equal(PQgetvalue(r, 0, 1), "4");
    assert_string_equal(PQgetvalue(r, 0, 2), "{10.1.0.0/16,fd00:1::/48}");
    PQclear(r);
    PQfinish(db);
}

static long long num(PGconn *db, const char *sql)
{
    PGresult *r = q(db, sql);
    long long v = PQgetisnull(r, 0, 0) ? -1 : atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* A fresh database `name` migrated up to, not including, migration `upto` (whose file must be
 * `next`), as an older release left it; *applied: the migrations applied. */
static PGconn *db_before(const char *name, int upto, const char *next, unsigned *applied)
{
    char err[512], ci[1024], sql[256];
    PGconn *db = db_connect_str(g_conn, err, sizeof(err));
    assert_non_null(db);
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s", name);
    PQclear(q(db, sql));
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
    PQclear(q(db, sql));
    PQfinish(db);
    snprintf(ci, sizeof(ci), "%s dbname=%s", g_conn, name); /* the last dbname wins */
    db = db_connect_str(ci, err, sizeof(err));
    assert_non_null(db);
    PQclear(q(db, "CREATE TABLE schema_migrations (version int PRIMARY KEY, name text NOT NULL, "
                  "applied_at timestamptz NOT NULL DEFAULT now())"));
    unsigned i = 0;
    for (; i < db_n_migrations && atoi(db_migrations[i].name) < upto; i++) {
        PQclear(q(db, "BEGIN"));
        PQclear(q(db, db_migrations[i].sql));
        snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations VALUES (%d, '%s')",
                 atoi(db_migrations[i].name), db_migrations[i].name);
        PQclear(q(db, sql));
        PQclear(q(db, "COMMIT"));
    }
    assert_true(i < db_n_migrations);
    assert_string_equal(db_migrations[i].name, next);
    *applied = i;
    return db;
}

/* Closes db and drops database name. */
static void db_drop(PGconn *db, const char *name)
{
    char err[512], sql[256];
    PQfinish(db);
    db = db_connect_str(g_conn, err, sizeof(err));
    assert_non_null(db);
    snprintf(sql, sizeof(sql), "DROP DATABASE %s", name);
    PQclear(q(db, sql));
    PQfinish(db);
}

/* An upgrade to sql/020 with owner rows in place (a database migrated up to 019, its hourly rows
 * kept by 013's triggers): the hours that had rows are folded, their hourly rows stay the sums of
 * their windows, a writer after the upgrade keeps a folded hour so and adds nothing for an hour
 * that is not folded, the range reader gives the same bytes, the wide keys are gone. */
static void test_upgrade_owner_hours(void **state)
{
    (void)state;
    char err[512];
    unsigned i;
    PGconn *db = db_before("wl_upgrade_020", 20, "020_owner_hours.sql", &i);
    /* 019's world: two windows of 10:00, one of 11:00, hourly rows by the triggers */
    PQclear(q(db, "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, "
                  "workflow, user_name, program, host, bytes) VALUES "
                  "('2026-11-29T10:00:00Z', 'nyc', 'chi', 'socket', 'w', 'u', 'p', 'h', 80), "
                  "('2026-11-29T10:01:00Z', 'nyc', 'chi', 'socket', 'w', 'u', 'p', 'h', 20), "
                  "('2026-11-29T10:01:00Z', 'nyc', 'chi', 'socket', 'w2', 'u', 'p', 'h', 5), "
                  "('2026-11-29T11:30:00Z', 'chi', 'nyc', 'nfs', 'w', 'u', 'p', 'h', 7)"));
    assert_int_equal(num(db, "SELECT count(*) FROM attribution_rollup_hourly"), 3);
    int applied = 0;
    if (db_migrate(db, &applied, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(applied, (int)(db_n_migrations - i));
    assert_int_equal(num(db, "SELECT count(*) FROM attribution_hours WHERE hour_start IN "
                             "('2026-11-29T10:00:00Z', '2026-11-29T11:00:00Z')"),
                     2);
    assert_int_equal(num(db, "SELECT count(*) FROM attribution_hours"), 2);
    assert_int_equal(num(db, "SELECT bytes * 10 + windows FROM attribution_rollup_hourly WHERE "
                             "hour_start = '2026-11-29T10:00:00Z' AND workflow = 'w'"),
                     1002);
    /* after the upgrade: a folded hour kept by the trigger, an unfolded one left to its windows */
    PQclear(q(db, "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, "
                  "workflow, user_name, program, host, bytes) VALUES "
                  "('2026-11-29T10:02:00Z', 'nyc', 'chi', 'socket', 'w', 'u', 'p', 'h', 300), "
                  "('2026-11-29T13:00:00Z', 'nyc', 'chi', 'socket', 'w', 'u', 'p', 'h', 9)"));
    assert_int_equal(num(db, "SELECT bytes * 10 + windows FROM attribution_rollup_hourly WHERE "
                             "hour_start = '2026-11-29T10:00:00Z' AND workflow = 'w'"),
                     4003);
    assert_int_equal(num(db, "SELECT count(*) FROM attribution_rollup_hourly WHERE hour_start = "
                             "'2026-11-29T13:00:00Z'"),
                     0);
    assert_int_equal(num(db, "SELECT sum(bytes) FROM wl_attribution_range("
                             "'2026-11-29T09:00:00Z', '2026-11-29T14:00:00Z')"),
                     80 + 20 + 5 + 7 + 300 + 9);
    assert_int_equal(num(db, "SELECT count(*) FROM pg_constraint WHERE conname IN "
                             "('attribution_rollup_pkey', 'dependency_rollup_pkey')"),
                     0);
    assert_int_equal(num(db, "SELECT count(*) FROM pg_indexes WHERE indexname IN "
                             "('attribution_packed_pkey', 'dependency_packed_pkey')"),
                     2); /* the owner and dependency rows packed since sql/022, 023 */
    db_drop(db, "wl_upgrade_020");
}

static const char *str(PGconn *db, const char *sql, char *out, size_t len)
{
    PGresult *r = q(db, sql);
    snprintf(out, len, "%s", PQntuples(r) && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    return out;
}

/* Whether the plan of sql (sequential scans off: the tables are tiny) reads index idx with an
 * index condition on column col (an index the condition cannot use is only scanned whole). */
static bool plan_uses(PGconn *db, const char *sql, const char *idx, const char *col)
{
    char ex[1024];
    snprintf(ex, sizeof(ex), "EXPLAIN (COSTS OFF) %s", sql);
    PQclear(q(db, "SET enable_seqscan = off"));
    PGresult *r = q(db, ex);
    bool scan = false, cond = false;
    for (int i = 0; i < PQntuples(r); i++) {
        const char *l = PQgetvalue(r, i, 0);
        scan = scan || strstr(l, idx) != NULL;
        cond = cond || (strstr(l, "Index Cond") && strstr(l, col));
    }
    PQclear(r);
    PQclear(q(db, "RESET enable_seqscan"));
    return scan && cond;
}

/* The readers' lookups and their indexes: by pair (top.c, hm_cell.c, alerts), by selector
 * (hm_deps.c), by window (recon_db_diff.c, the fold), the hourly pair (wl_attribution_range). */
/* packed: after sql/022 and 023, where the owner and dependency rows' indexes are those of
 * attribution_packed and dependency_packed */
static void check_plans(PGconn *db, bool packed)
{
    static const char *const plans[][3] = {
        {"SELECT sum(bytes) FROM attribution_rollup WHERE src_site = 'Zürich' AND dst_site = "
         "'zeta' AND window_start >= '2026-11-29T10:00:00Z'",
         "attribution_rollup_pair", "src_site"},
        {"SELECT sum(bytes_out) FROM dependency_rollup WHERE workflow = 'wf-b' AND window_start "
         ">= '2026-11-29T10:00:00Z'",
         "dependency_rollup_workflow", "workflow"},
        {"SELECT sum(bytes_out) FROM dependency_rollup WHERE program = 'p'",
         "dependency_rollup_program", "program"},
        {"SELECT count(*) FROM attribution_rollup WHERE window_start = '2026-11-29T10:01:00Z'",
         "attribution_rollup_window", "window_start"},
        {"SELECT sum(bytes) FROM attribution_rollup_hourly WHERE src_site = 'Zürich' AND dst_site "
         "= 'zeta'",
         "attribution_rollup_hourly_pair", "src_site"},
    };
    for (size_t k = 0; k < sizeof(plans) / sizeof(plans[0]); k++) {
        const char *index = plans[k][1];
        if (packed && strcmp(index, "attribution_rollup_pair") == 0)
            index = "attribution_packed_pair";
        if (packed && strcmp(index, "attribution_rollup_window") == 0)
            index = "attribution_packed_pkey";
        if (packed && strncmp(index, "dependency_rollup_", 18) == 0)
            index = strcmp(index, "dependency_rollup_workflow") == 0 ? "dependency_packed_workflow"
                                                                     : "dependency_packed_program";
        if (!plan_uses(db, plans[k][0], index, plans[k][2]))
            fail_msg("no index condition on %s: %s", index, plans[k][0]);
    }
}

/* The readers' orders and sums over the owner and dependency rows, as one text. */
#define UPGRADE_021_ANSWERS                                                                        \
    "SELECT concat_ws(' | ', (SELECT string_agg(concat_ws(',', src_site, dst_site, workflow, "     \
    "host, bytes), ';' ORDER BY src_site, dst_site, workflow, host, window_start) FROM "           \
    "attribution_rollup), "                                                                        \
    "(SELECT string_agg(concat_ws(',', src_site, workflow, windows, bytes), ';' ORDER BY "         \
    "src_site, workflow) FROM attribution_rollup_hourly), (SELECT string_agg(concat_ws(',', "      \
    "workflow, endpoint, bytes_out), ';' ORDER BY workflow, endpoint) FROM dependency_rollup), "   \
    "(SELECT max(workflow) || min(src_site) FROM attribution_rollup), (SELECT count(*) FROM "      \
    "attribution_rollup WHERE src_site > 'Z' AND src_site < 'é'), (SELECT string_agg(workflow "   \
    "|| ':' || bytes, ';' ORDER BY workflow, bytes) FROM "                                         \
    "wl_attribution_range('2026-11-29T09:00:00Z', "                                                \
    "'2026-11-29T12:00:00Z')))"

/* An upgrade to sql/021 with owner, hourly and dependency rows in place (non-ASCII names
 * included): every row kept, every reader's order (the databases' C.UTF-8 is code point order),
 * comparison and sum the same as before, the index names kept and still used by the readers'
 * queries, the triggers still keeping a folded hour; heatmap_cells_hourly with room for HOT
 * updates. */
static void test_upgrade_write_phase(void **state)
{
    (void)state;
    char err[512], before[2048], after[2048];
    unsigned i;
    PGconn *db = db_before("wl_upgrade_021", 21, "021_write_phase.sql", &i);
    /* 020's world: hour 10:00 folded (its hourly rows by the trigger), 11:00 not */
    PQclear(q(db, "INSERT INTO attribution_hours (hour_start) VALUES ('2026-11-29T10:00:00Z')"));
    PQclear(q(db,
              "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, "
              "workflow, user_name, program, host, bytes) VALUES "
              "('2026-11-29T10:00:00Z', 'Zürich', 'zeta', 'socket', 'wf-b', 'u', 'p', 'h1', 80), "
              "('2026-11-29T10:00:00Z', 'zeta', 'Zürich', 'socket', 'wf-a', 'u', 'p', 'h1', 7), "
              "('2026-11-29T10:01:00Z', 'Zürich', 'zeta', 'socket', 'wf-b', 'u', 'p', 'h1', 20), "
              "('2026-11-29T10:01:00Z', 'Ärhus', 'zeta', 'nfs', 'Wf-c', 'u', 'p', 'h2', 5), "
              "('2026-11-29T10:01:00Z', 'Zurich', 'zeta', 'socket', 'wf-é', 'u', 'p', 'h1', 3), "
              "('2026-11-29T11:30:00Z', 'éire', 'Zurich', 'socket', 'wf-b', 'u', 'p', 'h3', 9)"));
    PQclear(q(db, "INSERT INTO dependency_rollup (window_start, local_site, workflow, user_name, "
                  "program, remote_site, kind, endpoint, bytes_out) VALUES "
                  "('2026-11-29T10:00:00Z', 'Zürich', 'wf-b', 'u', 'p', 'zeta', 'peer', "
                  "'10.0.0.1:5201', 11), "
                  "('2026-11-29T10:00:00Z', 'Zürich', 'Wf-c', 'u', 'p', 'zeta', 'service', "
                  "'Ärhus-db:5432', 12), "
                  "('2026-11-29T10:01:00Z', 'zeta', 'wf-é', 'u', 'p', 'Zürich', 'nfs', "
                  "'nas:/e', 13)"));
    str(db, UPGRADE_021_ANSWERS, before, sizeof(before));
    /* code point order (C.UTF-8): upper case, lower case, then Ä, é, ü */
    assert_non_null(strstr(before, "Zurich,zeta,wf-é,h1,3;Zürich,zeta,wf-b,h1,80;Zürich,zeta,"
                                   "wf-b,h1,20;zeta,Zürich,wf-a,h1,7;Ärhus,zeta,Wf-c,h2,5;éire,"));
    check_plans(db, false);
    int applied = 0;
    if (db_migrate(db, &applied, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(applied, (int)(db_n_migrations - i));
    str(db, UPGRADE_021_ANSWERS, after, sizeof(after));
    assert_string_equal(after, before);
    assert_int_equal(num(db, "SELECT count(*) FROM pg_indexes WHERE indexname IN "
                             "('attribution_packed_pair', 'attribution_packed_pkey', "
                             "'attribution_rollup_hourly_pkey', 'attribution_rollup_hourly_pair', "
                             "'dependency_packed_workflow', 'dependency_packed_program', "
                             "'dependency_packed_user', 'dependency_packed_pkey')"),
                     8);
    check_plans(db, true);
    /* the cells' hourly rows leave room on their pages for the next window's update (HOT) */
    char opts[128];
    assert_string_equal(str(db,
                            "SELECT reloptions::text FROM pg_class WHERE relname = "
                            "'heatmap_cells_hourly'",
                            opts, sizeof(opts)),
                        "{fillfactor=50}");
    /* the triggers keep a folded hour after the upgrade */
    PQclear(q(db,
              "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, "
              "workflow, user_name, program, host, bytes) VALUES "
              "('2026-11-29T10:02:00Z', 'Zürich', 'zeta', 'socket', 'wf-b', 'u', 'p', 'h1', 300)"));
    assert_int_equal(num(db, "SELECT bytes * 10 + windows FROM attribution_rollup_hourly WHERE "
                             "hour_start = '2026-11-29T10:00:00Z' AND src_site = 'Zürich'"),
                     4003);
    /* writes through the views (sql/022, 023): an UPDATE and a DELETE of one row each change
     * that row only, the folded hour following the owner rows */
    PQclear(q(db, "UPDATE attribution_rollup SET bytes = 100 WHERE window_start = "
                  "'2026-11-29T10:02:00Z' AND src_site = 'Zürich' AND workflow = 'wf-b'"));
    assert_int_equal(num(db, "SELECT bytes * 10 + windows FROM attribution_rollup_hourly WHERE "
                             "hour_start = '2026-11-29T10:00:00Z' AND src_site = 'Zürich'"),
                     2003);
    PQclear(q(db, "DELETE FROM attribution_rollup WHERE window_start = '2026-11-29T10:00:00Z' AND "
                  "src_site = 'Zürich'"));
    assert_int_equal(num(db, "SELECT bytes * 10 + windows FROM attribution_rollup_hourly WHERE "
                             "hour_start = '2026-11-29T10:00:00Z' AND src_site = 'Zürich'"),
                     1202);
    assert_int_equal(num(db, "SELECT count(*) FROM attribution_packed WHERE window_start = "
                             "'2026-11-29T10:00:00Z' AND src_site = 'Zürich'"),
                     0);
    PQclear(q(db, "INSERT INTO dependency_rollup (window_start, local_site, workflow, remote_site, "
                  "kind, endpoint, bytes_out) VALUES ('2026-11-29T10:00:00Z', 'Zürich', 'wf-b', "
                  "'zeta', 'peer', '10.0.0.2:22', 40)"));
    PQclear(q(db, "UPDATE dependency_rollup SET bytes_in = 5 WHERE endpoint = '10.0.0.1:5201'"));
    PQclear(q(db, "DELETE FROM dependency_rollup WHERE endpoint = 'Ärhus-db:5432'"));
    char deps[256];
    assert_string_equal(str(db,
                            "SELECT string_agg(concat_ws(',', endpoint, bytes_out, bytes_in, "
                            "user_name), ';' ORDER BY endpoint) FROM dependency_rollup WHERE "
                            "local_site = 'Zürich'",
                            deps, sizeof(deps)),
                        "10.0.0.1:5201,11,5,u;10.0.0.2:22,40,0,");
    assert_int_equal(num(db, "SELECT count(*) FROM dependency_packed WHERE local_site = 'Zürich'"),
                     2);
    db_drop(db, "wl_upgrade_021");
}

/* 023's flow records: two days' partitions; a report with an idx gap (two runs), IPv4 and IPv6
 * addresses (one with a prefix length), NULLs and '' in the names, a NULL proto and role; an NFS
 * report (no socket columns, counts 0 but its own); a 250-flow report (cut into rows of 100); a
 * flow with every optional column NULL. */
#define UPGRADE_024_FLOWS                                                                          \
    "INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "            \
    "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, pid, uid, "       \
    "user_name, program, workflow, container, namespace, pod, container_name) VALUES "             \
    "('2026-11-29T10:00:00Z', 'a1', 1, 0, 'h1', 'socket', 'tcp', '10.1.0.3', 40000, "              \
    "'10.2.0.2', 5201, 'client', 1000, 20, 4242, 1000, 'alice', 'iperf3', 'wf-1', 'c0ffee', "      \
    "'ns-a', 'pod-a', 'main'), "                                                                   \
    "('2026-11-29T10:00:00Z', 'a1', 1, 1, 'h1', 'socket', NULL, 'fd00:1::5', 40001, "              \
    "'fd00:2::7', 443, NULL, 0, 7, NULL, NULL, '', 'prøg', NULL, NULL, '', '', ''), "             \
    "('2026-11-29T10:00:00Z', 'a1', 1, 2, 'h1', 'socket', 'udp', '10.2.0.9', 53, "                 \
    "'10.1.0.0/16', 53, 'server', 3, 0, 1, 0, NULL, '', 'wf-1', '', 'ns-a', '', ''), "             \
    "('2026-11-29T10:00:00Z', 'a1', 1, 5, 'h1', 'socket', 'tcp', '10.1.0.3', 40005, "              \
    "'10.2.0.2', 22, 'unknown', 9223372036854775807, 1, 2147483647, -1, 'bob', 'ssh', "            \
    "'wf-2', NULL, '', 'pod-b', ''), "                                                             \
    "('2026-11-29T10:00:00Z', 'a1', 1, 6, 'h1', 'socket', 'tcp', NULL, NULL, NULL, NULL, "         \
    "'client', 5, 5, NULL, NULL, NULL, NULL, NULL, NULL, '', '', 'side')"

#define UPGRADE_024_NFS                                                                            \
    "INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, nfs_server, "       \
    "nfs_port, nfs_export, nfs_op, nfs_bytes, nfs_ops, user_name, program) VALUES "                \
    "('2026-11-29T10:01:00Z', 'a1', 2, 0, 'h1', 'nfs', 'fd00:2::9', 2049, '/export/a', "           \
    "'read', 65536, 16, 'alice', 'cp'), "                                                          \
    "('2026-11-29T10:01:00Z', 'a1', 2, 1, 'h1', 'nfs', '10.2.0.5', NULL, NULL, 'write', 0, 1, "    \
    "NULL, 'cp')"

#define UPGRADE_024_BULK                                                                           \
    "INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "            \
    "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, user_name, "      \
    "program, namespace) SELECT '2026-11-28T23:59:00Z', 'b2', 7, i, 'h2', 'socket', 'tcp', "       \
    "('10.1.1.' || i % 256)::inet, 30000 + i, '10.2.0.2', 443, 'client', i * 10, i % 3, "          \
    "CASE WHEN i % 2 = 0 THEN 'u' || i END, 'p', CASE WHEN i % 50 = 0 THEN 'ns' || i ELSE '' END " \
    "FROM generate_series(0, 249) i; "                                                             \
    "INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source) VALUES "            \
    "('2026-11-28T23:59:00Z', 'b2', 8, 0, 'h2', 'socket')"

/* Each flow_records row as its text (NULL and '' apart), every row of table t not in the view
 * and every row of the view not in t. */
#define UPGRADE_024_DIFF(t)                                                                        \
    "SELECT (SELECT count(*) FROM (SELECT s::text FROM " t " s EXCEPT ALL SELECT f::text FROM "    \
    "flow_records f) d) + (SELECT count(*) FROM (SELECT f::text FROM flow_records f EXCEPT ALL "   \
    "SELECT s::text FROM " t " s) d)"

/* An upgrade to sql/024 with flow records in place: every row, column for column, reads back
 * the same through the view; the runs packed as they should be (gap, cut at 100, NULL arrays
 * for all-NULL and all-default columns); partitions of the same days, lz4 on every array column
 * (and on a partition made after); the view's quals pushed down to one partition's scan; the
 * agent's sites the same; INSERT through the view with defaults and RETURNING, DELETE refused. */
static void test_upgrade_packed_flows(void **state)
{
    (void)state;
    char err[512], sites_before[64], sites_after[64], buf[256];
    unsigned i;
    PGconn *db = db_before("wl_upgrade_024", 24, "024_packed_flows.sql", &i);
    PQclear(q(db, "SELECT wl_ensure_partitions('2026-11-28', '2026-11-30')"));
    PQclear(q(db, "INSERT INTO sites VALUES ('nyc', '{10.1.0.0/16,fd00:1::/48}'), "
                  "('chi', '{10.2.0.0/16}')"));
    PQclear(q(db, UPGRADE_024_FLOWS));
    PQclear(q(db, UPGRADE_024_NFS));
    PQclear(q(db, UPGRADE_024_BULK));
    PQclear(q(db, "CREATE TABLE seed AS SELECT * FROM flow_records"));
    assert_int_equal(num(db, "SELECT count(*) FROM seed"), 5 + 2 + 250 + 1);
    str(db, "SELECT wl_agent_sites('a1', '{1,2}')::text", sites_before, sizeof(sites_before));
    assert_string_equal(sites_before, "{chi,nyc}");
    int applied = 0;
    if (db_migrate(db, &applied, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(applied, (int)(db_n_migrations - i));
    /* every value back */
    assert_int_equal(num(db, "SELECT count(*) FROM flow_records"), 5 + 2 + 250 + 1);
    assert_int_equal(num(db, UPGRADE_024_DIFF("seed")), 0);
    assert_string_equal(str(db,
                            "SELECT string_agg(agent_id || seq || '@' || idx0 || ':' || "
                            "cardinality(host), ',' ORDER BY agent_id, seq, idx0) FROM "
                            "flow_packed",
                            buf, sizeof(buf)),
                        "a11@0:3,a11@5:2,a12@0:2,b27@0:100,b27@100:100,b27@200:50,b28@0:1");
    /* NULL arrays: every element NULL (NFS rows' socket columns) or the default (their tx_bytes,
     * every Kubernetes name of the single flow) */
    assert_int_equal(num(db, "SELECT count(*) FROM flow_packed WHERE agent_id = 'a1' AND seq = 2 "
                             "AND local_addr IS NULL AND tx_bytes IS NULL AND rx_bytes IS NULL "
                             "AND namespace IS NULL AND nfs_server IS NOT NULL AND nfs_bytes IS "
                             "NOT NULL"),
                     1);
    assert_int_equal(num(db, "SELECT count(*) FROM flow_packed WHERE seq = 8 AND proto IS NULL "
                             "AND tx_bytes IS NULL AND namespace IS NULL AND pod IS NULL"),
                     1);
    /* the old table and its partitions gone; the new ones of the same days, compressed */
    assert_string_equal(
        str(db, "SELECT relkind FROM pg_class WHERE relname = 'flow_records'", buf, sizeof(buf)),
        "v");
    assert_int_equal(num(db, "SELECT count(*) FROM pg_class WHERE relname LIKE 'flow_records_p%'"),
                     0);
    assert_int_equal(num(db, "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = "
                             "i.inhrelid WHERE i.inhparent = 'flow_packed'::regclass AND "
                             "c.relname IN ('flow_packed_p20261128', 'flow_packed_p20261129', "
                             "'flow_packed_p20261130')"),
                     3);
    PQclear(q(db, "SELECT wl_ensure_partitions('2026-12-05', '2026-12-05')"));
    assert_int_equal(num(db, "SELECT count(*) FROM pg_attribute WHERE attrelid IN "
                             "('flow_packed'::regclass, 'flow_packed_p20261129'::regclass, "
                             "'flow_packed_p20261205'::regclass) AND attnum > 0 AND "
                             "attcompression = 'l' AND atttypid IN ('text[]'::regtype, "
                             "'inet[]'::regtype, 'int[]'::regtype, 'bigint[]'::regtype)"),
                     3 * 25);
    /* a report's flows: the quals on flow_packed's scan, of one partition */
    PGresult *r = q(db, "EXPLAIN (COSTS OFF) SELECT * FROM flow_records WHERE window_start = "
                        "'2026-11-29T10:00:00Z' AND agent_id = 'a1' AND seq = 1");
    int scans = 0, pushed = 0;
    for (int k = 0; k < PQntuples(r); k++) {
        const char *l = PQgetvalue(r, k, 0);
        if (strstr(l, " on flow_packed_p"))
            scans++;
        if (strstr(l, " on flow_packed_p20261129") && k + 1 < PQntuples(r) &&
            strstr(PQgetvalue(r, k + 1, 0), "agent_id = 'a1'"))
            pushed++;
    }
    PQclear(r);
    assert_int_equal(scans, 1);
    assert_int_equal(pushed, 1);
    str(db, "SELECT wl_agent_sites('a1', '{1,2}')::text", sites_after, sizeof(sites_after));
    assert_string_equal(sites_after, sites_before);
    /* written through the view: the old defaults, RETURNING, NOT NULLs; no DELETE */
    assert_string_equal(str(db,
                            "INSERT INTO flow_records (window_start, agent_id, seq, idx, host, "
                            "source, rx_bytes, pod) VALUES ('2026-11-29T10:02:00Z', 'c3', 1, 4, "
                            "'h3', 'socket', NULL, 'p') RETURNING concat_ws(',', idx, tx_bytes, "
                            "rx_bytes, nfs_ops, '[' || namespace || ']', pod)",
                            buf, sizeof(buf)),
                        "4,0,0,0,[],p");
    assert_string_equal(str(db,
                            "SELECT concat_ws(',', idx, tx_bytes, rx_bytes, nfs_ops, '[' || "
                            "namespace || ']', pod) FROM flow_records WHERE agent_id = 'c3'",
                            buf, sizeof(buf)),
                        "4,0,0,0,[],p");
    PGresult *bad = PQexec(db, "INSERT INTO flow_records (window_start, agent_id, seq, idx, "
                               "source) VALUES ('2026-11-29T10:02:00Z', 'c3', 1, 5, 'socket')");
    assert_int_equal(PQresultStatus(bad), PGRES_FATAL_ERROR);
    assert_non_null(strstr(PQresultErrorMessage(bad), "null value in column \"host\""));
    PQclear(bad);
    bad = PQexec(db, "DELETE FROM flow_records WHERE agent_id = 'c3'");
    assert_int_equal(PQresultStatus(bad), PGRES_FATAL_ERROR);
    assert_non_null(strstr(PQresultErrorMessage(bad), "cannot delete from view"));
    PQclear(bad);
    PQclear(q(db, "DELETE FROM flow_packed WHERE agent_id = 'c3'"));
    assert_int_equal(num(db, UPGRADE_024_DIFF("seed")), 0);
    db_drop(db, "wl_upgrade_024");
}

/* An upgrade to sql/026 with hourly rows that summed an incomplete window: the hour's byte sums
 * and seconds lose that window's (written here: ok 1000/900/800/100 and, after a poll gap, a
 * partial 300/270 observed against 700 attributed), its counts keep it; a later incomplete
 * window adds a count and no bytes; the range reader and the weekly view agree. */
static void test_upgrade_known_sums(void **state)
{
    (void)state;
    char err[512], buf[256];
    unsigned i;
    PGconn *db = db_before("wl_upgrade_026", 26, "026_known_sums.sql", &i);
    PQclear(q(db, "INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, "
                  "observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, "
                  "nfs_bytes, service_bytes, unattributed_bytes, coverage, status) VALUES "
                  "('2026-11-30T10:00:00Z', 60, 'nyc', 'chi', 1000, 900, 800, 800, 0, 0, 100, "
                  "0.8889, 'warn'), ('2026-11-30T10:01:00Z', 60, 'nyc', 'chi', 300, 270, 700, "
                  "700, 0, 0, 0, NULL, 'incomplete')"));
    static const char hour[] =
        "SELECT concat_ws(',', windows, seconds, observed_bytes, observed_payload_bytes, "
        "attributed_bytes, socket_bytes, unattributed_bytes, n_warn, n_incomplete) FROM "
        "heatmap_cells_hourly WHERE hour_start = '2026-11-30T10:00:00Z'";
    assert_string_equal(str(db, hour, buf, sizeof(buf)), "2,120,1300,1170,1500,1500,100,1,1");
    int applied = 0;
    if (db_migrate(db, &applied, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(applied, (int)(db_n_migrations - i));
    assert_string_equal(str(db, hour, buf, sizeof(buf)), "2,60,1000,900,800,800,100,1,1");
    PQclear(q(db, "INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, "
                  "observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, "
                  "nfs_bytes, service_bytes, unattributed_bytes, status) VALUES "
                  "('2026-11-30T10:02:00Z', 60, 'nyc', 'chi', 50, 45, 400, 400, 0, 0, 0, "
                  "'incomplete')"));
    assert_string_equal(str(db, hour, buf, sizeof(buf)), "3,60,1000,900,800,800,100,1,2");
    /* an hour's edge from the per-window rows (10:01-10:03) and the whole hour (10:00-11:00) */
    assert_string_equal(str(db,
                            "SELECT concat_ws(',', windows, seconds, observed_bytes, "
                            "attributed_bytes, n_incomplete) FROM wl_cells_range("
                            "'2026-11-30T10:01:00Z', '2026-11-30T10:03:00Z')",
                            buf, sizeof(buf)),
                        "2,0,0,0,2");
    assert_string_equal(str(db,
                            "SELECT concat_ws(',', windows, seconds, observed_bytes, "
                            "attributed_bytes, n_incomplete) FROM wl_cells_range("
                            "'2026-11-30T10:00:00Z', '2026-11-30T11:00:00Z')",
                            buf, sizeof(buf)),
                        "3,60,1000,800,2");
    assert_string_equal(str(db,
                            "SELECT concat_ws(',', observed_payload_bytes, attributed_bytes, "
                            "unattributed_bytes, round(coverage::numeric, 6), incomplete_windows, "
                            "windows) FROM coverage_weekly",
                            buf, sizeof(buf)),
                        "900,800,100,0.888889,2,3");
    db_drop(db, "wl_upgrade_026");
}

/* An upgrade to sql/029 with owners in place: they count as used today (kept for a whole results
 * retention from now), an owner numbered through the view afterwards is stamped today, and the
 * prune keeps what was used the day before the cutoff's day and deletes what is older. */
static void test_upgrade_owner_days(void **state)
{
    (void)state;
    char err[512], buf[256];
    unsigned i;
    PGconn *db = db_before("wl_upgrade_029", 29, "029_owner_days.sql", &i);
    PQclear(q(db, "INSERT INTO owners (source, workflow, user_name, program, host, namespace, "
                  "pod, container_name) VALUES ('socket', 'wf-a', 'u', 'p', 'h', '', '', '')"));
    int applied = 0;
    if (db_migrate(db, &applied, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(applied, (int)(db_n_migrations - i));
    assert_int_equal(num(db, "SELECT count(*) FROM owners WHERE last_day = current_date"), 1);
    PQclear(q(db, "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, "
                  "workflow, user_name, program, host, bytes) VALUES ('2020-01-01T10:00:00Z', "
                  "'nyc', 'chi', 'socket', 'wf-b', 'u', 'p', 'h', 5)"));
    PQclear(q(db, "UPDATE owners SET last_day = '2020-01-01' WHERE workflow = 'wf-b'"));
    PQclear(q(db, "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, "
                  "workflow, user_name, program, host, bytes) VALUES ('2020-01-01T10:01:00Z', "
                  "'nyc', 'chi', 'socket', 'wf-b', 'u', 'p', 'h', 6)"));
    assert_string_equal(str(db,
                            "SELECT string_agg(workflow || ':' || (last_day = current_date), ',' "
                            "ORDER BY workflow) FROM owners",
                            buf, sizeof(buf)),
                        "wf-a:true,wf-b:true");
    PQclear(q(db, "UPDATE owners SET last_day = '2020-01-09' WHERE workflow = 'wf-a'"));
    PQclear(q(db, "UPDATE owners SET last_day = '2020-01-08' WHERE workflow = 'wf-b'"));
    PQclear(q(db, "DELETE FROM attribution_packed"));
    assert_string_equal(str(db, "SELECT wl_prune_owners('2020-01-10T12:00:00Z')", buf, sizeof(buf)),
                        "1");
    assert_string_equal(str(db, "SELECT string_agg(workflow, ',') FROM owners", buf, sizeof(buf)),
                        "wf-a");
    db_drop(db, "wl_upgrade_029");
}

int main(void)
{
    g_conn = th_pg_default();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contract_columns),
        cmocka_unit_test(test_migrate_twice_and_concurrently),
        cmocka_unit_test(test_partitions_and_prune),
        cmocka_unit_test(test_migrate_command),
        cmocka_unit_test(test_upgrade_owner_hours),
        cmocka_unit_test(test_upgrade_write_phase),
        cmocka_unit_test(test_upgrade_packed_flows),
        cmocka_unit_test(test_upgrade_known_sums),
        cmocka_unit_test(test_upgrade_owner_days),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
