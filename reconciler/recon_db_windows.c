/* Which windows are due for reconciliation, and marking one done (the window_state contract with
 * ingest, recon_db.h). */
#include <stdio.h>

#include "recon_db_internal.h"

/* Moves the newest RANGE_BATCH windows of the newest ranges (window_ranges, written by ingest for
 * long transfer records) into window_state, marked as ingest marks (dirty, a fresh
 * clock_timestamp()); a range shrinks from its newest end and goes once empty. One pass moves a
 * bounded number of windows, so a 7-day record never makes one tick slow. */
#define RANGE_BATCH    512
#define RANGES_AT_ONCE 16

static int expand_ranges(PGconn *db, const struct cfg *cfg, char *err, size_t errlen)
{
    char ws[RDB_NUM_LEN], batch[RDB_NUM_LEN], lim[RDB_NUM_LEN];
    snprintf(ws, sizeof ws, "%d", cfg->window_seconds);
    snprintf(batch, sizeof batch, "%d", RANGE_BATCH - 1);
    snprintf(lim, sizeof lim, "%d", RANGES_AT_ONCE);
    const char *params[] = {ws, batch, lim};
    static const char sql[] =
        "WITH r AS (SELECT id, lo, hi,"
        "  greatest(lo, hi - make_interval(secs => $1::int * $2::int)) AS cut"
        "  FROM window_ranges ORDER BY hi DESC LIMIT $3::int FOR UPDATE SKIP LOCKED),"
        " g AS (SELECT DISTINCT generate_series(cut, hi, make_interval(secs => $1::int)) AS ws"
        "  FROM r),"
        " ins AS (INSERT INTO window_state (window_start, window_seconds, dirty, last_data_at)"
        "  SELECT ws, $1::int, true, clock_timestamp() FROM g"
        "  ON CONFLICT (window_start) DO UPDATE SET dirty = true,"
        "   last_data_at = clock_timestamp()),"
        " del AS (DELETE FROM window_ranges d USING r WHERE d.id = r.id AND r.cut <= r.lo),"
        " upd AS (UPDATE window_ranges d SET hi = r.cut - make_interval(secs => $1::int)"
        "  FROM r WHERE d.id = r.id AND r.cut > r.lo)"
        " SELECT count(*) FROM r";
    PGresult *r = rdb_q(db, "expanding window ranges", err, errlen, sql, 3, params);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}

int recon_db_pending_windows(PGconn *db, const struct cfg *cfg, int64_t now_us, int64_t *out,
                             size_t max, size_t *n, char *err, size_t errlen)
{
    *n = 0;
    if (expand_ranges(db, cfg, err, errlen) < 0)
        return -1;
    int64_t W = (int64_t)cfg->window_seconds * TM_USEC_PER_SEC;
    /* the newest window whose grace has passed: start + W + grace <= now */
    int64_t upper = tm_window_start(now_us - W - (int64_t)cfg->grace_seconds * TM_USEC_PER_SEC,
                                    cfg->window_seconds);
    char up[TM_RFC3339_LEN], lo[TM_RFC3339_LEN], ws[RDB_NUM_LEN], lim[RDB_NUM_LEN];
    rdb_fmt_ts(up, upper);
    rdb_fmt_ts(lo, now_us - 86400 * TM_USEC_PER_SEC);
    snprintf(ws, sizeof ws, "%d", cfg->window_seconds);
    snprintf(lim, sizeof lim, "%zu", max);
    const char *params[] = {up, lo, ws, lim};
    /* A counter sample also feeds the window before its own (its interval reaches back). */
    static const char sql[] =
        "WITH b AS ("
        "  SELECT greatest(coalesce((SELECT max(window_start) FROM window_state"
        "                            WHERE reconciled_at IS NOT NULL), $2::timestamptz),"
        "                  $2::timestamptz) AS lo),"
        " sample_ws(ws) AS ("
        "  SELECT DISTINCT to_timestamp(floor(extract(epoch FROM s.at) / $3::int) * $3::int)"
        "  FROM counter_samples s, b"
        "  WHERE s.at >= b.lo AND s.at < $1::timestamptz + 2 * $3::int * interval '1 second'),"
        " raw(ws) AS ("
        "  SELECT ws FROM sample_ws"
        "  UNION SELECT ws - $3::int * interval '1 second' FROM sample_ws"
        "  UNION SELECT DISTINCT f.window_start FROM flow_reports f, b"
        "   WHERE f.window_start >= b.lo AND f.window_start <= $1::timestamptz"
        "  UNION SELECT DISTINCT to_timestamp(floor(extract(epoch FROM t.start_at) / $3::int)"
        "                                    * $3::int)"
        "   FROM transfers t, b WHERE t.start_at >= b.lo AND t.start_at <= $1::timestamptz),"
        " due(ws) AS ("
        "  SELECT ws FROM raw, b WHERE ws >= b.lo AND ws <= $1::timestamptz"
        "   AND NOT EXISTS (SELECT 1 FROM window_state w WHERE w.window_start = raw.ws)"
        "  UNION SELECT window_start FROM window_state"
        "   WHERE dirty AND window_start <= $1::timestamptz)"
        /* the newest max windows (a backlog must not hold back fresh windows), oldest first */
        " SELECT (extract(epoch FROM ws) * 1000000)::bigint FROM"
        "  (SELECT ws FROM due ORDER BY ws DESC LIMIT $4::bigint) newest ORDER BY ws";
    PGresult *r = rdb_q(db, "finding pending windows", err, errlen, sql, 4, params);
    if (!r)
        return -1;
    for (int i = 0; i < PQntuples(r) && *n < max; i++) {
        int64_t w = rdb_val_i64(r, i, 0, 0);
        if (tm_is_aligned(w, cfg->window_seconds))
            out[(*n)++] = w;
    }
    PQclear(r);
    return 0;
}

int recon_db_mark_done(PGconn *db, const struct cfg *cfg, int64_t window_start_us,
                       int64_t seen_last_data_at_us, char *err, size_t errlen)
{
    char w[TM_RFC3339_LEN], seen[RDB_NUM_LEN], secs[RDB_NUM_LEN];
    rdb_fmt_ts(w, window_start_us);
    rdb_fmt_i64(seen, seen_last_data_at_us);
    snprintf(secs, sizeof secs, "%d", cfg->window_seconds);
    const char *params[] = {w, secs, seen_last_data_at_us == INT64_MIN ? NULL : seen};
    static const char sql[] =
        "INSERT INTO window_state (window_start, window_seconds, dirty, reconciled_at)"
        " VALUES ($1::timestamptz, $2::int, false, now())"
        " ON CONFLICT (window_start) DO UPDATE SET reconciled_at = now(),"
        "  dirty = CASE WHEN $3::bigint IS NOT NULL AND"
        "                    (extract(epoch FROM window_state.last_data_at) * 1000000)::bigint"
        "                    = $3::bigint"
        "          THEN false ELSE window_state.dirty END";
    PGresult *r = rdb_q(db, "marking the window reconciled", err, errlen, sql, 3, params);
    if (!r)
        return -1;
    PQclear(r);
    return 0;
}
