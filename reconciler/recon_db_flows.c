/* A window's flow records streamed (rdb_flows_copy, recon_db_internal.h; rdb_load_flows in
 * recon_db_flows_split.c uses it for the whole window or for half of it): one
 * COPY (SELECT …) TO STDOUT (FORMAT binary) read row by row as it arrives and turned into struct
 * recon_flow at once, its strings copied into a small string table of the load's own.
 *
 * Why (5 M window, reconciler/README.md "Loading a big window"): the statement this replaces
 * (PQexecParams, binary results) let libpq build one PGresult of every row before the first was
 * looked at — ~2.5 GB for 5 M rows, 9–19 s of client CPU against 2.5 s for reading the same rows
 * as COPY data — and made the server call a send function for each of 21 columns. The select list
 * here packs what the reconciliation reads into 13 columns (9 sent for a socket flow, the others
 * NULL): the four kinds and three ports in one bigint, the address and byte count an NFS record
 * uses in place of the socket ones, '' kube fields as NULL. Decoding gives exactly the values the
 * single-statement load gave (tests/recon_core/test_recon_load.c compares every field of every
 * row with its own reading of the table), in the same order: the statement's WHERE and so its
 * plan are the same. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "recon_db_internal.h"

/* ---- the load's strings: copied once, repeated values shared ----
 * Most of a window's owner strings repeat (one host per report, a few users and programs), so a
 * small direct-mapped cache per column finds the copy of a value met recently. */
#define STR_COLS       8 /* host, user, program, workflow, namespace, pod, container, export */
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

/* A NUL-terminated copy of v[0..len) (shared with an equal value of column col met recently), or
 * NULL when out of memory. */
static const char *str_put(struct rdb_strtab *t, int col, const uint8_t *v, size_t len)
{
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

/* The kinds and ports of a flow in one bigint: bit 0 source 'nfs', bit 1 proto 'udp', bits 2-3
 * role (1 'client', 2 'server', 0 anything else), bit 4 nfs_op 'write', then the low 16 bits of
 * local_port << 8, remote_port << 24 and nfs_port << 40 (NULL = 0), as rdb_flow_kinds and the
 * (uint16_t) of the ports read them. */
#define PACKED_KINDS_PORTS                                                                         \
    "((CASE WHEN source = 'nfs' THEN 1 ELSE 0 END)"                                                \
    " | (CASE WHEN proto = 'udp' THEN 2 ELSE 0 END)"                                               \
    " | (CASE role WHEN 'client' THEN 4 WHEN 'server' THEN 8 ELSE 0 END)"                          \
    " | (CASE WHEN nfs_op = 'write' THEN 16 ELSE 0 END)"                                           \
    " | ((coalesce(local_port, 0) & 65535)::int8 << 8)"                                            \
    " | ((coalesce(remote_port, 0) & 65535)::int8 << 24)"                                          \
    " | ((coalesce(nfs_port, 0) & 65535)::int8 << 40))"

enum {
    C_HOST,
    C_USER,
    C_PROGRAM,
    C_WORKFLOW,
    C_NAMESPACE, /* NULL: '' (the column is NOT NULL) */
    C_POD,
    C_CONTAINER,
    C_EXPORT,
    C_LOCAL_ADDR,
    C_PEER_ADDR, /* nfs_server of an NFS record, remote_addr of a socket flow */
    C_KINDS,     /* PACKED_KINDS_PORTS */
    C_BYTES,     /* nfs_bytes of an NFS record, tx_bytes of a socket flow */
    C_RX_BYTES,
    N_COLS
};

static const char select_list[] =
    "host, user_name, program, workflow, nullif(namespace, ''), nullif(pod, ''),"
    " nullif(container_name, ''), nfs_export, local_addr,"
    " CASE WHEN source = 'nfs' THEN nfs_server ELSE remote_addr END, " PACKED_KINDS_PORTS ","
    " CASE WHEN source = 'nfs' THEN nfs_bytes ELSE tx_bytes END, rx_bytes";

/* ---- binary COPY rows ---- */

static const uint8_t copy_signature[11] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', 0xff, '\r', '\n', 0};

struct field {
    const uint8_t *v; /* NULL: SQL NULL */
    int32_t len;
};

struct stream {
    bool header_seen, trailer_seen;
    bool with_tid; /* a first column ctid (a part of a split load) */
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
    *out = f->v ? str_put(s->out->strs, col, f->v, (size_t)f->len) : NULL;
    return !f->v || *out;
}

/* One row's fields into the next flow of the part; -1 out of memory. */
static int add_flow(struct stream *s, const struct field *c, uint64_t tid)
{
    struct rdb_flow_part *o = s->out;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 4096;
        struct recon_flow *p = realloc(o->flows, (cap + 1) * sizeof *p);
        if (!p)
            return -1;
        o->flows = p;
        if (s->with_tid) {
            uint64_t *t = realloc(o->tid, (cap + 1) * sizeof *t);
            if (!t)
                return -1;
            o->tid = t;
        }
        o->cap = cap;
    }
    if (s->with_tid)
        o->tid[o->n] = tid;
    struct recon_flow *f = &o->flows[o->n];
    memset(f, 0, sizeof *f);
    if (!f_str(s, &c[C_HOST], C_HOST, &f->host) || !f_str(s, &c[C_USER], C_USER, &f->user) ||
        !f_str(s, &c[C_PROGRAM], C_PROGRAM, &f->program) ||
        !f_str(s, &c[C_WORKFLOW], C_WORKFLOW, &f->workflow) ||
        !f_str(s, &c[C_NAMESPACE], C_NAMESPACE, &f->kube.ns) ||
        !f_str(s, &c[C_POD], C_POD, &f->kube.pod) ||
        !f_str(s, &c[C_CONTAINER], C_CONTAINER, &f->kube.container))
        return -1;
    if (!f->kube.ns)
        f->kube.ns = "";
    if (!f->kube.pod)
        f->kube.pod = "";
    if (!f->kube.container)
        f->kube.container = "";
    uint64_t k = (uint64_t)f_int(&c[C_KINDS], 0);
    f_inet(&c[C_LOCAL_ADDR], &f->local);
    if (k & 1) {
        f->source = RECON_FLOW_NFS;
        f->nfs_op = k & 16 ? RECON_NFS_WRITE : RECON_NFS_READ;
        f_inet(&c[C_PEER_ADDR], &f->nfs_server);
        f->nfs_port = (uint16_t)(k >> 40);
        f->nfs_bytes = f_count(&c[C_BYTES]);
        if (!f_str(s, &c[C_EXPORT], C_EXPORT, &f->nfs_export))
            return -1;
    } else {
        f->source = RECON_FLOW_SOCKET;
        f->proto = k & 2 ? IPPROTO_UDP : IPPROTO_TCP;
        unsigned role = (unsigned)(k >> 2) & 3;
        f->role = role == 1   ? RECON_ROLE_CLIENT
                  : role == 2 ? RECON_ROLE_SERVER
                              : RECON_ROLE_UNKNOWN;
        f->local_port = (uint16_t)(k >> 8);
        f_inet(&c[C_PEER_ADDR], &f->remote);
        f->remote_port = (uint16_t)(k >> 24);
        f->tx_bytes = f_count(&c[C_BYTES]);
        f->rx_bytes = f_count(&c[C_RX_BYTES]);
    }
    o->n++;
    return 0;
}

/* One CopyData message: the file header first, then whole rows (the server ends each row's
 * message with the row), the trailer last. 0, -1 malformed (err), -2 out of memory. */
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
        if (add_flow(s, c, tid) < 0)
            return -2;
    }
    return 0;
bad:
    snprintf(err, errlen, "loading flow records: malformed binary COPY row %zu", s->out->n + 1);
    return -1;
}

void rdb_flow_part_free(struct rdb_flow_part *p)
{
    free(p->flows);
    free(p->tid);
    rdb_strtab_free(p->strs);
    memset(p, 0, sizeof *p);
}

int rdb_flows_copy(PGconn *db, int64_t ws, int part, struct rdb_flow_part *out, char *err,
                   size_t errlen)
{
    char from[TM_RFC3339_LEN], sql[2048];
    rdb_fmt_ts(from, ws); /* digits, '-', ':', 'T', '.', 'Z': nothing to quote */
    /* a part: the rows whose (seq # idx) & 1 is part (every row has one of 0 and 1), with their
     * ctid to put the two parts back in heap order */
    snprintf(sql, sizeof sql,
             "COPY (SELECT %s%s FROM flow_records WHERE window_start = '%s'::timestamptz%s)"
             " TO STDOUT (FORMAT binary)",
             part >= 0 ? "ctid, " : "", select_list, from,
             part == 0   ? " AND (seq # idx) & 1 = 0"
             : part == 1 ? " AND (seq # idx) & 1 = 1"
                         : "");
    memset(out, 0, sizeof *out);
    struct stream s = {.with_tid = part >= 0, .out = out};
    out->strs = calloc(1, sizeof *out->strs);
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
