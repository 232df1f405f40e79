/* Statements for tests (see th_db.h). */
#include "th_db.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

void th_db_exec(PGconn *db, const char *fmt, ...)
{
    char *sql = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&sql, fmt, ap);
    va_end(ap);
    if (n < 0)
        fail_msg("th_db_exec: out of memory");
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%.300s: %s", sql, PQresultErrorMessage(r));
        PQclear(r);
        free(sql);
        fail_msg("%s", msg);
    }
    PQclear(r);
    free(sql);
}
