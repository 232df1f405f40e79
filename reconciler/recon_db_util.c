/* The libpq and text-buffer helpers of the reconciler's database glue (recon_db_*.c). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copyesc.h"
#include "growbuf.h"
#include "pgc.h"
#include "recon_db_internal.h"

/* ---- small libpq helpers ---- */

void rdb_set_err(char *err, size_t errlen, const char *what, const PGresult *r, PGconn *db)
{
    const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(db);
    snprintf(err, errlen, "%s: %s", what, m && *m ? m : "unknown error");
    size_t n = strlen(err);
    while (n && err[n - 1] == '\n')
        err[--n] = '\0';
}

/* Runs sql with text parameters; returns the result (PGRES_TUPLES_OK / COMMAND_OK) or NULL with
 * err filled. */
PGresult *rdb_q(PGconn *db, const char *what, char *err, size_t errlen, const char *sql, int n,
                const char *const *params)
{
    return pgc_query(db, what, sql, n, params, err, errlen); /* common/pgc.h */
}

const char *rdb_val(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

int64_t rdb_val_i64(const PGresult *r, int row, int col, int64_t dflt)
{
    const char *v = rdb_val(r, row, col);
    return v ? strtoll(v, NULL, 10) : dflt;
}

uint64_t rdb_val_u64(const PGresult *r, int row, int col, bool *has)
{
    const char *v = rdb_val(r, row, col);
    if (has)
        *has = v != NULL;
    return v ? strtoull(v, NULL, 10) : 0;
}

void rdb_fmt_i64(char buf[RDB_NUM_LEN], int64_t v)
{
    snprintf(buf, RDB_NUM_LEN, "%" PRId64, v);
}

void rdb_fmt_ts(char buf[TM_RFC3339_LEN], int64_t us)
{
    tm_format_rfc3339(us, buf);
}

void rdb_sb_add(struct rdb_sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        char *p = gb_grow(b->p, &b->cap, b->n + n + 1, 4096);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

__attribute__((format(printf, 2, 3))) void rdb_sb_printf(struct rdb_sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof tmp) {
        rdb_sb_add(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) {
        b->oom = true;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rdb_sb_add(b, big, (size_t)n);
    free(big);
}

/* An unsigned big-endian integer of n bytes (binary COPY). */
void rdb_sb_be(struct rdb_sbuf *b, uint64_t v, int n)
{
    uint8_t out[8];
    for (int i = 0; i < n; i++)
        out[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
    rdb_sb_add(b, (const char *)out, (size_t)n);
}

void rdb_sb_bin_begin(struct rdb_sbuf *b)
{
    rdb_sb_add(b, "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0", 19);
}

void rdb_sb_bin_end(struct rdb_sbuf *b)
{
    rdb_sb_be(b, 0xffff, 2);
}

void rdb_sb_bin_text(struct rdb_sbuf *b, const char *s)
{
    size_t len = strlen(s);
    rdb_sb_be(b, len, 4);
    rdb_sb_add(b, s, len);
}

void rdb_sb_array_head(struct rdb_sbuf *b, size_t n, size_t bytes, uint32_t elem)
{
    rdb_sb_array_head_nulls(b, n, bytes, elem, false);
}

void rdb_sb_array_head_nulls(struct rdb_sbuf *b, size_t n, size_t bytes, uint32_t elem,
                             bool has_null)
{
    rdb_sb_be(b, 20 + bytes, 4);
    rdb_sb_be(b, 1, 4); /* dimensions */
    rdb_sb_be(b, has_null, 4);
    rdb_sb_be(b, elem, 4);
    rdb_sb_be(b, n, 4); /* length */
    rdb_sb_be(b, 1, 4); /* lower bound */
}

/* A COPY text-format field (then a tab or newline is added by the caller): copyesc.h. */
void rdb_sb_copy_text(struct rdb_sbuf *b, const char *s)
{
    size_t n = strlen(s);
    char local[512];
    char *tmp = COPYESC_MAX(n) <= sizeof(local) ? local : malloc(COPYESC_MAX(n));
    if (!tmp) {
        b->oom = true;
        return;
    }
    rdb_sb_add(b, tmp, copyesc_text(tmp, s, n));
    if (tmp != local)
        free(tmp);
}

/* An element of a text[] array literal: "…" with \ and " escaped. */
void rdb_sb_array_elem(struct rdb_sbuf *b, const char *s, bool first)
{
    if (!first)
        rdb_sb_add(b, ",", 1);
    rdb_sb_add(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            rdb_sb_add(b, "\\", 1);
        rdb_sb_add(b, s, 1);
    }
    rdb_sb_add(b, "\"", 1);
}

int rdb_run(PGconn *db, const char *what, const char *sql, int n, const char *const *params,
            long long *rows, char *err, size_t errlen)
{
    PGresult *r = rdb_q(db, what, err, errlen, sql, n, params);
    if (!r)
        return -1;
    if (rows)
        *rows = atoll(PQcmdTuples(r));
    PQclear(r);
    return 0;
}

int rdb_copy_in(PGconn *db, const char *sql, const struct rdb_sbuf *data, char *err, size_t errlen)
{
    return pgc_copy_in(db, sql, sql, data->p, data->n, err, errlen); /* common/pgc.h */
}
