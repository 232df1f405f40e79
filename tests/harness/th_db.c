/* Statements for tests (see th_db.h). */
#include "th_db.h"

#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

/* The statement's result; the test fails with the statement and the message unless it is one
 * of ok (or COMMAND_OK when ok is TUPLES_OK and tuples_only is false). */
static PGresult *run(PGconn *db, bool tuples_only, const char *fmt, va_list ap)
{
    char *sql = NULL;
    if (vasprintf(&sql, fmt, ap) < 0)
        fail_msg("th_db: out of memory");
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && (tuples_only || st != PGRES_COMMAND_OK)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%.300s: %s", sql, PQresultErrorMessage(r));
        PQclear(r);
        free(sql);
        fail_msg("%s", msg);
    }
    free(sql);
    return r;
}

void th_db_exec(PGconn *db, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PGresult *r = run(db, false, fmt, ap);
    va_end(ap);
    PQclear(r);
}

const char *th_db_one(PGconn *db, const char *fmt, ...)
{
    static char out[8192];
    va_list ap;
    va_start(ap, fmt);
    PGresult *r = run(db, true, fmt, ap);
    va_end(ap);
    snprintf(out, sizeof out, "%s", PQntuples(r) ? PQgetvalue(r, 0, 0) : "<none>");
    PQclear(r);
    return out;
}
