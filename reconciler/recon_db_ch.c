/* A window's flows from ClickHouse (see recon_db_internal.h): its rows as stored, read only when
 * every report of the window has reached ClickHouse. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "chhttp.h"
#include "chstore.h"
#include "hugealloc.h"
#include "recon_db_internal.h"

/* A column of the answer as RowBinary writes it (flow_cols[c].ch_type): a String (its length as
 * LEB128, then its bytes) or an unsigned integer of 2, 4 or 8 bytes, little-endian; a Nullable
 * one is a byte first, 1 for NULL (nothing follows) or 0. */
struct ch_type {
    unsigned char width; /* 0: a String */
    bool nullable;
};

static int ch_type_of(const char *t, struct ch_type *out)
{
    out->nullable = strncmp(t, "Nullable(", 9) == 0;
    if (out->nullable)
        t += 9;
    static const struct {
        const char *name;
        unsigned char width;
    } known[] = {{"String", 0}, {"UInt16", 2}, {"UInt32", 4}, {"UInt64", 8}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        size_t n = strlen(known[i].name);
        if (strncmp(t, known[i].name, n) == 0 && t[n] == (out->nullable ? ')' : '\0')) {
            out->width = known[i].width;
            return 0;
        }
    }
    return -1;
}

/* The query: every column the reconciliation reads and each row's (seq, agent, idx), one row per
 * flow record as it was stored, no GROUP BY and no ORDER BY. Summing per (connection side, owner)
 * in ClickHouse removed nothing when each agent reports a connection side once per window (the
 * benchmark's 5 M groups: as many rows back), and on 18.16 it cost 10.8 s in memory (2.8 GB) or
 * 14 s spilling past 1 GB against 3.3 s for this read (reconciler/README.md "The ClickHouse
 * path's read"). recon.c makes its first-flow choices by each row's own (seq, agent, idx)
 * (recon_flow_order), so the result is the PostgreSQL path's. final: read through FINAL (the
 * window holds duplicates of a retried insert). RowBinary: ClickHouse sends the 5 M window in
 * 2.0-2.1 s against 2.5-2.6 s as TabSeparated, and nothing is unescaped or converted from text
 * here. types[k]: the answer's k-th column. */
static int build_query(const struct cfg *cfg, int64_t ws, bool final, char *sql, size_t len,
                       int pos[FR_NCOLS], struct ch_type types[FR_NCOLS + 3])
{
    char sel[1536];
    size_t a = 0;
    int k = 0;
    for (int c = 0; c < FR_NCOLS; c++) {
        pos[c] = -1;
        if (!(RDB_FLOW_COLS & RDB_FR(c)))
            continue;
        int w = snprintf(sel + a, sizeof sel - a, "%s%s", k ? ", " : "", flow_cols[c].name);
        if (w < 0 || (size_t)w >= sizeof sel - a || ch_type_of(flow_cols[c].ch_type, &types[k]))
            return -1;
        a += (size_t)w;
        pos[c] = k++;
    }
    if (ch_type_of(flow_cols[FR_SEQ].ch_type, &types[k]) ||
        ch_type_of(flow_cols[FR_AGENT_ID].ch_type, &types[k + 1]) ||
        ch_type_of(flow_cols[FR_IDX].ch_type, &types[k + 2]))
        return -1;
    int w = snprintf(sql, len,
                     "SELECT %s, seq, agent_id, idx FROM %s%s"
                     " WHERE window_start = toDateTime(%" PRId64 ") FORMAT RowBinary",
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
 * chhttp_stream hands the answer over in pieces; each complete row is read from a scratch buffer
 * (a row cut between two pieces waits there for the rest) and turned into a struct recon_flow at
 * once, its strings copied into the load's string table (shared with equal values met recently,
 * as on the PostgreSQL path), so the answer is never held whole (a 5 M window's is ~680 MB) and
 * the parse runs while ClickHouse is still sending. ClickHouse 18.16 writes an exception that
 * happens after its 200 into the body as text (seen with max_result_rows: "Code: 396,
 * e.displayText() = DB::Exception: Limit for result exceeded ..." after 12,000 rows): read as a
 * row, text breaks a Nullable column's 0/1 byte or leaves the answer inside a row, and the load
 * fails with the row's number and its bytes as text, never counts a wrong window. */
#define CH_FIELD_MAX ((size_t)16 << 20) /* a longer string is not one of ours */

struct ch_val {
    const char *s; /* a String's bytes (not NUL-terminated), NULL for NULL */
    size_t len;
    uint64_t u; /* an integer, 0 for NULL */
};

struct ch_read {
    struct rdb_inputs *in;
    const int *pos;
    const struct ch_type *types;
    int nf;     /* columns per row */
    size_t cap; /* slots in in->flows and in->order */
    char *buf;  /* the scratch: a row cut short, then the next piece */
    size_t n, bcap;
    unsigned long long rows;
    bool oom; /* a string could not be copied */
    char err[400];
};

/* v's copy in the load's string table (NULL for NULL); r->oom when out of memory. */
static const char *ch_str(struct ch_read *r, int col, const struct ch_val *v)
{
    const char *s = v->s ? rdb_str_put(r->in->strs, col, v->s, v->len) : NULL;
    if (v->s && !s)
        r->oom = true;
    return s;
}

/* v as a NUL-terminated string in buf (NULL for NULL; a value longer than buf: "", which no
 * caller takes for a name or an address). */
static const char *ch_cstr(const struct ch_val *v, char *buf, size_t size)
{
    if (!v->s)
        return NULL;
    size_t n = v->len < size ? v->len : 0;
    memcpy(buf, v->s, n);
    buf[n] = 0;
    return buf;
}

static void parse_inet(const struct ch_val *v, struct recon_addr *a)
{
    char s[64];
    memset(a, 0, sizeof *a);
    if (!ch_cstr(v, s, sizeof s))
        return;
    if (inet_pton(AF_INET, s, a->addr) == 1)
        a->family = AF_INET;
    else if (inet_pton(AF_INET6, s, a->addr) == 1)
        a->family = AF_INET6;
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

/* r->err: the row that is not one, with its first bytes as text (others as '.'). */
static int ch_bad(struct ch_read *r, const char *row, const char *end, int col, const char *why)
{
    char text[161];
    size_t n = (size_t)(end - row) < sizeof text - 1 ? (size_t)(end - row) : sizeof text - 1;
    for (size_t i = 0; i < n; i++)
        text[i] = row[i] >= 0x20 && row[i] < 0x7f ? row[i] : '.';
    text[n] = 0;
    char where[32] = ""; /* col < 0: the row as a whole */
    if (col >= 0)
        snprintf(where, sizeof where, "column %d: ", col + 1);
    snprintf(r->err, sizeof r->err,
             "loading flows from ClickHouse: row %llu of the answer is not a flow record (%s%s): "
             "\"%s\"",
             r->rows + 1, where, why, text);
    return -1;
}

/* One row from *pp into v: 1 (and *pp after it), 0 when it goes on past end, -1 (r->err). */
static int ch_row(struct ch_read *r, const char **pp, const char *end, struct ch_val *v)
{
    const unsigned char *p = (const unsigned char *)*pp, *e = (const unsigned char *)end;
    for (int k = 0; k < r->nf; k++) {
        const struct ch_type *t = &r->types[k];
        v[k] = (struct ch_val){0};
        if (t->nullable) {
            if (p == e)
                return 0;
            if (*p > 1)
                return ch_bad(r, *pp, end, k, "a Nullable column's first byte is neither 0 nor 1");
            if (*p++ == 1)
                continue;
        }
        if (t->width) {
            if ((size_t)(e - p) < t->width)
                return 0;
            for (unsigned i = t->width; i-- > 0;)
                v[k].u = v[k].u << 8 | p[i];
            p += t->width;
            continue;
        }
        uint64_t len = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (p == e)
                return 0;
            if (shift > 28)
                return ch_bad(r, *pp, end, k, "a string's length runs over 5 bytes");
            unsigned char b = *p++;
            len |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80))
                break;
        }
        if (len > CH_FIELD_MAX)
            return ch_bad(r, *pp, end, k, "a string over 16 MiB");
        if ((size_t)(e - p) < len)
            return 0;
        v[k].s = (const char *)p;
        v[k].len = (size_t)len;
        p += len;
    }
    *pp = (const char *)p;
    return 1;
}

/* The row v into the next flow; -1 with r->err. */
static int ch_flow(struct ch_read *r, const struct ch_val *v)
{
    if (r->in->n_flows == r->cap && ch_grow(r) < 0) {
        snprintf(r->err, sizeof r->err, "loading flows from ClickHouse: out of memory");
        return -1;
    }
    int nf = r->nf;
    static const struct ch_val empty = {"", 0, 0};
    const char *agent = ch_str(r, RDB_STR_AGENT, v[nf - 2].s ? &v[nf - 2] : &empty);
    struct recon_flow *fl = &r->in->flows[r->in->n_flows];
    memset(fl, 0, sizeof *fl);
    const int *pos = r->pos;
#define V(c) (&v[pos[c]])
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
    r->in->order[r->in->n_flows] = (struct recon_flow_order){v[nf - 3].u, agent, v[nf - 1].u};
    r->in->n_flows++;
    r->rows++;
    char source[16], proto[16], role[16], op[16];
    rdb_flow_kinds(fl, ch_cstr(V(FR_SOURCE), source, sizeof source),
                   ch_cstr(V(FR_PROTO), proto, sizeof proto),
                   ch_cstr(V(FR_ROLE), role, sizeof role), ch_cstr(V(FR_NFS_OP), op, sizeof op));
    parse_inet(V(FR_LOCAL_ADDR), &fl->local);
    if (fl->source == RECON_FLOW_NFS) {
        parse_inet(V(FR_NFS_SERVER), &fl->nfs_server);
        fl->nfs_port = (uint16_t)V(FR_NFS_PORT)->u;
        fl->nfs_bytes = V(FR_NFS_BYTES)->u;
        fl->nfs_export = ch_str(r, RDB_STR_EXPORT, V(FR_NFS_EXPORT));
        if (r->oom) {
            snprintf(r->err, sizeof r->err, "loading flows from ClickHouse: out of memory");
            return -1;
        }
        return 0;
    }
    fl->local_port = (uint16_t)V(FR_LOCAL_PORT)->u;
    parse_inet(V(FR_REMOTE_ADDR), &fl->remote);
    fl->remote_port = (uint16_t)V(FR_REMOTE_PORT)->u;
    fl->tx_bytes = V(FR_TX_BYTES)->u;
    fl->rx_bytes = V(FR_RX_BYTES)->u;
#undef V
    return 0;
}

/* chhttp_stream's sink: the piece after what waits in the scratch, then every complete row. */
static int ch_piece(void *ctx, const char *data, size_t len)
{
    struct ch_read *r = ctx;
    if (r->n + len > r->bcap) {
        size_t cap = r->bcap ? r->bcap : 65536;
        while (cap < r->n + len)
            cap *= 2;
        char *b = cap <= 2 * CH_FIELD_MAX + 65536 ? realloc(r->buf, cap) : NULL;
        if (!b) {
            snprintf(r->err, sizeof r->err,
                     cap > 2 * CH_FIELD_MAX + 65536
                         ? "loading flows from ClickHouse: a row of the answer is over 32 MiB"
                         : "loading flows from ClickHouse: out of memory");
            return -1;
        }
        r->buf = b;
        r->bcap = cap;
    }
    memcpy(r->buf + r->n, data, len);
    r->n += len;
    const char *p = r->buf, *end = r->buf + r->n;
    struct ch_val v[FR_NCOLS + 3];
    int got;
    while ((got = ch_row(r, &p, end, v)) == 1)
        if (ch_flow(r, v) < 0)
            return -1;
    if (got < 0)
        return -1;
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
    struct ch_type types[FR_NCOLS + 3];
    if (build_query(cfg, ws, final, sql, sizeof sql, pos, types) < 0) {
        snprintf(err, errlen,
                 "loading flows from ClickHouse: cannot build the query (too long, or a column "
                 "type this reader has no RowBinary rule for)");
        return -1;
    }
    struct ch_read r = {.in = in, .pos = pos, .types = types, .nf = 3};
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
    if (rc == 0 && r.n) { /* the answer ends inside a row: an exception's text, or cut short */
        ch_bad(&r, r.buf, r.buf + r.n, -1, "the answer ends inside it");
        snprintf(err, errlen, "%s", r.err);
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
