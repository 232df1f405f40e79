/* A window's flow records streamed (rdb_flows_copy, recon_db_internal.h; rdb_load_flows in
 * recon_db_flows_split.c uses it for the whole window or for half of it): one
 * COPY (SELECT …) TO STDOUT (FORMAT binary) of the window's flow_packed rows (sql/024: a run of a
 * report's flows per row, an array per column), read row by row as it arrives and turned into
 * struct recon_flow at once, its strings copied into a small string table of the load's own.
 *
 * Why (5 M window, reconciler/README.md "Loading a big window"): the statement this replaces
 * (PQexecParams, binary results) let libpq build one PGresult of every row before the first was
 * looked at — ~2.5 GB for 5 M rows, 9–19 s of client CPU against 2.5 s for reading the same rows
 * as COPY data — and made the server call a send function for each of 21 columns of every flow;
 * one row per flow still cost the server ~1.4 µs per flow to send, the arrays ~0.5. The arrays are
 * sent as stored and this file does what the view flow_records (sql/024) and the one-row-per-flow
 * select list did: a NULL array is NULL elements (the counts' 0, the Kubernetes names' ''), the
 * peer is nfs_server for an NFS record and remote_addr otherwise, a port is its low 16 bits.
 * Decoding gives exactly the values the single-statement load gave (tests/recon_core/
 * test_recon_load.c compares every field of every row with its own reading of the view), in the
 * same order: packed rows in heap order, each row's flows in array order. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "recon_db_internal.h"

/* ---- the load's strings: copied once, repeated values shared ----
 * Most of a window's owner strings repeat (one host per report, a few users and programs), so a
 * small direct-mapped cache per column finds the copy of a value met recently. */
#define STR_COLS       RDB_STR_COLS
#define STR_CACHE      256
#define STR_BLOCK_SIZE (1 << 20)

struct str_block {
    struct str_block *next;
    char data[];
};

struct str_slot {
    const char *s;
    size_t len;
};

struct rdb_strtab {
    struct rdb_strtab *next; /* another part's strings, freed with these */
    struct str_block *blocks;
    char *p;
    size_t left;
    struct str_slot cache[STR_COLS][STR_CACHE];
};

void rdb_strtab_free(struct rdb_strtab *t)
{
    while (t) {
        for (struct str_block *b = t->blocks, *next; b; b = next) {
            next = b->next;
            free(b);
        }
        struct rdb_strtab *next = t->next;
        free(t);
        t = next;
    }
}

void rdb_strtab_chain(struct rdb_strtab *t, struct rdb_strtab *more)
{
    while (t->next)
        t = t->next;
    t->next = more;
}

struct rdb_strtab *rdb_strtab_new(void)
{
    return calloc(1, sizeof(struct rdb_strtab));
}

const char *rdb_str_put(struct rdb_strtab *t, int col, const void *value, size_t len)
{
    const uint8_t *v = value;
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ v[i]) * 16777619u;
    struct str_slot *slot = &t->cache[col][(h ^ h >> 16) % STR_CACHE];
    if (slot->s && slot->len == len && memcmp(slot->s, v, len) == 0)
        return slot->s;
    if (t->left < len + 1) {
        size_t size = len + 1 > STR_BLOCK_SIZE ? len + 1 : STR_BLOCK_SIZE;
        struct str_block *b = malloc(sizeof *b + size);
        if (!b)
            return NULL;
        b->next = t->blocks;
        t->blocks = b;
        t->p = b->data;
        t->left = size;
    }
    char *s = t->p;
    memcpy(s, v, len);
    s[len] = '\0';
    t->p += len + 1;
    t->left -= len + 1;
    *slot = (struct str_slot){s, len};
    return s;
}

/* ---- the statement ---- */

/* The selected arrays, in this order; the first STR_COLS are the string-table columns. */
enum {
    C_HOST,
    C_USER,
    C_PROGRAM,
    C_WORKFLOW,
    C_NAMESPACE, /* NULL or '': '' (the column is NOT NULL DEFAULT '') */
    C_POD,
    C_CONTAINER,
    C_EXPORT,
    C_LOCAL_ADDR,
    C_REMOTE_ADDR,
    C_NFS_SERVER,
    C_SOURCE,
    C_PROTO,
    C_ROLE,
    C_NFS_OP,
    C_LOCAL_PORT,
    C_REMOTE_PORT,
    C_NFS_PORT,
    C_TX_BYTES,
    C_NFS_BYTES,
    C_RX_BYTES,
    N_COLS
};
_Static_assert((int)C_HOST == (int)RDB_STR_HOST && (int)C_EXPORT == (int)RDB_STR_EXPORT,
               "the string-table columns are the first RDB_STR_* ones");

static const char select_list[] =
    "host, user_name, program, workflow, namespace, pod, container_name, nfs_export, local_addr,"
    " remote_addr, nfs_server, source, proto, role, nfs_op, local_port, remote_port, nfs_port,"
    " tx_bytes, nfs_bytes, rx_bytes";

/* ---- binary COPY rows ---- */

static const uint8_t copy_signature[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};

struct field {
    const uint8_t *v; /* NULL: SQL NULL */
    int32_t len;
};

struct stream {
    bool header_seen, trailer_seen;
    bool with_tid; /* a first column ctid (a part of a split load) */
    bool overflow; /* more flows than a fixed slot holds */
    struct rdb_flow_part *out;
};

static uint64_t be(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/* int4/int8 field, dflt when NULL (or of another size) */
static int64_t f_int(const struct field *f, int64_t dflt)
{
    if (!f->v)
        return dflt;
    if (f->len == 4)
        return (int32_t)(uint32_t)be(f->v, 4);
    if (f->len == 8)
        return (int64_t)be(f->v, 8);
    return dflt;
}

static uint64_t f_count(const struct field *f)
{
    int64_t v = f_int(f, 0);
    return v > 0 ? (uint64_t)v : 0;
}

/* inet: family (2 = IPv4, 3 = IPv6), bits, is_cidr, length, address */
static void f_inet(const struct field *f, struct recon_addr *a)
{
    memset(a, 0, sizeof *a);
    if (!f->v || f->len < 4)
        return;
    const uint8_t *p = f->v;
    if (p[0] == 2 && p[3] == 4 && f->len >= 8) {
        a->family = AF_INET;
        memcpy(a->addr, p + 4, 4);
    } else if (p[0] == 3 && p[3] == 16 && f->len >= 20) {
        a->family = AF_INET6;
        memcpy(a->addr, p + 4, 16);
    }
}

static bool f_str(struct stream *s, const struct field *f, int col, const char **out)
{
    *out = f->v ? rdb_str_put(s->out->strs, col, f->v, (size_t)f->len) : NULL;
    return !f->v || *out;
}

/* A Kubernetes name: NULL and '' are ''. */
static bool f_kube(struct stream *s, const struct field *f, int col, const char **out)
{
    if (!f->v || f->len == 0) {
        *out = "";
        return true;
    }
    return f_str(s, f, col, out);
}

static bool f_is(const struct field *f, const char *lit)
{
    size_t n = strlen(lit);
    return f->v && (size_t)f->len == n && memcmp(f->v, lit, n) == 0;
}

/* A port: its low 16 bits, NULL 0. */
static uint16_t f_port(const struct field *f)
{
    return (uint16_t)(f_int(f, 0) & 65535);
}

/* The next flow of the part, or NULL: out of memory, or a fixed slot full (s->overflow). */
static struct recon_flow *next_flow(struct stream *s, uint64_t tid)
{
    struct rdb_flow_part *o = s->out;
    if (o->n == o->cap && o->fixed) {
        s->overflow = true;
        return NULL;
    }
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 4096;
        struct recon_flow *p = realloc(o->flows, (cap + 1) * sizeof *p);
        if (!p)
            return NULL;
        o->flows = p;
        if (s->with_tid) {
            uint64_t *t = realloc(o->tid, (cap + 1) * sizeof *t);
            if (!t)
                return NULL;
            o->tid = t;
        }
        o->cap = cap;
    }
    if (s->with_tid)
        o->tid[o->n] = tid;
    struct recon_flow *f = &o->flows[o->n];
    memset(f, 0, sizeof *f);
    return f;
}

/* One flow's elements (c[i]: the element of array i) into the next flow of the part; -1 out of
 * memory. */
static int add_flow(struct stream *s, const struct field *c, uint64_t tid)
{
    struct recon_flow *f = next_flow(s, tid);
    if (!f || !f_str(s, &c[C_HOST], C_HOST, &f->host) || !f_str(s, &c[C_USER], C_USER, &f->user) ||
        !f_str(s, &c[C_PROGRAM], C_PROGRAM, &f->program) ||
        !f_str(s, &c[C_WORKFLOW], C_WORKFLOW, &f->workflow) ||
        !f_kube(s, &c[C_NAMESPACE], C_NAMESPACE, &f->kube.ns) ||
        !f_kube(s, &c[C_POD], C_POD, &f->kube.pod) ||
        !f_kube(s, &c[C_CONTAINER], C_CONTAINER, &f->kube.container))
        return -1;
    f_inet(&c[C_LOCAL_ADDR], &f->local);
    if (f_is(&c[C_SOURCE], "nfs")) {
        f->source = RECON_FLOW_NFS;
        f->nfs_op = f_is(&c[C_NFS_OP], "write") ? RECON_NFS_WRITE : RECON_NFS_READ;
        f_inet(&c[C_NFS_SERVER], &f->nfs_server);
        f->nfs_port = f_port(&c[C_NFS_PORT]);
        f->nfs_bytes = f_count(&c[C_NFS_BYTES]);
        if (!f_str(s, &c[C_EXPORT], C_EXPORT, &f->nfs_export))
            return -1;
    } else {
        f->source = RECON_FLOW_SOCKET;
        f->proto = f_is(&c[C_PROTO], "udp") ? IPPROTO_UDP : IPPROTO_TCP;
        f->role = f_is(&c[C_ROLE], "client")   ? RECON_ROLE_CLIENT
                  : f_is(&c[C_ROLE], "server") ? RECON_ROLE_SERVER
                                               : RECON_ROLE_UNKNOWN;
        f->local_port = f_port(&c[C_LOCAL_PORT]);
        f_inet(&c[C_REMOTE_ADDR], &f->remote);
        f->remote_port = f_port(&c[C_REMOTE_PORT]);
        f->tx_bytes = f_count(&c[C_TX_BYTES]);
        f->rx_bytes = f_count(&c[C_RX_BYTES]);
    }
    s->out->n++;
    return 0;
}

/* A one-dimensional array field being read element by element; a NULL array (or one shorter than
 * the row's host array) gives NULL elements, as unnest pads it. */
struct arr {
    const uint8_t *p, *end;
    uint32_t n;
};

static int arr_open(struct arr *a, const struct field *f)
{
    memset(a, 0, sizeof *a);
    if (!f->v)
        return 0;
    const uint8_t *p = f->v;
    if (f->len < 12)
        return -1;
    uint32_t ndim = (uint32_t)be(p, 4);
    if (ndim == 0) /* '{}' */
        return 0;
    if (ndim != 1 || f->len < 20)
        return -1;
    a->n = (uint32_t)be(p + 12, 4);
    a->p = p + 20;
    a->end = f->v + f->len;
    return 0;
}

/* The next element into e (NULL: e->v NULL); -1 malformed. */
static int arr_next(struct arr *a, struct field *e)
{
    *e = (struct field){NULL, 0};
    if (!a->n)
        return 0;
    a->n--;
    if (a->end - a->p < 4)
        return -1;
    int32_t len = (int32_t)be(a->p, 4);
    a->p += 4;
    if (len < -1 || len > a->end - a->p)
        return -1;
    if (len >= 0) {
        *e = (struct field){a->p, len};
        a->p += len;
    }
    return 0;
}

/* One packed row's flows. 0, -1 malformed, -2 out of memory, -3 a fixed slot full. */
static int add_row(struct stream *s, const struct field *c, uint64_t tid)
{
    struct arr a[N_COLS];
    for (int i = 0; i < N_COLS; i++)
        if (arr_open(&a[i], &c[i]) < 0)
            return -1;
    for (uint32_t k = 0, n = a[C_HOST].n; k < n; k++) {
        struct field e[N_COLS];
        for (int i = 0; i < N_COLS; i++)
            if (arr_next(&a[i], &e[i]) < 0)
                return -1;
        if (add_flow(s, e, tid) < 0)
            return s->overflow ? -3 : -2;
    }
    return 0;
}

/* One CopyData message: the file header first, then whole rows (the server ends each row's
 * message with the row), the trailer last. 0, -1 malformed (err), -2 out of memory, -3 more
 * flows than a fixed slot holds (err). */
static int parse_message(struct stream *s, const uint8_t *p, size_t n, char *err, size_t errlen)
{
    const uint8_t *end = p + n;
    if (!s->header_seen) {
        if (n < 19 || memcmp(p, copy_signature, sizeof copy_signature) != 0) {
            snprintf(err, errlen, "loading flow records: not a binary COPY header");
            return -1;
        }
        uint64_t ext = be(p + 15, 4);
        if (ext > n - 19) {
            snprintf(err, errlen, "loading flow records: truncated binary COPY header");
            return -1;
        }
        p += 19 + ext;
        s->header_seen = true;
    }
    while (p < end) {
        if (s->trailer_seen || end - p < 2)
            goto bad;
        int16_t nf = (int16_t)be(p, 2);
        p += 2;
        if (nf == -1) {
            s->trailer_seen = true;
            continue;
        }
        if (nf != N_COLS + s->with_tid)
            goto bad;
        uint64_t tid = 0;
        if (s->with_tid) { /* block (4 bytes), offset (2) */
            if (end - p < 10 || be(p, 4) != 6)
                goto bad;
            tid = be(p + 4, 4) << 16 | be(p + 8, 2);
            p += 10;
        }
        struct field c[N_COLS];
        for (int i = 0; i < N_COLS; i++) {
            if (end - p < 4)
                goto bad;
            int32_t len = (int32_t)be(p, 4);
            p += 4;
            if (len < -1 || len > end - p)
                goto bad;
            c[i] = (struct field){len < 0 ? NULL : p, len < 0 ? 0 : len};
            p += len < 0 ? 0 : len;
        }
        int rc = add_row(s, c, tid);
        if (rc == -3)
            snprintf(err, errlen,
                     "loading flow records: more than the %zu the window's reports count",
                     s->out->cap);
        if (rc == -2 || rc == -3)
            return rc;
        if (rc < 0)
            goto bad;
    }
    return 0;
bad:
    snprintf(err, errlen, "loading flow records: malformed binary COPY row after flow %zu",
             s->out->n);
    return -1;
}

void rdb_flow_part_free(struct rdb_flow_part *p)
{
    if (!p->fixed) {
        free(p->flows);
        free(p->tid);
    }
    rdb_strtab_free(p->strs);
    memset(p, 0, sizeof *p);
}

int rdb_flows_copy(PGconn *db, int64_t ws, int part, struct rdb_flow_part *out, char *err,
                   size_t errlen)
{
    char from[TM_RFC3339_LEN], sql[2048];
    rdb_fmt_ts(from, ws); /* digits, '-', ':', 'T', '.', 'Z': nothing to quote */
    /* a part: the packed rows whose (hashtext(agent_id) # seq) & 1 is part (every row has one of
     * 0 and 1; the agent's hash too, as every agent of a window may send the same seq), with their
     * ctid to put the two parts back in heap order */
    snprintf(sql, sizeof sql,
             "COPY (SELECT %s%s FROM flow_packed WHERE window_start = '%s'::timestamptz%s)"
             " TO STDOUT (FORMAT binary)",
             part >= 0 ? "ctid, " : "", select_list, from,
             part == 0   ? " AND (hashtext(agent_id)::int8 # seq) & 1 = 0"
             : part == 1 ? " AND (hashtext(agent_id)::int8 # seq) & 1 = 1"
                         : "");
    struct stream s = {.with_tid = part >= 0, .out = out};
    out->strs = rdb_strtab_new();
    if (!out->strs) {
        snprintf(err, errlen, "loading flow records: out of memory");
        return -1;
    }
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_COPY_OUT) {
        rdb_set_err(err, errlen, "loading flow records", r, db);
        PQclear(r);
        return -1;
    }
    PQclear(r);
    int rc = 0, len;
    char *buf;
    /* read to the end even after a bad row: the connection leaves COPY state only then */
    while ((len = PQgetCopyData(db, &buf, 0)) > 0) {
        if (rc == 0) {
            rc = parse_message(&s, (const uint8_t *)buf, (size_t)len, err, errlen);
            if (rc == -2)
                snprintf(err, errlen, "loading flow records: out of memory");
        }
        PQfreemem(buf);
    }
    if (len == -2 && rc == 0) {
        rdb_set_err(err, errlen, "loading flow records", NULL, db);
        rc = -1;
    }
    while ((r = PQgetResult(db))) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK && rc == 0) {
            rdb_set_err(err, errlen, "loading flow records", r, db);
            rc = -1;
        }
        PQclear(r);
    }
    if (rc == 0 && !out->flows && !(out->flows = calloc(1, sizeof *out->flows))) {
        snprintf(err, errlen, "loading flow records: out of memory");
        rc = -1;
    }
    if (rc == 0 && !s.trailer_seen) {
        snprintf(err, errlen, "loading flow records: the COPY data ended without its trailer");
        rc = -1;
    }
    return rc < 0 ? -1 : 0;
}
