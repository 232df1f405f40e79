/* Packed flow rows in binary COPY format (see flow_pack.h). */
#include "flow_pack.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flow_row.h"
#include "growbuf.h"
#include "recon_db_internal.h"
#include "timeutil.h"

/* PostgreSQL's built-in type OIDs (pg_type.dat; fixed since the types exist) */
#define OID_INT8 20
#define OID_INT4 23
#define OID_TEXT 25
#define OID_INET 869
/* inet's binary form: family PGSQL_AF_INET (AF_INET + 0) or PGSQL_AF_INET6 (AF_INET + 1) */
#define PG_AF_INET  2
#define PG_AF_INET6 3

#define FIRST_ARRAY FR_HOST
#define N_ARRAYS    (FR_NCOLS - FIRST_ARRAY)

void flow_pack_copy_sql(const char *table, char *out, size_t len)
{
    size_t at = (size_t)snprintf(out, len, "COPY %s (", table);
    for (int c = 0; c < FR_NCOLS && at < len; c++)
        at += (size_t)snprintf(out + at, len - at, "%s%s", c ? ", " : "",
                               c == FR_IDX ? "idx0" : flow_cols[c].name);
    if (at < len)
        snprintf(out + at, len - at, ") FROM STDIN (FORMAT binary)");
}

/* ---- element buffers: the per-value path keeps its own appends. Through rdb_sb_add (a NUL
 * terminator and an oom test per append) bench_ingest's flow_pack_rows took 534-726 ns/flow
 * against 428-591 for these, 4 alternated pairs, slower in 3 ---- */

static int grow(char **b, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    char *n = gb_grow(*b, cap, need, 4096);
    if (!n)
        return -1;
    *b = n;
    return 0;
}

static void put32(char *w, uint32_t v)
{
    w[0] = (char)(v >> 24), w[1] = (char)(v >> 16), w[2] = (char)(v >> 8), w[3] = (char)v;
}

static void put64(char *w, uint64_t v)
{
    put32(w, (uint32_t)(v >> 32));
    put32(w + 4, (uint32_t)v);
}

int flow_pack_header(struct flow_pack *p)
{
    rdb_sb_bin_begin(&p->out);
    return p->out.oom ? -1 : 0;
}

int flow_pack_trailer(struct flow_pack *p)
{
    rdb_sb_bin_end(&p->out);
    return p->out.oom ? -1 : 0;
}

void flow_pack_free(struct flow_pack *p)
{
    free(p->out.p);
    memset(p, 0, sizeof *p);
}

/* ---- one run's columns ---- */

struct col {
    char *b; /* the elements: int32 length (-1 NULL), bytes */
    size_t len, cap;
    bool has_null;
    bool keep; /* a value other than NULL and the column's default: the array is sent */
};

struct run {
    struct col c[N_ARRAYS];
    uint32_t n;
    int64_t ws_us, seq, idx0, idx_next;
    const char *ws, *agent, *seqt; /* the run's key fields as written (escaped) */
    size_t ws_n, agent_n, seq_n;
};

struct field {
    const char *s;
    size_t n;
};

/* Per column, worked out once from flow_cols: the element's kind, and whether the column has a
 * default (0 for the byte and operation counts, '' for the Kubernetes names: the view's
 * coalesce). strcmp of the type per value was ~4 % of the packing's CPU. */
enum elem { E_TEXT, E_INT4, E_INT8, E_INET };
static enum elem g_elem[FR_NCOLS];
static bool g_default[FR_NCOLS];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init_cols(void)
{
    for (int c = 0; c < FR_NCOLS; c++) {
        const struct flow_col_def *d = &flow_cols[c];
        g_elem[c] = d->type == FRT_INT    ? (strcmp(d->pg_type, "integer") == 0 ? E_INT4 : E_INT8)
                    : d->type == FRT_INET ? E_INET
                                          : E_TEXT;
        g_default[c] = c == FR_TX_BYTES || c == FR_RX_BYTES || c == FR_NFS_BYTES ||
                       c == FR_NFS_OPS || c == FR_NAMESPACE || c == FR_POD ||
                       c == FR_CONTAINER_NAME;
    }
}

static bool has_default(int c)
{
    return g_default[c];
}

static bool is_null(struct field f)
{
    return f.n == 2 && f.s[0] == '\\' && f.s[1] == 'N';
}

static bool is_int4(int c)
{
    return g_elem[c] == E_INT4;
}

struct ctx {
    size_t line; /* 1-based */
    char *err;
    size_t errlen;
    struct rdb_sbuf scratch; /* an unescaped text */
};

static int bad(struct ctx *x, int c, struct field f, const char *what)
{
    snprintf(x->err, x->errlen, "flow record %zu: %s '%.*s' %s", x->line, flow_cols[c].name,
             (int)(f.n > 64 ? 64 : f.n), f.s, what);
    return -1;
}

static int oom(struct ctx *x)
{
    snprintf(x->err, x->errlen, "packing flow records: out of memory");
    return -1;
}

/* A COPY text integer: an optional '-', then decimal digits. */
static int parse_int(struct ctx *x, int c, struct field f, int64_t *v)
{
    size_t i = 0;
    bool neg = f.n && f.s[0] == '-';
    i += neg;
    if (i == f.n)
        return bad(x, c, f, "is not an integer");
    uint64_t u = 0;
    for (; i < f.n; i++) {
        unsigned d = (unsigned)(f.s[i] - '0');
        if (d > 9 || u > (UINT64_C(9223372036854775808) - d) / 10)
            return bad(x, c, f, "is not an integer of 64 bits");
        u = u * 10 + d;
    }
    if (!neg && u > INT64_MAX)
        return bad(x, c, f, "is not an integer of 64 bits");
    *v = neg ? (int64_t)(0 - u) : (int64_t)u;
    if (is_int4(c) && (*v < INT32_MIN || *v > INT32_MAX))
        return bad(x, c, f, "is out of range for type integer");
    return 0;
}

/* The text of f with COPY's escapes undone (f itself when it has none). */
static int unescaped(struct ctx *x, int c, struct field *f)
{
    if (!memchr(f->s, '\\', f->n))
        return 0;
    x->scratch.n = 0;
    rdb_sb_add(&x->scratch, f->s, f->n); /* rare: a text with an escape */
    if (x->scratch.oom)
        return oom(x);
    size_t n = flow_row_unescape_n(x->scratch.p, f->n);
    if (memchr(x->scratch.p, 0, n)) /* \0 */
        return bad(x, c, *f, "holds a NUL byte, which text cannot");
    f->s = x->scratch.p;
    f->n = n;
    return 0;
}

/* An element: its length word (-1: NULL), then its bytes. 0, or -1 out of memory. */
static int add_bytes(struct col *k, const void *v, int32_t n)
{
    if (grow(&k->b, &k->cap, k->len + 4 + (n > 0 ? (size_t)n : 0)) < 0)
        return -1;
    put32(k->b + k->len, (uint32_t)n);
    k->len += 4;
    if (n > 0) {
        memcpy(k->b + k->len, v, (size_t)n);
        k->len += (size_t)n;
    }
    return 0;
}

/* A canonical dotted-decimal IPv4 address (four 0-255 without leading zeros, no suffix) as inet's
 * binary form into v (8 bytes); false for anything else, which inet_pton then reads. */
static bool ipv4_fast(struct field f, char *v)
{
    const char *p = f.s, *e = f.s + f.n;
    for (int i = 0; i < 4; i++) {
        if (p == e || *p < '0' || *p > '9' || (*p == '0' && p + 1 < e && p[1] != '.'))
            return false;
        unsigned o = 0;
        int d = 0;
        for (; p < e && *p >= '0' && *p <= '9' && d < 3; p++, d++)
            o = o * 10 + (unsigned)(*p - '0');
        if (o > 255 || (i < 3 && (p == e || *p++ != '.')))
            return false;
        v[4 + i] = (char)o;
    }
    if (p != e)
        return false;
    v[0] = PG_AF_INET, v[1] = 32, v[2] = 0, v[3] = 4;
    return true;
}

static int add_value(struct ctx *x, struct run *r, int c, struct field f)
{
    struct col *k = &r->c[c - FIRST_ARRAY];
    const struct flow_col_def *d = &flow_cols[c];
    if (is_null(f)) {
        if (!d->nullable)
            return bad(x, c, f, "is NULL, which the column does not take");
        k->has_null = true;
        return add_bytes(k, NULL, -1) < 0 ? oom(x) : 0;
    }
    char v[20];
    int32_t n;
    switch (g_elem[c]) {
    case E_INT4:
    case E_INT8: {
        int64_t i;
        if (parse_int(x, c, f, &i) < 0)
            return -1;
        if (is_int4(c))
            put32(v, (uint32_t)(int32_t)i), n = 4;
        else
            put64(v, (uint64_t)i), n = 8;
        k->keep |= !has_default(c) || i != 0;
        break;
    }
    case E_INET: {
        if (ipv4_fast(f, v)) { /* what ingest writes: dotted decimal, no leading zeros */
            n = 8;
            k->keep = true;
            break;
        }
        char t[64];
        if (f.n >= sizeof t)
            return bad(x, c, f, "is not an IP address");
        memcpy(t, f.s, f.n);
        t[f.n] = 0;
        char *slash = strchr(t, '/');
        long bits = -1;
        if (slash) {
            char *e;
            *slash = 0;
            errno = 0;
            bits = strtol(slash + 1, &e, 10);
            if (e == slash + 1 || *e || errno)
                return bad(x, c, f, "is not an IP address");
        }
        unsigned char a[16];
        if (inet_pton(AF_INET, t, a) == 1) {
            if (bits > 32)
                return bad(x, c, f, "is not an IP address");
            v[0] = PG_AF_INET, v[1] = (char)(bits < 0 ? 32 : bits), v[2] = 0, v[3] = 4;
            memcpy(v + 4, a, 4);
            n = 8;
        } else if (inet_pton(AF_INET6, t, a) == 1) {
            if (bits > 128)
                return bad(x, c, f, "is not an IP address");
            v[0] = PG_AF_INET6, v[1] = (char)(bits < 0 ? 128 : bits), v[2] = 0, v[3] = 16;
            memcpy(v + 4, a, 16);
            n = 20;
        } else {
            return bad(x, c, f, "is not an IP address");
        }
        k->keep = true;
        break;
    }
    default: /* text */
        if (unescaped(x, c, &f) < 0)
            return -1;
        k->keep |= !has_default(c) || f.n > 0;
        return add_bytes(k, f.s, (int32_t)f.n) < 0 ? oom(x) : 0;
    }
    return add_bytes(k, v, n) < 0 ? oom(x) : 0;
}

static uint32_t elem_oid(int c)
{
    static const uint32_t oid[] = {
        [E_TEXT] = OID_TEXT, [E_INT4] = OID_INT4, [E_INT8] = OID_INT8, [E_INET] = OID_INET};
    return oid[g_elem[c]];
}

/* The run as one tuple; the run is left empty. */
static int flush(struct ctx *x, struct flow_pack *p, struct run *r)
{
    if (!r->n)
        return 0;
    struct rdb_sbuf *b = &p->out;
    rdb_sb_be(b, 4 + N_ARRAYS, 2); /* fields */
    rdb_sb_be(b, 8, 4);
    rdb_sb_be(b, (uint64_t)(r->ws_us - RDB_PG_EPOCH_OFFSET_US), 8);
    /* the agent id: unescaped into the scratch */
    struct field a = {r->agent, r->agent_n};
    if (unescaped(x, FR_AGENT_ID, &a) < 0)
        return -1;
    rdb_sb_be(b, a.n, 4);
    rdb_sb_add(b, a.s, a.n);
    rdb_sb_be(b, 8, 4);
    rdb_sb_be(b, (uint64_t)r->seq, 8);
    rdb_sb_be(b, 4, 4);
    rdb_sb_be(b, (uint32_t)(int32_t)r->idx0, 4);
    for (int i = 0; i < N_ARRAYS; i++) {
        struct col *k = &r->c[i];
        if (!k->keep) {
            rdb_sb_be(b, UINT32_MAX, 4); /* NULL: all NULL, or all the default */
        } else {
            rdb_sb_array_head_nulls(b, r->n, k->len, elem_oid(FIRST_ARRAY + i), k->has_null);
            rdb_sb_add(b, k->b, k->len);
        }
        k->len = 0;
        k->has_null = false;
        k->keep = FIRST_ARRAY + i == FR_HOST || FIRST_ARRAY + i == FR_SOURCE;
    }
    if (b->oom)
        return oom(x);
    p->rows++;
    r->n = 0;
    return 0;
}

static bool same(const char *a, size_t an, const char *b, size_t bn)
{
    return an == bn && memcmp(a, b, an) == 0;
}

/* The run's elements so far, as the binary COPY carries them (a length word each, then the
 * bytes), all-NULL columns included. */
static size_t run_bytes(const struct run *r)
{
    size_t n = 0;
    for (int i = 0; i < N_ARRAYS; i++)
        n += r->c[i].len;
    return n;
}

/* The line's key fields: a new run unless they continue the current one (and the current one is
 * under FLOW_PACK_ROW_BYTES). */
static int start_or_continue(struct ctx *x, struct flow_pack *p, struct run *r,
                             const struct field *f)
{
    int64_t idx;
    if (is_null(f[FR_IDX]) || parse_int(x, FR_IDX, f[FR_IDX], &idx) < 0)
        return is_null(f[FR_IDX]) ? bad(x, FR_IDX, f[FR_IDX], "is NULL") : -1;
    if (r->n && idx == r->idx_next && run_bytes(r) < FLOW_PACK_ROW_BYTES &&
        same(r->ws, r->ws_n, f[FR_WINDOW_START].s, f[FR_WINDOW_START].n) &&
        same(r->agent, r->agent_n, f[FR_AGENT_ID].s, f[FR_AGENT_ID].n) &&
        same(r->seqt, r->seq_n, f[FR_SEQ].s, f[FR_SEQ].n)) {
        r->idx_next++;
        return 0;
    }
    if (flush(x, p, r) < 0)
        return -1;
    if (is_null(f[FR_WINDOW_START]) || is_null(f[FR_AGENT_ID]) || is_null(f[FR_SEQ]))
        return bad(x, FR_AGENT_ID, f[FR_AGENT_ID], "(or its window or seq) is NULL");
    char t[64];
    if (f[FR_WINDOW_START].n >= sizeof t)
        return bad(x, FR_WINDOW_START, f[FR_WINDOW_START], "is not an RFC 3339 time");
    memcpy(t, f[FR_WINDOW_START].s, f[FR_WINDOW_START].n);
    t[f[FR_WINDOW_START].n] = 0;
    if (tm_parse_rfc3339(t, &r->ws_us) < 0)
        return bad(x, FR_WINDOW_START, f[FR_WINDOW_START], "is not an RFC 3339 time");
    if (parse_int(x, FR_SEQ, f[FR_SEQ], &r->seq) < 0)
        return -1;
    r->ws = f[FR_WINDOW_START].s, r->ws_n = f[FR_WINDOW_START].n;
    r->agent = f[FR_AGENT_ID].s, r->agent_n = f[FR_AGENT_ID].n;
    r->seqt = f[FR_SEQ].s, r->seq_n = f[FR_SEQ].n;
    r->idx0 = idx;
    r->idx_next = idx + 1;
    return 0;
}

int flow_pack_rows(struct flow_pack *p, const char *text, size_t len, char *err, size_t errlen)
{
    pthread_once(&g_once, init_cols);
    struct run r;
    memset(&r, 0, sizeof r);
    r.c[FR_HOST - FIRST_ARRAY].keep = r.c[FR_SOURCE - FIRST_ARRAY].keep = true;
    struct ctx x = {.err = err, .errlen = errlen};
    int rc = 0;
    const char *s = text, *end = text + len;
    while (s < end && rc == 0) {
        x.line++;
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (!nl) {
            snprintf(err, errlen, "flow record %zu: the line has no end", x.line);
            rc = -1;
            break;
        }
        struct field f[FR_NCOLS];
        int c = 0;
        for (const char *q = s; c < FR_NCOLS; c++) {
            const char *tab = c + 1 < FR_NCOLS ? memchr(q, '\t', (size_t)(nl - q)) : nl;
            if (!tab)
                break;
            f[c] = (struct field){q, (size_t)(tab - q)};
            q = tab + 1;
        }
        if (c < FR_NCOLS || memchr(f[FR_NCOLS - 1].s, '\t', f[FR_NCOLS - 1].n)) {
            snprintf(err, errlen, "flow record %zu: not the %d columns of a flow record", x.line,
                     FR_NCOLS);
            rc = -1;
            break;
        }
        rc = start_or_continue(&x, p, &r, f);
        for (int k = FIRST_ARRAY; k < FR_NCOLS && rc == 0; k++)
            rc = add_value(&x, &r, k, f[k]);
        if (rc == 0)
            r.n++;
        s = nl + 1;
    }
    if (rc == 0)
        rc = flush(&x, p, &r);
    for (int i = 0; i < N_ARRAYS; i++)
        free(r.c[i].b);
    free(x.scratch.p);
    return rc;
}
