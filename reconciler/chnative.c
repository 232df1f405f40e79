/* A report's flow records as a ClickHouse Native block (see chnative.h). */
#include "chnative.h"

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

static int grow(struct chnative_col *c, size_t more)
{
    if (c->n + more <= c->cap)
        return 0;
    size_t cap = c->cap ? c->cap : 256;
    while (cap < c->n + more)
        cap *= 2;
    unsigned char *p = realloc(c->p, cap);
    if (!p)
        return -1;
    c->p = p;
    c->cap = cap;
    return 0;
}

void chnative_init(struct chnative *n, size_t rows)
{
    pthread_once(&kind_once, kind_init);
    memset(n, 0, sizeof *n);
    n->bad_col = -1;
    for (int c = 0; c < FR_NCOLS && !n->oom; c++) {
        if (c == FR_WINDOW_START)
            continue;
        if (grow(&n->val[c], rows * (kind[c].width ? kind[c].width : TEXT_GUESS)) < 0 ||
            (kind[c].nullable && grow(&n->nulls[c], rows) < 0))
            n->oom = true;
    }
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

static void put_le(unsigned char *w, uint64_t v, unsigned width)
{
    for (unsigned i = 0; i < width; i++)
        w[i] = (unsigned char)(v >> (8 * i));
}

void chnative_add(struct chnative *n, const struct flow_row *r)
{
    if (n->oom || n->bad_col >= 0)
        return;
    for (int c = FR_WINDOW_START + 1; c < FR_NCOLS; c++) {
        const struct flow_val *v = &r->v[c];
        if (kind[c].nullable) {
            struct chnative_col *m = &n->nulls[c];
            if (grow(m, 1) < 0)
                goto oom;
            m->p[m->n++] = !v->set;
        }
        struct chnative_col *col = &n->val[c];
        unsigned w = kind[c].width;
        if (w) {
            uint64_t u = v->set ? v->u : 0;
            if (w < 8 && u >> (8 * w)) {
                n->bad_col = c;
                n->bad_val = u;
                return;
            }
            if (grow(col, w) < 0)
                goto oom;
            put_le(col->p + col->n, u, w);
            col->n += w;
        } else {
            size_t len = v->set ? v->n : 0;
            if (grow(col, len + 10) < 0)
                goto oom;
            col->n += varuint(col->p + col->n, len);
            if (len)
                memcpy(col->p + col->n, v->s, len);
            col->n += len;
        }
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
        s += c == FR_WINDOW_START ? n->rows * 4 : n->val[c].n + n->nulls[c].n;
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
        if (n->nulls[c].n)
            memcpy(w, n->nulls[c].p, n->nulls[c].n);
        w += n->nulls[c].n;
        if (n->val[c].n)
            memcpy(w, n->val[c].p, n->val[c].n);
        w += n->val[c].n;
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
