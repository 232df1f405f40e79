/* Folding ended hours' owner rows into attribution_rollup_hourly (recon_db.h, sql/020). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgc.h"
#include "recon_db_internal.h"

/* A fold reads the hour's every owner row (a 5 M-flow fleet: ~2 M a window, 120 M an hour):
 * more time and memory than a window's statements get. */
#define FOLD_STATEMENT_TIMEOUT_MS (30LL * 60 * 1000)

/* One hour in its own transaction. *rows: hourly rows written, -1 when it was folded already. */
static int fold_one(PGconn *db, const char *hour, long long *rows, char *err, size_t errlen)
{
    char begin[160];
    snprintf(begin, sizeof begin,
             "BEGIN; SET LOCAL statement_timeout = %lld; SET LOCAL work_mem = '%s'",
             FOLD_STATEMENT_TIMEOUT_MS, RDB_BIG_WINDOW_WORK_MEM);
    const char *p[] = {hour};
    PGresult *r = NULL;
    int rc = -1;
    if (pgc_exec(db, begin, err, errlen) ||
        !(r = rdb_q(db, "folding an hour", err, errlen,
                    "SELECT wl_fold_owner_hour($1::timestamptz)", 1, p)))
        goto done;
    *rows = rdb_val_i64(r, 0, 0, -1);
    PQclear(r);
    rc = pgc_exec(db, "COMMIT", err, errlen);
done:
    if (rc) {
        PGresult *rb = PQexec(db, "ROLLBACK"); /* outside a transaction: a warning, no harm */
        PQclear(rb);
    }
    return rc;
}

int recon_db_fold_hours(PGconn *db, const struct cfg *cfg, int64_t now_us, int max_hours,
                        int *hours, long long *rows, char *err, size_t errlen)
{
    int n_hours = 0;
    long long n_rows = 0;
    char before[TM_RFC3339_LEN], max[16];
    rdb_fmt_ts(before, now_us - 2LL * cfg->window_seconds * TM_USEC_PER_SEC);
    snprintf(max, sizeof max, "%d", max_hours > 0 ? max_hours : 1);
    const char *p[] = {before, max};
    PGresult *todo = rdb_q(db, "listing hours to fold", err, errlen,
                           "SELECT to_char(h AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
                           " FROM wl_owner_hours_to_fold($1::timestamptz, $2::int) h",
                           2, p);
    if (!todo)
        return -1;
    int rc = 0;
    for (int i = 0; i < PQntuples(todo); i++) {
        long long w = 0;
        char e[400];
        if (fold_one(db, PQgetvalue(todo, i, 0), &w, e, sizeof e)) {
            snprintf(err, errlen, "hour %s: %s", PQgetvalue(todo, i, 0), e);
            rc = -1;
            break;
        }
        if (w >= 0) {
            n_hours++;
            n_rows += w;
        }
    }
    PQclear(todo);
    if (hours)
        *hours = n_hours;
    if (rows)
        *rows = n_rows;
    return rc;
}
