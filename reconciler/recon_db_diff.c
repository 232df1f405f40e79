/* Writing a window's result rows in proportion to what changed (docs/design.md "Fleet scale",
 * "Result writes in proportion to what changed"): the new rows are COPYed into a session temp
 * table (wl_new_<table>); the new rows no stored row equals (sign +1) and the stored rows no new
 * row equals (sign -1) go into a second one (wl_diff_<table>); then one DELETE and one INSERT touch
 * only those rows, and the table's hourly rollup, when it has one, gets their signed sums in one
 * upsert (the reconciler's transaction sets wanledger.hourly_writer, so sql/018's triggers leave
 * its statements alone). A window with no stored rows is COPYed straight in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_db_internal.h"

/* "a.k1 = b.k1 AND a.k2 = b.k2 ..." for a comma-separated column list; op "=" or
 * "IS NOT DISTINCT FROM". */
static int join_cols(char *buf, size_t len, const char *cols, const char *a, const char *b,
                     const char *op)
{
    size_t n = 0;
    const char *p = cols;
    int first = 1;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        const char *e = p;
        while (*e && *e != ',')
            e++;
        const char *t = e;
        while (t > p && t[-1] == ' ')
            t--;
        if (t > p) {
            int w = snprintf(buf + n, len - n, "%s%s.%.*s %s %s.%.*s", first ? "" : " AND ", a,
                             (int)(t - p), p, op, b, (int)(t - p), p);
            if (w < 0 || (size_t)w >= len - n)
                return -1;
            n += (size_t)w;
            first = 0;
        }
        p = e;
    }
    return 0;
}

/* Rows over which a first write goes through the temp table and an ORDER BY: inserting a 1 M
 * window's 406,000 owner rows (and their 8-11-column keys) in random order touched every index
 * page many times over; below this the plain COPY is cheaper. */
long long rdb_diff_sort_above = 50000;

/* The session's temp table of t (wl_sign: +1 a row to write, -1 a stored row to remove, changed
 * or gone; wl_ctid: where that stored row is), emptied at every commit, filled with data and
 * ANALYZEd: the planner knows nothing of a fresh temp table, and without statistics it would loop
 * instead of hashing. */
static int create_tmp(PGconn *db, const struct rdb_diff_table *t, const char *tmp, const char *what,
                      char *err, size_t errlen)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "CREATE TEMP TABLE IF NOT EXISTS %s (LIKE %s INCLUDING DEFAULTS, wl_sign int NOT "
             "NULL DEFAULT 1, wl_ctid tid) ON COMMIT DELETE ROWS",
             tmp, t->table);
    return rdb_run(db, what, sql, 0, NULL, NULL, err, errlen);
}

static int copy_tmp(PGconn *db, const struct rdb_diff_table *t, const char *tmp,
                    const struct rdb_sbuf *data, bool analyze, const char *what, char *err,
                    size_t errlen)
{
    char sql[1024];
    if (create_tmp(db, t, tmp, what, err, errlen))
        return -1;
    snprintf(sql, sizeof sql, "COPY %s (%s) FROM STDIN%s", tmp, t->cols,
             t->binary ? " (FORMAT binary)" : "");
    if (rdb_copy_in(db, sql, data, err, errlen))
        return -1;
    if (!analyze)
        return 0;
    /* the key's columns only: the joins hash on them; the packed rows' arrays (sql/022, 023)
     * took ANALYZE 0.5-1.0 s each for their element statistics, which no plan here reads */
    snprintf(sql, sizeof sql, "ANALYZE %s (%s)", tmp, t->key);
    return rdb_run(db, what, sql, 0, NULL, NULL, err, errlen);
}

/* Whether the window ws gets hourly rows for t: always when t has an hourly rollup of every
 * hour, else when its hour is folded (t->hours; the caller holds the hour's lock, so a fold of it
 * cannot slip in between). 1 yes, 0 no, -1 error. */
static int hourly_applies(PGconn *db, const struct rdb_diff_table *t, const char *ws,
                          const char *what, char *err, size_t errlen)
{
    if (!t->hourly)
        return 0;
    if (!t->hours)
        return 1;
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT EXISTS (SELECT 1 FROM %s WHERE hour_start = date_bin('1 hour', "
             "$1::timestamptz, timestamptz 'epoch'))",
             t->hours);
    const char *p[] = {ws};
    PGresult *r = rdb_q(db, what, err, errlen, sql, 1, p);
    if (!r)
        return -1;
    int yes = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return yes;
}

static int first_write(PGconn *db, const struct rdb_diff_table *t, const char *ws,
                       const struct rdb_sbuf *data, long long n_rows, struct rdb_diff_counts *out,
                       const char *tmp, const char *what, char *err, size_t errlen)
{
    char sql[8192];
    char src[256];
    out->written = n_rows;
    bool sorted = t->keyed && !t->ordered && n_rows >= rdb_diff_sort_above;
    if (!sorted) {
        snprintf(sql, sizeof sql, "COPY %s (%s) FROM STDIN%s", t->table, t->cols,
                 t->binary ? " (FORMAT binary)" : "");
        if (rdb_copy_in(db, sql, data, err, errlen))
            return -1;
    } else {
        /* a big window's rows go in in key order through the temp table (see rdb_diff_sort_above)
         */
        if (copy_tmp(db, t, tmp, data, false, what, err, errlen))
            return -1;
        snprintf(sql, sizeof sql, "INSERT INTO %1$s (%2$s) SELECT %2$s FROM %3$s ORDER BY %4$s",
                 t->table, t->cols, tmp, t->key);
        if (rdb_run(db, what, sql, 0, NULL, NULL, err, errlen))
            return -1;
    }
    if (n_rows == 0)
        return 0;
    int h = hourly_applies(db, t, ws, what, err, errlen);
    if (h <= 0)
        return h;
    /* the rows just written: in the temp table (wl_sign 1) or read back by window; ws is
     * rdb_fmt_ts's text (digits, '-', ':', 'T', 'Z', '.'): safe as a literal here */
    if (!sorted && t->hourly_first) {
        snprintf(sql, sizeof sql, t->hourly_first, ws);
        return rdb_run(db, what, sql, 0, NULL, NULL, err, errlen);
    }
    if (sorted)
        snprintf(src, sizeof src, "%s", tmp);
    else
        snprintf(src, sizeof src,
                 "(SELECT *, 1 AS wl_sign FROM %s WHERE window_start = '%s'::timestamptz) w",
                 t->table, ws);
    snprintf(sql, sizeof sql, t->hourly, src);
    return rdb_run(db, what, sql, 0, NULL, NULL, err, errlen);
}

static int diff_stored(PGconn *db, const struct rdb_diff_table *t, const char *ws,
                       const struct rdb_sbuf *data, long long n_rows, struct rdb_diff_counts *out,
                       const char *tmp, const char *tmp_new, const char *keyeq, const char *valeq,
                       const char *what, char *err, size_t errlen);

int rdb_diff_write(PGconn *db, const struct rdb_diff_table *t, const char *ws,
                   const struct rdb_sbuf *data, long long n_rows, struct rdb_diff_counts *out,
                   char *err, size_t errlen)
{
    char what[96], tmp[64], tmp_new[64], keyeq[1024], valeq[1024];
    char sql[8192];
    memset(out, 0, sizeof *out);
    snprintf(what, sizeof what, "writing %s", t->table);
    snprintf(tmp, sizeof tmp, "wl_diff_%s", t->table);
    snprintf(tmp_new, sizeof tmp_new, "wl_new_%s", t->table);
    if (join_cols(keyeq, sizeof keyeq, t->key, "d", "o", "=") ||
        join_cols(valeq, sizeof valeq, t->vals, "d", "o", "IS NOT DISTINCT FROM")) {
        snprintf(err, errlen, "%s: column list too long", what);
        return -1;
    }
    /* the rows' digest (none when OpenSSL fails: then written and compared as without one) */
    char dg[RDB_DIGEST_HEX] = "", n[RDB_NUM_LEN];
    bool have = rdb_digest_hex(t->table, data, n_rows, dg) == 0;
    rdb_fmt_i64(n, n_rows);
    const char *p4[] = {ws, t->table, n, dg};
    snprintf(sql, sizeof sql,
             "SELECT EXISTS (SELECT 1 FROM %s WHERE window_start = $1::timestamptz), EXISTS "
             "(SELECT 1 FROM result_digests WHERE window_start = $1::timestamptz AND table_name = "
             "$2 AND n_rows = $3::bigint AND digest = decode($4, 'hex'))",
             t->table);
    PGresult *er = rdb_q(db, what, err, errlen, sql, 4, p4);
    if (!er)
        return -1;
    bool stored = PQgetvalue(er, 0, 0)[0] == 't';
    bool same = have && PQgetvalue(er, 0, 1)[0] == 't';
    PQclear(er);
    if (same) { /* the table holds exactly these rows (sql/034) */
        out->unchanged = n_rows;
        rdb_digest_count_unchanged();
        return 0;
    }
    /* a window's first reconciliation (the usual case) has nothing to compare: its rows go
     * straight in, and the hourly rollup sums them where they landed */
    int rc = stored ? diff_stored(db, t, ws, data, n_rows, out, tmp, tmp_new, keyeq, valeq, what,
                                  err, errlen)
                    : first_write(db, t, ws, data, n_rows, out, tmp_new, what, err, errlen);
    if (rc == 0 && have)
        rc = rdb_digest_store(db, t->table, ws, n_rows, dg, err, errlen);
    return rc;
}

/* The window's rows of t stored already: the new rows compared with them, the difference
 * written. */
static int diff_stored(PGconn *db, const struct rdb_diff_table *t, const char *ws,
                       const struct rdb_sbuf *data, long long n_rows, struct rdb_diff_counts *out,
                       const char *tmp, const char *tmp_new, const char *keyeq, const char *valeq,
                       const char *what, char *err, size_t errlen)
{
    char sql[8192];
    const char *p1[] = {ws};
    /* the new rows in wl_new_<table> (read only from here on: no dead rows for the joins to
     * wade through), the signed changes in wl_diff_<table> */
    if (copy_tmp(db, t, tmp_new, data, true, what, err, errlen) ||
        create_tmp(db, t, tmp, what, err, errlen))
        return -1;
    snprintf(sql, sizeof sql,
             "INSERT INTO %1$s (%2$s, wl_sign) SELECT %2$s, 1 FROM %3$s d WHERE NOT EXISTS "
             "(SELECT 1 FROM %4$s o WHERE o.window_start = $1::timestamptz AND %5$s AND %6$s)",
             tmp, t->cols, tmp_new, t->table, keyeq, valeq);
    if (rdb_run(db, what, sql, 1, p1, &out->written, err, errlen))
        return -1;
    snprintf(sql, sizeof sql,
             "INSERT INTO %1$s (%2$s, wl_sign, wl_ctid) SELECT %2$s, -1, o.ctid FROM %3$s o WHERE "
             "o.window_start = $1::timestamptz AND NOT EXISTS (SELECT 1 FROM %4$s d WHERE %5$s "
             "AND %6$s)",
             tmp, t->cols, t->table, tmp_new, keyeq, valeq);
    if (rdb_run(db, what, sql, 1, p1, &out->removed, err, errlen))
        return -1;
    out->unchanged = n_rows - out->written;
    if (out->written == 0 && out->removed == 0)
        return 0;
    snprintf(sql, sizeof sql, "ANALYZE %s (%s, wl_sign)", tmp, t->key);
    if (rdb_run(db, what, sql, 0, NULL, NULL, err, errlen))
        return -1;
    /* by the places the scan above found them (a window's rows have one writer at a time, which
     * holds its hour's lock: nobody moved them since). The join on the 11-column key depended on
     * the planner's estimates: in bench_fleet (812 stored owner rows of a reconciliation of the
     * window's first reports, against the whole window's 2.03 M new ones) it ran over 4.5 min
     * before it was stopped; a scratch server with fresh statistics merge-joined the same in
     * 0.45 s. The join on the place is a hash join of the two whatever the estimates (0.36 s for
     * those 812, 9.8 s for 2.03 M stored rows all removed); `= ANY (ARRAY(...))` of the places
     * would be a linear search per row. */
    snprintf(sql, sizeof sql,
             "DELETE FROM %1$s o USING %2$s d WHERE d.wl_sign = -1 AND o.ctid = d.wl_ctid AND "
             "o.window_start = $1::timestamptz",
             t->table, tmp);
    if (rdb_run(db, what, sql, 1, p1, NULL, err, errlen))
        return -1;
    snprintf(sql, sizeof sql,
             "INSERT INTO %1$s (%2$s) SELECT %2$s FROM %3$s WHERE wl_sign = 1%4$s%5$s", t->table,
             t->cols, tmp, t->keyed ? " ORDER BY " : "", t->keyed ? t->key : "");
    if (rdb_run(db, what, sql, 0, NULL, NULL, err, errlen))
        return -1;
    if (out->written == 0 && out->removed == 0)
        return 0;
    int h = hourly_applies(db, t, ws, what, err, errlen);
    if (h <= 0)
        return h;
    char hw[96];
    snprintf(hw, sizeof hw, "writing the hourly rows of %s", t->table);
    snprintf(sql, sizeof sql, t->hourly, tmp);
    if (rdb_run(db, hw, sql, 0, NULL, NULL, err, errlen))
        return -1;
    if (out->removed == 0)
        return 0;
    /* an hourly row whose last window went: gone, as the triggers do */
    char hourly[96];
    if (t->hourly_table)
        snprintf(hourly, sizeof hourly, "%s", t->hourly_table);
    else
        snprintf(hourly, sizeof hourly, "%s_hourly", t->table);
    snprintf(sql, sizeof sql,
             "DELETE FROM %1$s h USING (SELECT DISTINCT date_bin('1 hour', window_start, "
             "timestamptz 'epoch') AS hs, src_site, dst_site FROM %2$s WHERE wl_sign = -1) o "
             "WHERE h.windows = 0 AND (h.hour_start, h.src_site, h.dst_site) = (o.hs, "
             "o.src_site, o.dst_site)",
             hourly, tmp);
    return rdb_run(db, hw, sql, 0, NULL, NULL, err, errlen);
}
