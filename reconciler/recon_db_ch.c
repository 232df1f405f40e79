/* A window's flows from ClickHouse (see recon_db_internal.h): its rows as stored, read only when
 * every report of the window has reached ClickHouse. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "chhttp.h"
#include "chstore.h"
#include "hugealloc.h"
#include "recon_db_internal.h"

static void parse_inet(const char *s, struct recon_addr *a)
{
    memset(a, 0, sizeof *a);
    if (!s)
        return;
    if (inet_pton(AF_INET, s, a->addr) == 1)
        a->family = AF_INET;
    else if (inet_pton(AF_INET6, s, a->addr) == 1)
        a->family = AF_INET6;
}

/* A count or port as ClickHouse writes it (decimal digits); NULL: 0. */
static uint64_t parse_u64(const char *s)
{
    if (!s)
        return 0;
    uint64_t v = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9' && p - s < 19; p++)
        v = v * 10 + (uint64_t)(*p - '0');
    return *p ? strtoull(s, NULL, 10) : v; /* anything else (20 digits): as strtoull reads it */
}

/* The query: every column the reconciliation reads and each row's (seq, agent, idx), one row per
 * flow record as it was stored, no GROUP BY and no ORDER BY. Summing per (connection side, owner)
 * in ClickHouse removed nothing when each agent reports a connection side once per window (the
 * benchmark's 5 M groups: as many rows back), and on 18.16 it cost 10.8 s in memory (2.8 GB) or
 * 14 s spilling past 1 GB against 3.3 s for this read (reconciler/README.md "The ClickHouse
 * path's read"). recon.c makes its first-flow choices by each row's own (seq, agent, idx)
 * (recon_flow_order), so the result is the PostgreSQL path's. final: read through FINAL (the
 * window holds duplicates of a retried insert). */
static int build_query(const struct cfg *cfg, int64_t ws, bool final, char *sql, size_t len,
                       int pos[FR_NCOLS])
{
    char sel[1536];
    size_t a = 0;
    int k = 0;
    for (int c = 0; c < FR_NCOLS; c++) {
        pos[c] = -1;
        if (!(RDB_FLOW_COLS & RDB_FR(c)))
            continue;
        int w = snprintf(sel + a, sizeof sel - a, "%s%s", k ? ", " : "", flow_cols[c].name);
        if (w < 0 || (size_t)w >= sizeof sel - a)
            return -1;
        a += (size_t)w;
        pos[c] = k++;
    }
    int w = snprintf(sql, len,
                     "SELECT %s, seq, agent_id, idx FROM %s%s"
                     " WHERE window_start = toDateTime(%" PRId64 ") FORMAT TabSeparated",
                     sel, chstore_table(&cfg->clickhouse), final ? " FINAL" : "",
                     (int64_t)(ws / TM_USEC_PER_SEC));
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* Whether the window's rows in ClickHouse are more than its reports carry (n_reported: the sum
 * of flow_reports.n_flows), i.e. a retried insert left duplicates that only FINAL (or a merge)
 * removes. Every report's flows reached ClickHouse (rdb_ch_pending) and each report carries
 * n_flows distinct keys (agent_id, seq, idx), so as many rows as that means no duplicate, and
 * the GROUP BY can skip FINAL, which 18.16 reads in one stream per partition. */
static int has_duplicates(const struct cfg *cfg, int64_t ws, long long n_reported, bool *dup,
                          char *err, size_t errlen)
{
    char sql[256], e[512];
    snprintf(sql, sizeof sql,
             "SELECT count() FROM %s WHERE window_start = toDateTime(%" PRId64
             ") FORMAT TabSeparated",
             chstore_table(&cfg->clickhouse), (int64_t)(ws / TM_USEC_PER_SEC));
    struct httpc_response resp;
    if (chstore_exec(&cfg->clickhouse, sql, NULL, 0, NULL, &resp, e, sizeof e) < 0) {
        snprintf(err, errlen, "counting the window's flows in ClickHouse: %s", e);
        return -1;
    }
    long long rows = resp.body ? atoll(resp.body) : -1;
    httpc_response_free(&resp);
    *dup = rows != n_reported;
    return 0;
}

int rdb_ch_pending(PGconn *db, int64_t ws, long long *n, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    const char *p[] = {from};
    PGresult *r = rdb_q(db, "checking the ClickHouse outbox", err, errlen,
                        "SELECT count(*) FROM flow_reports WHERE window_start = $1::timestamptz"
                        " AND ch_pending",
                        1, p);
    if (!r)
        return -1;
    *n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

/* ---- the answer, parsed as it arrives ----
 * chhttp_stream hands the answer over in pieces; each complete line is split into its fields in a
 * scratch buffer (a line cut between two pieces waits there for its end) and turned into a
 * struct recon_flow at once, its strings copied into the load's string table (shared with equal
 * values met recently, as on the PostgreSQL path), so the answer is never held whole (a 5 M
 * window's is ~630 MB) and the parse runs while ClickHouse is still sending. */
#define CH_LINE_MAX ((size_t)16 << 20) /* a longer row is not one of ours */

struct ch_read {
    struct rdb_inputs *in;
    const int *pos;
    int nf;     /* fields per line */
    size_t cap; /* slots in in->flows and in->order */
    char *buf;  /* the scratch: a line cut short, then the next piece */
    size_t n, bcap;
    unsigned long long rows;
    bool oom; /* a string could not be copied */
    char err[400];
};

/* v's copy in the load's string table (NULL for NULL); r->oom when out of memory. */
static const char *ch_str(struct ch_read *r, int col, const char *v)
{
    const char *s = v ? rdb_str_put(r->in->strs, col, v, strlen(v)) : NULL;
    if (v && !s)
        r->oom = true;
    return s;
}

static int ch_grow(struct ch_read *r)
{
    size_t cap = r->cap ? r->cap * 2 : 1024;
    struct recon_flow *f = huge_realloc(r->in->flows, r->cap * sizeof *f, cap * sizeof *f);
    if (f)
        r->in->flows = f;
    struct recon_flow_order *o =
        f ? huge_realloc(r->in->order, r->cap * sizeof *o, cap * sizeof *o) : NULL;
    if (!o)
        return -1;
    r->in->order = o;
    r->cap = cap;
    return 0;
}

/* A field f[0..len) NUL-terminated at len that holds a backslash: NULL for \N, else unescaped
 * in place. */
static char *ch_escaped(char *f, size_t len)
{
    if (len == 2 && f[0] == '\\' && f[1] == 'N')
        return NULL;
    f[flow_row_unescape_n(f, len)] = 0;
    return f;
}

/* Splits line[0..len) (NUL at len) at its tabs in place: v[k] the k-th field (up to max of them),
 * unescaped, NULL for \N; returns how many fields the line has. Tabs and backslashes are found 16
 * bytes at a time where SSE2 is (a line is ~125 bytes of ~24 short fields: one memchr per field
 * was a third of the load's CPU); a field without a backslash is used as it is. */
static int ch_split(char *line, size_t len, char **v, int max)
{
    int k = 0;
    char *f = line;
    bool esc = false;
    size_t i = 0;
#define CH_AT(p)                                                                                   \
    do {                                                                                           \
        if (*(p) == '\\') {                                                                        \
            esc = true;                                                                            \
        } else {                                                                                   \
            *(p) = 0;                                                                              \
            if (k < max)                                                                           \
                v[k] = esc ? ch_escaped(f, (size_t)((p)-f)) : f;                                   \
            k++;                                                                                   \
            esc = false;                                                                           \
            f = (p) + 1;                                                                           \
        }                                                                                          \
    } while (0)
#ifdef __SSE2__
    const __m128i tab = _mm_set1_epi8('\t'), bsl = _mm_set1_epi8('\\');
    for (; i + 16 <= len; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(line + i));
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_cmpeq_epi8(x, tab), _mm_cmpeq_epi8(x, bsl)));
        for (; m; m &= m - 1)
            CH_AT(line + i + (unsigned)__builtin_ctz(m));
    }
#endif
    for (; i < len; i++)
        if (line[i] == '\t' || line[i] == '\\')
            CH_AT(line + i);
#undef CH_AT
    if (k < max)
        v[k] = esc ? ch_escaped(f, (size_t)(line + len - f)) : f;
    return k + 1;
}

/* One line line[0..len) (NUL-terminated, no newline) into the next flow; -1 with r->err. */
static int ch_line(struct ch_read *r, char *line, size_t len)
{
    char *v[FR_NCOLS + 3], *end = line + len;
    int k = ch_split(line, len, v, r->nf);
    if (k != r->nf) { /* e.g. an exception ClickHouse wrote into the answer after its 200 */
        for (char *p = line; p < end; p++)
            if (!*p)
                *p = '\t';
        snprintf(r->err, sizeof r->err,
                 "loading flows from ClickHouse: line %llu of the answer has %d fields, not %d:"
                 " \"%.120s\"",
                 r->rows + 1, k, r->nf, line);
        return -1;
    }
    if (r->in->n_flows == r->cap && ch_grow(r) < 0) {
        snprintf(r->err, sizeof r->err, "loading flows from ClickHouse: out of memory");
        return -1;
    }
    int nf = r->nf;
    const char *agent = ch_str(r, RDB_STR_AGENT, v[nf - 2] ? v[nf - 2] : "");
    struct recon_flow *fl = &r->in->flows[r->in->n_flows];
    memset(fl, 0, sizeof *fl);
    const int *pos = r->pos;
#define V(c) v[pos[c]]
    fl->host = ch_str(r, RDB_STR_HOST, V(FR_HOST));
    fl->user = ch_str(r, RDB_STR_USER, V(FR_USER_NAME));
    fl->program = ch_str(r, RDB_STR_PROGRAM, V(FR_PROGRAM));
    fl->workflow = ch_str(r, RDB_STR_WORKFLOW, V(FR_WORKFLOW));
    fl->kube = (struct recon_kube){ch_str(r, RDB_STR_NAMESPACE, V(FR_NAMESPACE)),
                                   ch_str(r, RDB_STR_POD, V(FR_POD)),
                                   ch_str(r, RDB_STR_CONTAINER, V(FR_CONTAINER_NAME))};
    if (r->oom) {
        snprintf(r->err, sizeof r->err, "loading flows from ClickHouse: out of memory");
        return -1;
    }
    r->in->order[r->in->n_flows] =
        (struct recon_flow_order){parse_u64(v[nf - 3]), agent, parse_u64(v[nf - 1])};
    r->in->n_flows++;
    r->rows++;
    rdb_flow_kinds(fl, V(FR_SOURCE), V(FR_PROTO), V(FR_ROLE), V(FR_NFS_OP));
    parse_inet(V(FR_LOCAL_ADDR), &fl->local);
    if (fl->source == RECON_FLOW_NFS) {
        parse_inet(V(FR_NFS_SERVER), &fl->nfs_server);
        fl->nfs_port = (uint16_t)parse_u64(V(FR_NFS_PORT));
        fl->nfs_bytes = parse_u64(V(FR_NFS_BYTES));
        fl->nfs_export = ch_str(r, RDB_STR_EXPORT, V(FR_NFS_EXPORT));
        if (r->oom) {
            snprintf(r->err, sizeof r->err, "loading flows from ClickHouse: out of memory");
            return -1;
        }
        return 0;
    }
    fl->local_port = (uint16_t)parse_u64(V(FR_LOCAL_PORT));
    parse_inet(V(FR_REMOTE_ADDR), &fl->remote);
    fl->remote_port = (uint16_t)parse_u64(V(FR_REMOTE_PORT));
    fl->tx_bytes = parse_u64(V(FR_TX_BYTES));
    fl->rx_bytes = parse_u64(V(FR_RX_BYTES));
#undef V
    return 0;
}

/* chhttp_stream's sink: the piece after what waits in the scratch, then every complete line. */
static int ch_piece(void *ctx, const char *data, size_t len)
{
    struct ch_read *r = ctx;
    if (r->n + len + 1 > r->bcap) {
        size_t cap = r->bcap ? r->bcap : 65536;
        while (cap < r->n + len + 1)
            cap *= 2;
        char *b = cap <= CH_LINE_MAX + 65536 ? realloc(r->buf, cap) : NULL;
        if (!b) {
            snprintf(r->err, sizeof r->err,
                     cap > CH_LINE_MAX + 65536
                         ? "loading flows from ClickHouse: a line of the answer is over 16 MiB"
                         : "loading flows from ClickHouse: out of memory");
            return -1;
        }
        r->buf = b;
        r->bcap = cap;
    }
    memcpy(r->buf + r->n, data, len);
    r->n += len;
    char *p = r->buf, *end = r->buf + r->n, *eol;
    while ((eol = memchr(p, '\n', (size_t)(end - p)))) {
        *eol = 0;
        if (ch_line(r, p, (size_t)(eol - p)) < 0)
            return -1;
        p = eol + 1;
    }
    r->n = (size_t)(end - p);
    memmove(r->buf, p, r->n);
    return 0;
}

/* The window's rows into in (empty); expect: the rows it should hold (the arrays' first size). */
static int query_flows(const struct cfg *cfg, int64_t ws, bool final, size_t expect,
                       struct rdb_inputs *in, unsigned long long *rows, char *err, size_t errlen)
{
    char sql[4096];
    int pos[FR_NCOLS];
    if (build_query(cfg, ws, final, sql, sizeof sql, pos) < 0) {
        snprintf(err, errlen, "loading flows from ClickHouse: query too long");
        return -1;
    }
    struct ch_read r = {.in = in, .pos = pos, .nf = 3};
    for (int c = 0; c < FR_NCOLS; c++)
        r.nf += pos[c] >= 0;
    r.cap = expect + 1;
    in->flows = huge_alloc(r.cap * sizeof *in->flows);
    in->order = huge_alloc(r.cap * sizeof *in->order);
    in->strs = rdb_strtab_new();
    if (!in->flows || !in->order || !in->strs) {
        snprintf(err, errlen, "loading flows from ClickHouse: out of memory");
        return -1;
    }
    char e[512];
    int rc = chhttp_stream(&cfg->clickhouse, sql, NULL, ch_piece, &r, e, sizeof e);
    if (rc == 0 && r.n) { /* the last line without its newline: ClickHouse ends every row */
        snprintf(err, errlen, "loading flows from ClickHouse: the answer ends inside a line");
        rc = -1;
    } else if (rc < 0) {
        snprintf(err, errlen, "%s", r.err[0] ? r.err : e);
    }
    free(r.buf);
    *rows = r.rows;
    return rc;
}

int rdb_load_flows_ch(PGconn *db, const struct cfg *cfg, int64_t ws, long long n_reported,
                      struct rdb_inputs *in, char *err, size_t errlen)
{
    long long pending = 0;
    if (rdb_ch_pending(db, ws, &pending, err, errlen) < 0)
        return -1;
    if (pending > 0) {
        snprintf(err, errlen, "%lld report(s) of the window are not in ClickHouse yet", pending);
        return 1;
    }
    bool dup = true;
    if (has_duplicates(cfg, ws, n_reported, &dup, err, errlen) < 0)
        return -1;
    unsigned long long rows = 0;
    size_t expect = n_reported > 0 ? (size_t)n_reported : 0;
    if (query_flows(cfg, ws, dup, expect, in, &rows, err, errlen) < 0)
        return -1;
    if (dup || rows == (unsigned long long)n_reported)
        return 0;
    /* rows arrived between the count and the query (a new report, or a retried insert's
     * duplicates): what was read may hold duplicates, so read it again through FINAL */
    huge_free(in->flows);
    huge_free(in->order);
    rdb_strtab_free(in->strs);
    in->flows = NULL;
    in->order = NULL;
    in->strs = NULL;
    in->n_flows = 0;
    return query_flows(cfg, ws, true, expect, in, &rows, err, errlen);
}
