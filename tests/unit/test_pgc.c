/* common/pgc.c against a real PostgreSQL: the session is set up (UTC, statement_timeout), errors
 * carry the server's message, a connection whose backend was terminated is reset by pgc_ensure,
 * and a server that is not there fails with a message naming where; pgc_pipeline runs a
 * transaction's statements in one round trip, and a failing one leaves the transaction aborted
 * (nothing of it is committed) and the connection usable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"
#include "pgc.h"

static const char *show(PGconn *db, const char *what, char *buf, size_t len)
{
    char err[512], sql[128];
    snprintf(sql, sizeof(sql), "SHOW %s", what);
    PGresult *r = pgc_query(db, what, sql, 0, NULL, err, sizeof(err));
    assert_non_null(r);
    snprintf(buf, len, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    return buf;
}

/* A connection option as libpq uses it (client side: keepalives, timeouts). */
static const char *opt(PGconn *db, const char *key, char *buf, size_t len)
{
    PQconninfoOption *o = PQconninfo(db);
    buf[0] = '\0';
    for (PQconninfoOption *p = o; p && p->keyword; p++)
        if (!strcmp(p->keyword, key) && p->val)
            snprintf(buf, len, "%s", p->val);
    PQconninfoFree(o);
    return buf;
}

static void test_session_errors_reconnect(void **state)
{
    (void)state;
    const char *ci = th_pg_default();
    char err[512], buf[64];
    PGconn *db = pgc_connect(ci, NULL, err, sizeof(err));
    assert_non_null(db);
    assert_string_equal(show(db, "TimeZone", buf, sizeof(buf)), "UTC");
    assert_string_equal(show(db, "statement_timeout", buf, sizeof(buf)), "5min");
    assert_string_equal(opt(db, "keepalives", buf, sizeof(buf)), "1");
    assert_string_equal(opt(db, "keepalives_idle", buf, sizeof(buf)), "30");
    assert_string_equal(opt(db, "connect_timeout", buf, sizeof(buf)), "10");
    char ci2[512];
    snprintf(ci2, sizeof(ci2), "%s connect_timeout=3", ci); /* the conninfo's own setting wins */
    PGconn *db2 = pgc_connect(ci2, NULL, err, sizeof(err));
    assert_non_null(db2);
    assert_string_equal(opt(db2, "connect_timeout", buf, sizeof(buf)), "3");
    PQfinish(db2);

    assert_int_equal(pgc_exec(db, "SELEC 1", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "syntax error"));
    const char *p[] = {"x"};
    assert_null(pgc_query(db, "cast", "SELECT $1::int", 1, p, err, sizeof(err)));
    assert_non_null(strstr(err, "cast: ERROR:  invalid input syntax for type integer"));

    /* the backend goes away (a server restart looks the same to the client) */
    PGconn *killer = pgc_connect(ci, NULL, err, sizeof(err));
    assert_non_null(killer);
    PGresult *r = pgc_query(db, "pid", "SELECT pg_backend_pid()::text", 0, NULL, err, sizeof(err));
    assert_non_null(r);
    const char *pid[] = {PQgetvalue(r, 0, 0)};
    PGresult *k =
        pgc_query(killer, "kill", "SELECT pg_terminate_backend($1::int)", 1, pid, err, sizeof(err));
    assert_non_null(k);
    PQclear(k);
    PQclear(r);
    PQfinish(killer);
    assert_int_equal(pgc_exec(db, "SELECT 1", err, sizeof(err)), -1); /* noticed on use */
    assert_int_equal(pgc_ensure(db, err, sizeof(err)), 0);
    assert_int_equal(pgc_exec(db, "SELECT 1", err, sizeof(err)), 0);
    assert_string_equal(show(db, "statement_timeout", buf, sizeof(buf)), "5min");
    PQfinish(db);

    /* nobody listening: a clear error naming where (the shown string, not the conninfo) */
    char bad[128];
    snprintf(bad, sizeof(bad), "host=127.0.0.1 port=%d dbname=x connect_timeout=2", th_free_port());
    assert_null(pgc_connect(bad, "the test's closed port", err, sizeof(err)));
    assert_non_null(strstr(err, "cannot connect to PostgreSQL (the test's closed port)"));
}

static void test_pipeline(void **state)
{
    (void)state;
    char err[512];
    PGconn *db = pgc_connect(th_pg_default(), NULL, err, sizeof(err));
    assert_non_null(db);
    assert_int_equal(pgc_exec(db,
                              "DROP TABLE IF EXISTS wl_pipe; CREATE TABLE wl_pipe (k int"
                              " PRIMARY KEY, v text)",
                              err, sizeof(err)),
                     0);
    const char *a[] = {"1", "one"}, *b[] = {"2", NULL};
    struct pgc_stmt ok[4] = {
        {.what = "BEGIN", .sql = "BEGIN"},
        {.what = "a",
         .sql = "INSERT INTO wl_pipe VALUES ($1::int, $2) RETURNING k",
         .nparams = 2,
         .params = a},
        {.what = "b",
         .sql = "INSERT INTO wl_pipe VALUES ($1::int, $2) RETURNING 40 + k",
         .nparams = 2,
         .params = b},
        {.what = "COMMIT", .sql = "COMMIT"},
    };
    assert_int_equal(pgc_pipeline(db, ok, 4, err, sizeof(err)), 0);
    assert_int_equal(ok[1].ntuples, 1);
    assert_int_equal(ok[2].first_value, 42);
    assert_int_equal(PQpipelineStatus(db), PQ_PIPELINE_OFF);
    assert_int_equal(PQtransactionStatus(db), PQTRANS_IDLE);

    /* the second statement fails (duplicate key): the third is not run, COMMIT neither */
    const char *c[] = {"3", "three"}, *d[] = {"4", "four"};
    struct pgc_stmt bad[5] = {
        {.what = "BEGIN", .sql = "BEGIN"},
        {.what = "c", .sql = "INSERT INTO wl_pipe VALUES ($1::int, $2)", .nparams = 2, .params = c},
        {.what = "dup",
         .sql = "INSERT INTO wl_pipe VALUES ($1::int, $2)",
         .nparams = 2,
         .params = a},
        {.what = "d", .sql = "INSERT INTO wl_pipe VALUES ($1::int, $2)", .nparams = 2, .params = d},
        {.what = "COMMIT", .sql = "COMMIT"},
    };
    assert_int_equal(pgc_pipeline(db, bad, 5, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "dup: ERROR:  duplicate key value"));
    assert_int_equal(PQpipelineStatus(db), PQ_PIPELINE_OFF);
    assert_int_equal(PQtransactionStatus(db), PQTRANS_INERROR);
    assert_int_equal(pgc_exec(db, "ROLLBACK", err, sizeof(err)), 0);
    PGresult *r = pgc_query(db, "rows",
                            "SELECT string_agg(k || '=' || coalesce(v, 'null'), ','"
                            " ORDER BY k) FROM wl_pipe",
                            0, NULL, err, sizeof(err));
    assert_non_null(r);
    assert_string_equal(PQgetvalue(r, 0, 0), "1=one,2=null");
    PQclear(r);

    /* a binary parameter (the outbox block's way): its bytes as they are, NUL and '\' included,
     * beside a text one in the same statement */
    static const char raw[] = {'\x00', 'z', '\\', '\xff', '\x00', '\n'};
    const char *e[] = {"5", raw};
    const int lens[] = {0, (int)sizeof raw}, fmts[] = {0, 1};
    struct pgc_stmt bin[1] = {{.what = "bin",
                               .sql = "SELECT octet_length($2::bytea) * 100 + $1::int",
                               .nparams = 2,
                               .params = e,
                               .lengths = lens,
                               .formats = fmts}};
    if (pgc_pipeline(db, bin, 1, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(bin[0].first_value, 605);
    struct pgc_stmt bytes[1] = {
        {.what = "bytes",
         .sql = "SELECT ((get_byte($2::bytea, 0) * 256 + get_byte($2, 1)) * 256"
                " + get_byte($2, 2)) * 256 + get_byte($2, 3) + $1::int - 5",
         .nparams = 2,
         .params = e,
         .lengths = lens,
         .formats = fmts}};
    if (pgc_pipeline(db, bytes, 1, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(bytes[0].first_value, 0x007a5cffL); /* 00 7a 5c ff */
    assert_int_equal(pgc_exec(db, "DROP TABLE wl_pipe", err, sizeof(err)), 0);
    PQfinish(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_errors_reconnect),
        cmocka_unit_test(test_pipeline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
