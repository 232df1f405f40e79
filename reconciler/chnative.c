/* A report's flow records as a ClickHouse Native block (see chnative.h). */
#include "chnative.h"

#include "growbuf.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Per column: bytes of one value (0: a string), whether it is Nullable. From flow_cols' ClickHouse
 * types, once. */
static struct {
    unsigned char width;
    bool nullable;
} kind[FR_NCOLS];
static pthread_once_t kind_once = PTHREAD_ONCE_INIT;

static void kind_init(void)
{
    for (int c = 0; c < FR_NCOLS; c++) {
        const char *t = flow_cols[c].ch_type;
        kind[c].nullable = strncmp(t, "Nullable(", 9) == 0;
        kind[c].width = strstr(t, "UInt64")     ? 8
                        : strstr(t, "UInt32")   ? 4
                        : strstr(t, "DateTime") ? 4
                        : strstr(t, "UInt16")   ? 2
                                                : 0;
    }
}

/* A string column's guess per value before the first row says more. */
#define TEXT_GUESS 24

/* Room for total bytes in c, keeping what it holds (doubling, so that appends stay cheap). */
static int reserve(struct chnative_col *c, size_t total)
{
    unsigned char *p = gb_grow(c->p, &c->cap, total, 256);
    if (!p)
        return -1;
    c->p = p;
    return 0;
}

/* Room for rows rows in every fixed-width column and null map, written at [row * width] and
 * [row]: their size follows from the row count, their n is not used. */
static int reserve_rows(struct chnative *n, size_t rows)
{
    for (int c = FR_WINDOW_START + 1; c < FR_NCOLS; c++)
        if ((kind[c].width && reserve(&n->val[c], rows * kind[c].width) < 0) ||
            (kind[c].nullable && reserve(&n->nulls[c], rows) < 0))
            return -1;
    n->cap_rows = rows;
    return 0;
}

void chnative_init(struct chnative *n, size_t rows)
{
    pthread_once(&kind_once, kind_init);
    memset(n, 0, sizeof *n);
    n->bad_col = -1;
    if (!rows) /* a report without flows: its block still has columns to point at */
        rows = 1;
    if (reserve_rows(n, rows) < 0)
        n->oom = true;
    for (int c = FR_WINDOW_START + 1; c < FR_NCOLS && !n->oom; c++)
        if (!kind[c].width && reserve(&n->val[c], rows * TEXT_GUESS) < 0)
            n->oom = true;
}

static size_t varuint(unsigned char *w, uint64_t v)
{
    size_t i = 0;
    while (v >= 0x80) {
        w[i++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    w[i++] = (unsigned char)v;
    return i;
}

/* Little-endian, as ClickHouse stores numbers (and this machine: a plain store). */
static inline void put_le(unsigned char *w, uint64_t v, unsigned width)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    switch (width) {
    case 2: {
        uint16_t x = (uint16_t)v;
        memcpy(w, &x, 2);
        return;
    }
    case 4: {
        uint32_t x = (uint32_t)v;
        memcpy(w, &x, 4);
        return;
    }
    case 8:
        memcpy(w, &v, 8);
        return;
    }
#endif
    for (unsigned i = 0; i < width; i++)
        w[i] = (unsigned char)(v >> (8 * i));
}

/* Ingest calls this once per flow record (~30 columns): one capacity check per row for the
 * fixed-width columns and null maps, one per string. */
void chnative_add(struct chnative *n, const struct flow_row *r)
{
    if (n->oom || n->bad_col >= 0)
        return;
    size_t row = n->rows;
    if (row >= n->cap_rows && reserve_rows(n, 2 * row) < 0)
        goto oom;
    for (int c = FR_WINDOW_START + 1; c < FR_NCOLS; c++) {
        const struct flow_val *v = &r->v[c];
        if (kind[c].nullable)
            n->nulls[c].p[row] = !v->set;
        struct chnative_col *col = &n->val[c];
        unsigned w = kind[c].width;
        if (w) {
            uint64_t u = v->set ? v->u : 0;
            if (w < 8 && u >> (8 * w)) {
                n->bad_col = c;
                n->bad_val = u;
                return;
            }
            put_le(col->p + row * w, u, w);
            continue;
        }
        size_t len = v->set ? v->n : 0;
        if (col->n + len + 10 > col->cap && reserve(col, col->n + len + 10) < 0)
            goto oom;
        unsigned char *p = col->p + col->n;
        if (len < 0x80)
            *p++ = (unsigned char)len;
        else
            p += varuint(p, len);
        if (len)
            memcpy(p, v->s, len);
        col->n = (size_t)(p + len - col->p);
    }
    n->rows++;
    return;
oom:
    n->oom = true;
}

size_t chnative_size(const struct chnative *n)
{
    if (n->oom || n->bad_col >= 0)
        return 0;
    size_t s = 20; /* the two varuints */
    for (int c = 0; c < FR_NCOLS; c++) {
        size_t name = strlen(flow_cols[c].name), type = strlen(flow_cols[c].ch_type);
        s += 10 + name + 10 + type;
        /* window_start: DateTime, 4 bytes a row, written by chnative_write */
        s += n->rows * (size_t)(kind[c].width + kind[c].nullable) +
             (kind[c].width ? 0 : n->val[c].n);
    }
    return s;
}

static size_t put_string(unsigned char *w, const char *s)
{
    size_t len = strlen(s), k = varuint(w, len);
    memcpy(w + k, s, len);
    return k + len;
}

size_t chnative_write(const struct chnative *n, uint32_t ws_seconds, char *out)
{
    unsigned char *w = (unsigned char *)out;
    w += varuint(w, FR_NCOLS);
    w += varuint(w, n->rows);
    for (int c = 0; c < FR_NCOLS; c++) {
        w += put_string(w, flow_cols[c].name);
        w += put_string(w, flow_cols[c].ch_type);
        if (c == FR_WINDOW_START) {
            for (size_t i = 0; i < n->rows; i++, w += 4)
                put_le(w, ws_seconds, 4);
            continue;
        }
        size_t nulls = kind[c].nullable ? n->rows : 0;
        size_t vals = kind[c].width ? n->rows * kind[c].width : n->val[c].n;
        if (nulls)
            memcpy(w, n->nulls[c].p, nulls);
        w += nulls;
        if (vals)
            memcpy(w, n->val[c].p, vals);
        w += vals;
    }
    return (size_t)(w - (unsigned char *)out);
}

void chnative_free(struct chnative *n)
{
    for (int c = 0; c < FR_NCOLS; c++) {
        free(n->val[c].p);
        free(n->nulls[c].p);
    }
    memset(n, 0, sizeof *n);
    n->bad_col = -1;
}
