/* Small libpq helpers for the heatmap readers: typed column reads and the SQL spelling of
 * wanledger's microsecond times (queries: pgc_query, common/pgc.h). */
#ifndef WL_HM_SQL_H
#define WL_HM_SQL_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "pgc.h"

/* $n (int64 microseconds as text) as a timestamptz. */
#define HM_SQL_TS(n) "(timestamptz 'epoch' + $" #n "::bigint * interval '1 microsecond')"
/* A timestamptz expression as int64 microseconds. */
#define HM_SQL_US(e) "(extract(epoch from " e ") * 1000000)::bigint"

/* Queries go through pgc_query (common/pgc.h). */
/* Column reads: NULL gives 0 / NAN / "" respectively. */
int64_t hm_sql_i64(const PGresult *r, int row, int col);
double hm_sql_f64(const PGresult *r, int row, int col);
const char *hm_sql_str(const PGresult *r, int row, int col);
int hm_sql_null(const PGresult *r, int row, int col);
/* Opens a read-only, repeatable-read transaction (one snapshot for a whole page) with enough
 * work_mem for the page's aggregates to hash in memory, when db is idle; returns 1 when it did
 * (pass that to hm_sql_read_end), 0 when db was already in a transaction (left alone). */
int hm_sql_read_begin(PGconn *db);
void hm_sql_read_end(PGconn *db, int began);
/* int64 as decimal text into buf (for params). */
char *hm_sql_i64_text(int64_t v, char buf[24]);

#endif
