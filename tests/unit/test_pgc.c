/* common/pgc.c against a real PostgreSQL: the session is set up (UTC, statement_timeout), errors
 * carry the server's message, a connection whose backend was terminated is reset by pgc_ensure,
 * and a server that is not there fails with a message naming where; pgc_pipeline runs a
 * transaction's statements in one round trip, and a failing one leaves the transaction aborted
 * (nothing of it is committed) and the connection usable; pgc_pipeline_prep prepares named
 * statements once per session (again after a reset; not after a failed Parse) and runs unnamed
 * once the server has lost them. */
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

/* How many statements the session has prepared under name. */
static long prepared(PGconn *db, const char *name)
{
    char err[512];
    const char *p[] = {name};
    PGresult *r = pgc_query(db, "prepared",
                            "SELECT count(*) FROM pg_prepared_statements"
                            " WHERE name = $1",
                            1, p, err, sizeof(err));
    assert_non_null(r);
    long n = atol(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

/* A transaction of named statements, as the grouped commit runs it: a and b insert (k, v) and
 * return k + 100; c returns the row count. */
static int prep_tx(PGconn *db, struct pgc_prep *prep, const char *k1, const char *k2, long *count,
                   char *err, size_t errlen)
{
    const char *a[] = {k1, "x"}, *b[] = {k2, "y"};
    struct pgc_stmt s[5] = {
        {.what = "BEGIN", .sql = "BEGIN"},
        {.what = "a",
         .name = "t_ins",
         .sql = "INSERT INTO wl_prep VALUES ($1::int, $2) RETURNING k + 100",
         .nparams = 2,
         .params = a},
        {.what = "b",
         .name = "t_ins",
         .sql = "INSERT INTO wl_prep VALUES ($1::int, $2) RETURNING k + 100",
         .nparams = 2,
         .params = b},
        {.what = "c", .name = "t_count", .sql = "SELECT count(*) FROM wl_prep"},
        {.what = "COMMIT", .sql = "COMMIT"},
    };
    int rc = pgc_pipeline_prep(db, prep, s, 5, err, errlen);
    if (rc == 0) {
        assert_int_equal(s[1].first_value, atol(k1) + 100);
        assert_int_equal(s[2].first_value, atol(k2) + 100);
        *count = s[3].first_value;
    }
    return rc;
}

static void test_pipeline_prepared(void **state)
{
    (void)state;
    char err[512];
    PGconn *db = pgc_connect(th_pg_default(), NULL, err, sizeof(err));
    assert_non_null(db);
    assert_int_equal(pgc_exec(db,
                              "DROP TABLE IF EXISTS wl_prep; CREATE TABLE wl_prep (k int"
                              " PRIMARY KEY, v text)",
                              err, sizeof(err)),
                     0);
    struct pgc_prep prep = {0};
    long count = 0;
    /* prepared in the first round trip (once, though two statements share the name), reused */
    if (prep_tx(db, &prep, "1", "2", &count, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(count, 2);
    assert_int_equal(prep.n, 2);
    assert_int_equal(prepared(db, "t_ins"), 1);
    assert_int_equal(prepared(db, "t_count"), 1);
    if (prep_tx(db, &prep, "3", "4", &count, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(count, 4);

    /* a failed transaction (duplicate key) keeps the session's prepared statements: the next
     * one runs them by name */
    assert_int_equal(prep_tx(db, &prep, "5", "1", &count, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "b: ERROR:  duplicate key value"));
    assert_int_equal(pgc_exec(db, "ROLLBACK", err, sizeof(err)), 0);
    if (prep_tx(db, &prep, "5", "6", &count, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(count, 6);
    assert_int_equal(prepared(db, "t_ins"), 1);

    /* a statement prepared in a transaction that then fails stays prepared, and known */
    const char *e[] = {"11", "z"}, *dup[] = {"1", "z"};
    struct pgc_stmt fresh[4] = {
        {.what = "BEGIN", .sql = "BEGIN"},
        {.what = "e",
         .name = "t_ins_e",
         .sql = "INSERT INTO wl_prep VALUES ($1::int, $2)",
         .nparams = 2,
         .params = e},
        {.what = "dup",
         .name = "t_ins_e",
         .sql = "INSERT INTO wl_prep VALUES ($1::int, $2)",
         .nparams = 2,
         .params = dup},
        {.what = "COMMIT", .sql = "COMMIT"},
    };
    assert_int_equal(pgc_pipeline_prep(db, &prep, fresh, 4, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "dup: ERROR:  duplicate key value"));
    assert_int_equal(pgc_exec(db, "ROLLBACK", err, sizeof(err)), 0);
    assert_int_equal(prep.n, 3);
    assert_int_equal(prepared(db, "t_ins_e"), 1);
    fresh[2].params = (const char *[]){"12", "z"};
    if (pgc_pipeline_prep(db, &prep, fresh, 4, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(prepared(db, "t_ins_e"), 1);

    /* a statement whose Parse fails is not taken for prepared */
    struct pgc_stmt bad[1] = {{.what = "bad", .name = "t_bad", .sql = "SELEC 1"}};
    assert_int_equal(pgc_pipeline_prep(db, &prep, bad, 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "bad: ERROR:  syntax error"));
    assert_int_equal(prep.n, 3);
    assert_int_equal(prepared(db, "t_bad"), 0);

    /* a new session (the backend terminated, the connection reset): prepared again */
    int old_pid = PQbackendPID(db);
    PGconn *killer = pgc_connect(th_pg_default(), NULL, err, sizeof(err));
    assert_non_null(killer);
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_terminate_backend(%d)", old_pid);
    assert_int_equal(pgc_exec(killer, sql, err, sizeof(err)), 0);
    PQfinish(killer);
    assert_int_not_equal(pgc_exec(db, "SELECT 1", err, sizeof(err)), 0);
    assert_int_equal(pgc_ensure(db, err, sizeof(err)), 0);
    assert_int_not_equal(PQbackendPID(db), old_pid);
    if (prep_tx(db, &prep, "7", "8", &count, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(count, 10);
    assert_int_equal(prepared(db, "t_ins"), 1);

    /* the server forgets them behind our back (a pooler, DEALLOCATE ALL): that transaction
     * fails, and the next ones run unnamed */
    assert_int_equal(pgc_exec(db, "DEALLOCATE ALL", err, sizeof(err)), 0);
    assert_int_equal(prep_tx(db, &prep, "9", "10", &count, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "does not exist"));
    assert_int_equal(prep.off, 1);
    assert_int_equal(pgc_exec(db, "ROLLBACK", err, sizeof(err)), 0);
    if (prep_tx(db, &prep, "9", "10", &count, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    assert_int_equal(count, 12);
    assert_int_equal(prepared(db, "t_ins"), 0);
    assert_int_equal(pgc_exec(db, "DROP TABLE wl_prep", err, sizeof(err)), 0);
    PQfinish(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_session_errors_reconnect),
        cmocka_unit_test(test_pipeline),
        cmocka_unit_test(test_pipeline_prepared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
