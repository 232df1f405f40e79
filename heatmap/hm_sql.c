/* libpq helpers for the heatmap readers (see hm_sql.h). */
#include "hm_sql.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hm_sql_null(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col);
}

int64_t hm_sql_i64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return 0;
    return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

double hm_sql_f64(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return NAN;
    return strtod(PQgetvalue(r, row, col), NULL);
}

const char *hm_sql_str(const PGresult *r, int row, int col)
{
    if (PQgetisnull(r, row, col))
        return "";
    return PQgetvalue(r, row, col);
}

char *hm_sql_i64_text(int64_t v, char buf[24])
{
    snprintf(buf, 24, "%" PRId64, v);
    return buf;
}

int hm_sql_read_begin(PGconn *db)
{
    if (PQtransactionStatus(db) != PQTRANS_IDLE)
        return 0;
    PGresult *r = PQexec(db, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; "
                             "SET LOCAL work_mem = '64MB'");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    if (!ok) {
        r = PQexec(db, "ROLLBACK");
        PQclear(r);
    }
    return ok;
}

void hm_sql_read_end(PGconn *db, int began)
{
    if (!began)
        return;
    /* ROLLBACK also ends a transaction that a failed query aborted; nothing was written */
    PGresult *r = PQexec(db, "ROLLBACK");
    PQclear(r);
}
