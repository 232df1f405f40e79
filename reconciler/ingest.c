/* Validation of ingest bodies into COPY rows; see ingest.h for the contract. */
#include "ingest.h"
#include "ingest_internal.h"

#include <arpa/inet.h>
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostport.h"
#include "chnative.h"
#include "copyesc.h"
#include "flow_row.h"
#include "growbuf.h"
#include "jsonv.h"
#include "nasin.h"
#include "srv_limits.h"
#include "quarantine.h"
#include "recon_db_internal.h"
#include "timeutil.h"

/* ---- errors ---------------------------------------------------------------------------- */

static void loc_format(const struct loc *l, char *out, size_t cap)
{
    int n = snprintf(out, cap, "$");
    if (l->arr)
        n += snprintf(out + n, cap - (size_t)n, ".%s", l->arr);
    if (l->idx >= 0 && (size_t)n < cap)
        n += snprintf(out + n, cap - (size_t)n, "[%ld]", l->idx);
    if (l->key && (size_t)n < cap)
        snprintf(out + n, cap - (size_t)n, ".%s", l->key);
}

int ing_bad(struct vctx *c, struct loc l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->e->msg, sizeof(c->e->msg), fmt, ap);
    va_end(ap);
    loc_format(&l, c->e->path, sizeof(c->e->path));
    c->e->status = 422;
    return -1;
}

/* ---- the COPY buffer -------------------------------------------------------------------- */

static int buf_reserve(struct ingest_batch *b, size_t more)
{
    if (b->copy_len + more <= b->copy_cap)
        return 0;
    char *p = gb_grow(b->copy, &b->copy_cap, b->copy_len + more, 4096);
    if (!p) {
        b->oom = true;
        return -1;
    }
    b->copy = p;
    return 0;
}

/* Makes room for about n bytes in one step (no repeated doubling and copying); a failure here
 * is not an error: buf_reserve decides when the rows are written. */
static void buf_hint(struct ingest_batch *b, size_t n)
{
    if (n <= b->copy_cap)
        return;
    char *p = realloc(b->copy, n);
    if (p) {
        b->copy = p;
        b->copy_cap = n;
    }
}

void ing_buf_put(struct ingest_batch *b, const char *s, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return; /* checked once per row by row_end */
    memcpy(b->copy + b->copy_len, s, n);
    b->copy_len += n;
}

void ing_buf_c(struct ingest_batch *b, char ch)
{
    ing_buf_put(b, &ch, 1);
}

void ing_buf_u64(struct ingest_batch *b, bool neg, uint64_t v)
{
    if (buf_reserve(b, 1 + COPYESC_U64_MAX) < 0)
        return; /* checked once per row by row_end */
    if (neg)
        b->copy[b->copy_len++] = '-';
    b->copy_len += copyesc_u64(b->copy + b->copy_len, v);
}

void ing_buf_null(struct ingest_batch *b)
{
    ing_buf_put(b, "\\N", 2);
}

/* A text value escaped for COPY's text format (copyesc.h). */
void ing_buf_text(struct ingest_batch *b, const char *s, size_t n)
{
    if (buf_reserve(b, COPYESC_MAX(n)) < 0)
        return;
    b->copy_len += copyesc_text(b->copy + b->copy_len, s, n);
}

void ing_buf_time(struct ingest_batch *b, int64_t us)
{
    char t[TM_RFC3339_LEN];
    tm_format_rfc3339(us, t);
    ing_buf_put(b, t, strlen(t));
}

void ing_buf_str_or_null(struct ingest_batch *b, const struct jv *v)
{
    if (v && v->type == JV_STRING)
        ing_buf_text(b, v->s, v->n);
    else
        ing_buf_null(b);
}

/* -1, the request answered 500 "out of memory". */
int ing_oom(struct vctx *c)
{
    c->e->status = 500;
    snprintf(c->e->msg, sizeof(c->e->msg), "out of memory");
    return -1;
}

/* Counts a finished row (its newline written); -1 (500) when building it ran out of memory. */
static int row_done(struct vctx *c)
{
    if (c->b->oom) {
        snprintf(c->e->path, sizeof(c->e->path), "$");
        return ing_oom(c);
    }
    c->b->n_rows++;
    return 0;
}

int ing_row_end(struct vctx *c)
{
    ing_buf_c(c->b, '\n');
    return row_done(c);
}

/* Records the UTC day of a row's partition key: only days that hold rows get partitions, and
 * one request may touch at most LIM_MAX_DAYS_PER_REQUEST of them (each day is 4 tables). */
int ing_day_add(struct vctx *c, struct loc l, int64_t us)
{
    struct ingest_batch *b = c->b;
    int64_t day = tm_window_start(us, 86400) / (86400 * TM_USEC_PER_SEC);
    if (b->n_days == 0) {
        b->min_us = b->max_us = us;
    } else {
        b->min_us = us < b->min_us ? us : b->min_us;
        b->max_us = us > b->max_us ? us : b->max_us;
    }
    size_t i = 0;
    while (i < b->n_days && b->days[i] < day)
        i++;
    if (i < b->n_days && b->days[i] == day)
        return 0;
    if (b->n_days == INGEST_MAX_DAYS)
        return ing_bad(c, l,
                       "the request's rows fall on more than %d distinct UTC days: send at most %d "
                       "days per request",
                       INGEST_MAX_DAYS, INGEST_MAX_DAYS);
    memmove(b->days + i + 1, b->days + i, (b->n_days - i) * sizeof(b->days[0]));
    b->days[i] = day;
    b->n_days++;
    return 0;
}

/* ---- typed fields ----------------------------------------------------------------------- */

int ing_want_object(struct vctx *c, const struct jv *v, struct loc l)
{
    if (!v || v->type != JV_OBJECT)
        return ing_bad(c, l, "expected an object, got %s", jv_type_name(v));
    return 0;
}

/* A string of 1..NAME_MAX_BYTES bytes (NUL-free: the reader refuses U+0000). With
 * optional, a missing or null value is accepted and *out becomes NULL. */
int ing_want_name(struct vctx *c, const struct jv *v, struct loc l, bool optional,
                  const struct jv **out)
{
    *out = NULL;
    if (!v || v->type == JV_NULL) {
        if (optional)
            return 0;
        return ing_bad(c, l, "missing: expected a string");
    }
    if (v->type != JV_STRING)
        return ing_bad(c, l, "expected a string, got %s", jv_type_name(v));
    if (v->n == 0 && !optional)
        return ing_bad(c, l, "expected a non-empty string");
    if (v->n > NAME_MAX_BYTES)
        return ing_bad(c, l, "string longer than %d bytes", NAME_MAX_BYTES);
    *out = v;
    return 0;
}

/* A non-negative integer no greater than max. */
int ing_want_uint(struct vctx *c, const struct jv *v, struct loc l, uint64_t max, uint64_t *out)
{
    if (!v)
        return ing_bad(c, l, "missing: expected a non-negative integer");
    if (v->type != JV_NUMBER)
        return ing_bad(c, l, "expected a non-negative integer, got %s", jv_type_name(v));
    if (!v->is_int)
        return ing_bad(c, l, "expected a non-negative integer, got a non-integer number");
    if (v->neg && v->u != 0)
        return ing_bad(c, l, "expected a non-negative integer, got a negative number");
    if (v->overflow || v->u > max)
        return v->overflow
                   ? ing_bad(c, l, "does not fit in 64 bits (maximum %" PRIu64 ")", max)
                   : ing_bad(c, l, "%" PRIu64 " is larger than the maximum %" PRIu64, v->u, max);
    *out = v->u;
    return 0;
}

/* Same, where a missing or null value is allowed (*present false). */
int ing_opt_uint(struct vctx *c, const struct jv *v, struct loc l, uint64_t max, uint64_t *out,
                 bool *present)
{
    *present = v && v->type != JV_NULL;
    if (!*present)
        return 0;
    return ing_want_uint(c, v, l, max, out);
}

/* A time: RFC 3339 text, or epoch seconds as a JSON number or as numeric text. */
int ing_want_time(struct vctx *c, const struct jv *v, struct loc l, int64_t *us)
{
    if (!v || v->type == JV_NULL)
        return ing_bad(c, l, "missing: expected an RFC 3339 time or epoch seconds");
    if (v->type == JV_STRING) {
        if (tm_parse_rfc3339(v->s, us) == 0 || tm_parse_epoch(v->s, us) == 0)
            return 0;
        return ing_bad(c, l, "expected an RFC 3339 time or epoch seconds, got \"%.60s\"", v->s);
    }
    if (v->type == JV_NUMBER) {
        int64_t secs;
        if (v->is_int && !v->overflow && v->u <= (uint64_t)INT64_MAX &&
            !__builtin_mul_overflow((int64_t)v->u, v->neg ? -1 : 1, &secs) &&
            !__builtin_mul_overflow(secs, TM_USEC_PER_SEC, us))
            return 0;
        if (tm_from_epoch_double(v->d, us) == 0)
            return 0;
        return ing_bad(c, l, "epoch seconds out of range");
    }
    return ing_bad(c, l, "expected an RFC 3339 time or epoch seconds, got %s", jv_type_name(v));
}

/* Inside [now - max_past_days, now + max_future_seconds]: a clock reading 1970 or year 0 is
 * refused here (422), before it can ask for partitions or overflow anything. */
int ing_in_bounds(struct vctx *c, struct loc l, int64_t us)
{
    int64_t limit = c->now_us + (int64_t)c->cfg->max_future_seconds * TM_USEC_PER_SEC;
    char t[TM_RFC3339_LEN], b[TM_RFC3339_LEN];
    if (us > limit)
        return ing_bad(c, l,
                       "%s is more than %d s ahead of the reconciler's clock (max_future_seconds)",
                       tm_format_rfc3339(us, t), c->cfg->max_future_seconds);
    int64_t oldest = lim_past_us(c->cfg, c->now_us);
    if (us < oldest)
        return ing_bad(c, l, "%s is before %s, the oldest accepted time (max_past_days %d)",
                       tm_format_rfc3339(us, t), tm_format_rfc3339(oldest, b),
                       lim_past_days(c->cfg));
    return 0;
}

/* "10.1.0.2:41522" or "[fd00::1]:5201" (common/hostport.h, address literals only, port 0
 * allowed); with port_optional a bare address (IPv6 also without brackets) is accepted and *port
 * is set to -1. The address text (without brackets) goes to addr. */
/* The common case of parse_endpoint, without copies or libc's parsers: "a.b.c.d" (what
 * inet_pton accepts: four decimal octets 0-255 without leading zeros) and ":digits" up to 65535
 * (hostport_parse's rule: leading zeros allowed, 0 allowed here). 0 when s[0..n) is that,
 * or -1 to let parse_endpoint decide, which accepts and refuses exactly as before. */
static int fast_ipv4_endpoint(const char *s, size_t n, bool port_optional,
                              char addr[INET6_ADDRSTRLEN], long *port)
{
    size_t i = 0; /* no tests of n in the octets: s[n] is a NUL, not a digit nor a '.' */
    for (int octet = 0; octet < 4; octet++) {
        if (octet && s[i++] != '.')
            return -1;
        size_t d0 = i;
        unsigned v = 0, d;
        while ((d = (unsigned)(unsigned char)s[i] - '0') <= 9 && i - d0 < 3) {
            v = v * 10 + d;
            i++;
        }
        size_t nd = i - d0;
        if (nd == 0 || d <= 9 || v > 255 || (nd > 1 && s[d0] == '0')) /* d <= 9: a 4th digit */
            return -1;
    }
    size_t alen = i;
    long p = -1;
    if (i == n) {
        if (!port_optional)
            return -1;
    } else {
        if (s[i] != ':' || i + 1 == n)
            return -1;
        p = 0;
        for (i++; i < n; i++) {
            if (s[i] < '0' || s[i] > '9')
                return -1;
            p = p * 10 + (s[i] - '0');
            if (p > 65535)
                return -1;
        }
    }
    memcpy(addr, s, alen);
    addr[alen] = 0;
    *port = p;
    return 0;
}

/* s[0..n) with s[n] a NUL (as every string jsonv.h decodes). */
static int parse_endpoint(const char *s, size_t n, bool port_optional, char addr[INET6_ADDRSTRLEN],
                          long *port)
{
    unsigned char bin[16];
    if (fast_ipv4_endpoint(s, n, port_optional, addr, port) == 0)
        return 0;
    if (port_optional && s[0] != '[' && n < INET6_ADDRSTRLEN && inet_pton(AF_INET6, s, bin) == 1) {
        memcpy(addr, s, n + 1);
        *port = -1;
        return 0;
    }
    struct hostport hp;
    char err[256];
    unsigned flags = HOSTPORT_ALLOW_ZERO | (port_optional ? HOSTPORT_PORT_OPTIONAL : 0u);
    if (hostport_parse(s, n, flags, &hp, err, sizeof(err)) < 0 || hp.family == AF_UNSPEC ||
        strlen(hp.host) >= INET6_ADDRSTRLEN)
        return -1;
    memcpy(addr, hp.host, strlen(hp.host) + 1);
    *port = hp.has_port ? (long)hp.port : -1;
    return 0;
}

static int want_endpoint(struct vctx *c, const struct jv *v, struct loc l, bool port_optional,
                         char addr[INET6_ADDRSTRLEN], long *port)
{
    const struct jv *s;
    if (ing_want_name(c, v, l, false, &s) < 0)
        return -1;
    if (parse_endpoint(s->s, s->n, port_optional, addr, port) < 0)
        return ing_bad(c, l, "expected %s, got \"%.80s\"",
                       port_optional ? "an IP address with an optional :port" : "ADDRESS:PORT",
                       s->s);
    return 0;
}

static int want_enum(struct vctx *c, const struct jv *v, struct loc l, bool optional,
                     const char *const *allowed, const struct jv **out)
{
    if (ing_want_name(c, v, l, optional, out) < 0)
        return -1;
    if (!*out)
        return 0;
    for (const char *const *a = allowed; *a; a++)
        if (strcmp((*out)->s, *a) == 0)
            return 0;
    char list[128] = ""; /* the message only: not built for a value that matches */
    for (const char *const *a = allowed; *a; a++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"",
                 a == allowed ? "" : " or ", *a);
    return ing_bad(c, l, "expected %s, got \"%.60s\"", list, (*out)->s);
}

int ing_want_version(struct vctx *c, const struct jv *root, unsigned max, unsigned *version)
{
    const struct jv *v = jv_get(root, "version");
    struct loc l = {.idx = -1, .key = "version"};
    const char *accepts = max == 1 ? "version 1" : "versions 1 and 2";
    if (!v)
        return ing_bad(c, l, "missing: expected %s", max == 1 ? "1" : "1 or 2");
    if (v->type != JV_NUMBER || !v->is_int || v->neg || v->overflow || v->u < 1 || v->u > max)
        return ing_bad(c, l, "unknown version: this reconciler accepts %s", accepts);
    if (version)
        *version = (unsigned)v->u;
    return 0;
}

/* The most a flow or transfer may claim over span_s seconds: max_flow_bps x span / 8. */
uint64_t ing_max_bytes_over(const struct cfg *cfg, uint64_t span_s)
{
    unsigned __int128 m = (unsigned __int128)cfg->max_flow_bps * span_s / 8;
    return m > INT64_MAX ? INT64_MAX : (uint64_t)m;
}

/* ---- /v1/attributions -------------------------------------------------------------------- */

#ifndef NDEBUG /* the keys as a table: for flow_slot_selftest */
static const char *const flow_keys[F_N] = {
    "source",    "proto",  "local",          "remote",  "role",     "tx_bytes",
    "rx_bytes",  "server", "export",         "op",      "bytes",    "ops",
    "pid",       "uid",    "user",           "program", "workflow", "container",
    "namespace", "pod",    "container_name", "proc"};
#endif

#define FLOW_KEY_MAXLEN 14 /* "container_name" */

/* The slot of a member's key, or -1 (ingest_internal.h): by length, then the first byte, then the
 * rest compared with a constant (memcmp of a constant length is inlined, no call). Checked against
 * flow_keys by flow_slot_selftest in test builds (NDEBUG unset). */
#define KEY_IS(lit) (memcmp(k, lit, sizeof(lit) - 1) == 0)
int ing_flow_slot(const struct jv *m)
{
    const char *k = m->key;
    switch (m->key_len) {
    case 2:
        return KEY_IS("op") ? F_OP : -1;
    case 3:
        switch (k[0]) {
        case 'p':
            return KEY_IS("pid") ? F_PID : KEY_IS("pod") ? F_POD : -1;
        case 'u':
            return KEY_IS("uid") ? F_UID : -1;
        case 'o':
            return KEY_IS("ops") ? F_OPS : -1;
        }
        return -1;
    case 4:
        return KEY_IS("role") ? F_ROLE : KEY_IS("user") ? F_USER : KEY_IS("proc") ? F_PROC : -1;
    case 5:
        return KEY_IS("proto")   ? F_PROTO
               : KEY_IS("local") ? F_LOCAL
               : KEY_IS("bytes") ? F_BYTES
                                 : -1;
    case 6:
        switch (k[0]) {
        case 's':
            return KEY_IS("source") ? F_SOURCE : KEY_IS("server") ? F_SERVER : -1;
        case 'r':
            return KEY_IS("remote") ? F_REMOTE : -1;
        case 'e':
            return KEY_IS("export") ? F_EXPORT : -1;
        }
        return -1;
    case 7:
        return KEY_IS("program") ? F_PROGRAM : -1;
    case 8:
        return KEY_IS("tx_bytes")   ? F_TX
               : KEY_IS("rx_bytes") ? F_RX
               : KEY_IS("workflow") ? F_WORKFLOW
                                    : -1;
    case 9:
        return KEY_IS("container") ? F_CONTAINER : KEY_IS("namespace") ? F_NAMESPACE : -1;
    case 14:
        return KEY_IS("container_name") ? F_CONTAINER_NAME : -1;
    }
    return -1;
}
#undef KEY_IS

static const char *const sources[] = {"socket", "nfs", NULL};
static const char *const protos[] = {"tcp", "udp", NULL};
static const char *const roles[] = {"client", "server", "unknown", NULL};
static const char *const nfs_ops[] = {"read", "write", NULL};

/* The distinct sites of a report's local addresses, for its gap records (gaps.h, sql/028): the
 * agent's sites are then known without reading its flows, which ClickHouse mode does not keep
 * in PostgreSQL. An agent's flows mostly share one local address: the last one's site is kept. */
struct local_sites {
    char last[INET6_ADDRSTRLEN];
    int last_site;
    unsigned char *seen; /* one per configured site */
};

static void local_site(struct local_sites *ls, const struct cfg *cfg, const char *addr)
{
    if (strcmp(addr, ls->last) != 0) {
        /* not snprintf: its format machinery was ~2 % of bench_ingest's samples (a new local
         * address every flow) */
        size_t n = strnlen(addr, sizeof ls->last - 1);
        memcpy(ls->last, addr, n);
        ls->last[n] = 0;
        ls->last_site = cfg_site_of_addr(cfg, addr);
    }
    if (ls->last_site >= 0 && (size_t)ls->last_site < cfg->n_sites)
        ls->seen[ls->last_site] = 1;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The sites seen as a text[] literal, names in byte order (as wl_agent_sites orders them);
 * NULL when out of memory. */
static char *local_sites_text(const struct local_sites *ls, const struct cfg *cfg)
{
    const char **names = malloc((cfg->n_sites + 1) * sizeof *names);
    if (!names)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < cfg->n_sites; i++)
        if (ls->seen[i])
            names[n++] = cfg->sites[i].name;
    qsort(names, n, sizeof *names, cmp_name);
    struct rdb_sbuf b = {0};
    rdb_sb_add(&b, "{", 1);
    for (size_t i = 0; i < n; i++)
        rdb_sb_array_elem(&b, names[i], i == 0);
    rdb_sb_add(&b, "}", 2); /* with its NUL */
    free(names);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* What every flow of a report shares. */
struct report_ctx {
    const char *ws_text;
    const struct jv *agent_id, *host;
    uint64_t seq, cap;
    struct local_sites *ls;
    unsigned version;
    const struct ing_owner *owners; /* version 2: procs[] validated */
    size_t n_owners;
};

/* The flow's process: its own members (version 1), or procs[proc] (version 2), where a process
 * member in the flow itself is refused (it would contradict or repeat its proc). */
static int flow_owner(struct vctx *c, const struct report_ctx *r, const struct jv *const *s,
                      struct loc l, struct ing_owner *own, const struct ing_owner **out)
{
    if (r->version == 1) {
        *out = own;
        return ing_owner_parse(c, s + F_PID, l, own);
    }
    for (int k = F_PID; k <= F_CONTAINER_NAME; k++)
        if (s[k])
            return ing_bad(c, ing_at_key(l, s[k]->key),
                           "a version 2 flow names its process with \"proc\" (an index into"
                           " procs), not with its own members");
    uint64_t idx;
    if (!s[F_PROC])
        return ing_bad(c, ing_at_key(l, "proc"),
                       "missing: a version 2 flow names its process (an index into procs)");
    if (ing_want_uint(c, s[F_PROC], ing_at_key(l, "proc"), UINT32_MAX, &idx) < 0)
        return -1;
    if (idx >= r->n_owners)
        return ing_bad(c, ing_at_key(l, "proc"), "%" PRIu64 " is not an index into procs (%zu %s)",
                       idx, r->n_owners, r->n_owners == 1 ? "entry" : "entries");
    *out = &r->owners[idx];
    return 0;
}

static int one_flow(struct vctx *c, const struct jv *f, long i, const struct report_ctx *r)
{
    struct loc l = {.arr = "flows", .idx = i};
    const struct jv *s[F_N] = {0};
    if (ing_want_object(c, f, l) < 0)
        return -1;
    for (const struct jv *m = f->child; m; m = m->next) {
        int k = ing_flow_slot(m);
        if (k < 0)
            continue; /* unknown members are ignored: newer agents may add fields */
        s[k] = m;     /* no duplicates: the reader refuses them (jsonv.h) */
    }
    const struct jv *source, *proto = NULL, *role = NULL, *op = NULL, *export = NULL;
    char laddr[INET6_ADDRSTRLEN], raddr[INET6_ADDRSTRLEN];
    long lport = -1, rport = -1;
    uint64_t tx = 0, rx = 0, nbytes = 0, nops = 0, cap = r->cap;
    bool has_ops = false, has_nfs_local = false;
    struct local_sites *ls = r->ls;
    if (want_enum(c, s[F_SOURCE], ing_at_key(l, "source"), false, sources, &source) < 0)
        return -1;
    bool is_socket = strcmp(source->s, "socket") == 0;
    if (is_socket) {
        if (want_enum(c, s[F_PROTO], ing_at_key(l, "proto"), false, protos, &proto) < 0 ||
            want_endpoint(c, s[F_LOCAL], ing_at_key(l, "local"), false, laddr, &lport) < 0 ||
            want_endpoint(c, s[F_REMOTE], ing_at_key(l, "remote"), false, raddr, &rport) < 0 ||
            want_enum(c, s[F_ROLE], ing_at_key(l, "role"), true, roles, &role) < 0 ||
            ing_want_uint(c, s[F_TX], ing_at_key(l, "tx_bytes"), cap, &tx) < 0 ||
            ing_want_uint(c, s[F_RX], ing_at_key(l, "rx_bytes"), cap, &rx) < 0)
            return -1;
        local_site(ls, c->cfg, laddr);
    } else {
        if (want_endpoint(c, s[F_SERVER], ing_at_key(l, "server"), true, raddr, &rport) < 0 ||
            want_enum(c, s[F_OP], ing_at_key(l, "op"), false, nfs_ops, &op) < 0 ||
            ing_want_name(c, s[F_EXPORT], ing_at_key(l, "export"), true, &export) < 0 ||
            ing_want_uint(c, s[F_BYTES], ing_at_key(l, "bytes"), cap, &nbytes) < 0 ||
            ing_opt_uint(c, s[F_OPS], ing_at_key(l, "ops"), INT64_MAX, &nops, &has_ops) < 0)
            return -1;
        if (rport < 0)
            rport = 2049;
        /* the client's own address (optional, port optional): decides the client's site */
        if (s[F_LOCAL] && s[F_LOCAL]->type != JV_NULL &&
            want_endpoint(c, s[F_LOCAL], ing_at_key(l, "local"), true, laddr, &lport) < 0)
            return -1;
        has_nfs_local = s[F_LOCAL] && s[F_LOCAL]->type != JV_NULL;
        if (has_nfs_local)
            local_site(ls, c->cfg, laddr);
    }
    struct ing_owner own;
    const struct ing_owner *o;
    if (flow_owner(c, r, s, l, &own, &o) < 0)
        return -1;
    if (!is_socket) { /* the NAS view's detail (nasin.h) */
        struct nasin_flow_args na = {.ws_text = r->ws_text,
                                     .host = r->host->s,
                                     .server = raddr,
                                     .port = rport,
                                     .op = op->s,
                                     .bytes = nbytes,
                                     .ops = has_ops ? nops : 0};
        na.export_path = export ? export->s : NULL;
        na.workflow = o->workflow ? o->workflow->s : NULL;
        na.user = o->user ? o->user->s : NULL;
        na.program = o->program ? o->program->s : NULL;
        na.ns = o->kns ? o->kns->s : NULL;
        na.pod = o->kpod ? o->kpod->s : NULL;
        na.container_name = o->kcont ? o->kcont->s : NULL;
        if (nasin_flow(&c->b->nas, f, i, &na, c->e) < 0)
            return -1;
    }
    struct flow_row row;
    memset(&row, 0, sizeof row);
    flow_row_str(&row, FR_WINDOW_START, r->ws_text);
    ing_row_jtext(&row, FR_AGENT_ID, r->agent_id);
    flow_row_int(&row, FR_SEQ, r->seq);
    flow_row_int(&row, FR_IDX, (uint64_t)i);
    ing_row_jtext(&row, FR_HOST, r->host);
    ing_row_jtext(&row, FR_SOURCE, source);
    if (is_socket) {
        ing_row_jtext(&row, FR_PROTO, proto);
        flow_row_str(&row, FR_LOCAL_ADDR, laddr);
        flow_row_int(&row, FR_LOCAL_PORT, (uint64_t)lport);
        flow_row_str(&row, FR_REMOTE_ADDR, raddr);
        flow_row_int(&row, FR_REMOTE_PORT, (uint64_t)rport);
        if (role)
            ing_row_jtext(&row, FR_ROLE, role);
        flow_row_int(&row, FR_TX_BYTES, tx);
        flow_row_int(&row, FR_RX_BYTES, rx);
        flow_row_int(&row, FR_NFS_BYTES, 0);
        flow_row_int(&row, FR_NFS_OPS, 0);
    } else {
        if (has_nfs_local) {
            flow_row_str(&row, FR_LOCAL_ADDR, laddr);
            if (lport >= 0)
                flow_row_int(&row, FR_LOCAL_PORT, (uint64_t)lport);
        }
        flow_row_int(&row, FR_TX_BYTES, 0);
        flow_row_int(&row, FR_RX_BYTES, 0);
        flow_row_str(&row, FR_NFS_SERVER, raddr);
        flow_row_int(&row, FR_NFS_PORT, (uint64_t)rport);
        if (export)
            ing_row_jtext(&row, FR_NFS_EXPORT, export);
        ing_row_jtext(&row, FR_NFS_OP, op);
        flow_row_int(&row, FR_NFS_BYTES, nbytes);
        flow_row_int(&row, FR_NFS_OPS, has_ops ? nops : 0);
    }
    ing_owner_row(&row, o);
    struct ingest_batch *b = c->b;
    if (b->native) { /* ClickHouse keeps the raw flows: its Native block, no COPY text */
        chnative_add(b->native, &row);
        if (b->native->bad_col >= 0)
            return ing_bad(c, l, "%s %" PRIu64 " does not fit the ClickHouse column (%s)",
                           flow_cols[b->native->bad_col].name, b->native->bad_val,
                           flow_cols[b->native->bad_col].ch_type);
        b->oom = b->native->oom;
    } else if (buf_reserve(b, flow_row_copy_max(&row)) == 0) {
        b->copy_len += flow_row_copy_text(b->copy + b->copy_len, &row);
    }
    return row_done(c); /* flow_row_copy_text ended the line */
}

static char *dup_text(const char *s)
{
    return s ? strdup(s) : NULL;
}

static char *fmt_u64(uint64_t v)
{
    char t[24];
    snprintf(t, sizeof(t), "%" PRIu64, v);
    return strdup(t);
}

/* "lost": {"from", "to", "reason"} and "spool": {"dropped_reports"} (agentlib/README.md
 * "Restarts"), both optional. */
static int parse_loss(struct vctx *c, const struct jv *root, struct loc top)
{
    struct ingest_batch *b = c->b;
    const struct jv *lost = jv_get(root, "lost"), *spool = jv_get(root, "spool");
    if (lost && lost->type != JV_NULL) {
        struct loc ll = {.arr = "lost", .idx = -1};
        const struct jv *reason;
        if (ing_want_object(c, lost, ing_at_key(top, "lost")) < 0 ||
            ing_want_time(c, jv_get(lost, "from"), ing_at_key(ll, "from"), &b->lost_from_us) < 0 ||
            ing_want_time(c, jv_get(lost, "to"), ing_at_key(ll, "to"), &b->lost_to_us) < 0 ||
            ing_want_name(c, jv_get(lost, "reason"), ing_at_key(ll, "reason"), false, &reason) < 0)
            return -1;
        if (b->lost_to_us < b->lost_from_us)
            return ing_bad(c, ing_at_key(ll, "to"), "before \"from\"");
        if (ing_in_bounds(c, ing_at_key(ll, "to"), b->lost_to_us) < 0)
            return -1;
        b->lost_reason = dup_text(reason->s);
        if (!b->lost_reason)
            return ing_oom(c);
    }
    if (spool && spool->type != JV_NULL) {
        struct loc sl = {.arr = "spool", .idx = -1};
        bool has = false;
        if (ing_want_object(c, spool, ing_at_key(top, "spool")) < 0 ||
            ing_opt_uint(c, jv_get(spool, "dropped_reports"), ing_at_key(sl, "dropped_reports"),
                         INT64_MAX, &b->spool_dropped_reports, &has) < 0)
            return -1;
    }
    return 0;
}

static int parse_attributions(struct vctx *c, const struct jv *root)
{
    const struct cfg *cfg = c->cfg;
    struct loc top = {.idx = -1};
    const struct jv *host, *agent_id;
    uint64_t seq, wsec, dropped = 0, k = 0, seen = 0;
    bool has_dropped = false, has_k = false, has_seen = false;
    int64_t ws;
    double threshold = 0;
    bool has_threshold = false;
    unsigned version;
    if (ing_want_object(c, root, top) < 0 || ing_want_version(c, root, 2, &version) < 0 ||
        ing_want_name(c, jv_get(root, "host"), ing_at_key(top, "host"), false, &host) < 0 ||
        ing_want_name(c, jv_get(root, "agent_id"), ing_at_key(top, "agent_id"), false, &agent_id) <
            0 ||
        ing_want_uint(c, jv_get(root, "seq"), ing_at_key(top, "seq"), INT64_MAX, &seq) < 0 ||
        ing_want_time(c, jv_get(root, "window_start"), ing_at_key(top, "window_start"), &ws) < 0)
        return -1;
    if (!tm_is_aligned(ws, cfg->window_seconds))
        return ing_bad(c, ing_at_key(top, "window_start"),
                       "not aligned to the %d s window (a multiple of %d s since the epoch, UTC)",
                       cfg->window_seconds, cfg->window_seconds);
    if (ing_in_bounds(c, ing_at_key(top, "window_start"), ws) < 0 ||
        ing_day_add(c, ing_at_key(top, "window_start"), ws) < 0)
        return -1;
    const struct jv *wv = jv_get(root, "window_seconds");
    if (wv) {
        if (ing_want_uint(c, wv, ing_at_key(top, "window_seconds"), INT32_MAX, &wsec) < 0)
            return -1;
        if (wsec != (uint64_t)cfg->window_seconds)
            return ing_bad(c, ing_at_key(top, "window_seconds"),
                           "%" PRIu64 " differs from the reconciler's window of %d s", wsec,
                           cfg->window_seconds);
    }
    if (ing_opt_uint(c, jv_get(root, "dropped_events"), ing_at_key(top, "dropped_events"),
                     INT64_MAX, &dropped, &has_dropped) < 0)
        return -1;
    const struct jv *smp = jv_get(root, "sampling");
    if (smp && smp->type != JV_NULL) {
        struct loc sl = {.arr = "sampling", .idx = -1};
        if (ing_want_object(c, smp, ing_at_key(top, "sampling")) < 0 ||
            ing_opt_uint(c, jv_get(smp, "k"), ing_at_key(sl, "k"), INT32_MAX, &k, &has_k) < 0 ||
            ing_opt_uint(c, jv_get(smp, "flows_seen"), ing_at_key(sl, "flows_seen"), INT64_MAX,
                         &seen, &has_seen) < 0)
            return -1;
        const struct jv *t = jv_get(smp, "threshold");
        if (t && t->type != JV_NULL) {
            if (t->type != JV_NUMBER || t->neg || !isfinite(t->d))
                return ing_bad(c, ing_at_key(sl, "threshold"),
                               "expected a non-negative number, got %s", jv_type_name(t));
            threshold = t->d;
            has_threshold = true;
        }
    } else {
        has_k = has_seen = false;
    }
    if (parse_loss(c, root, top) < 0)
        return -1;
    const struct jv *flows = jv_get(root, "flows");
    if (!flows)
        return ing_bad(c, ing_at_key(top, "flows"), "missing: expected an array of flows");
    if (flows->type != JV_ARRAY)
        return ing_bad(c, ing_at_key(top, "flows"), "expected an array, got %s",
                       jv_type_name(flows));

    char ws_text[TM_RFC3339_LEN];
    tm_format_rfc3339(ws, ws_text);
    uint64_t cap = ing_max_bytes_over(cfg, (uint64_t)cfg->window_seconds);
    /* ~1.5x a typical row's COPY text per flow: no realloc-and-copy while the rows are written
     * (a hint only: buf_reserve grows the buffer further when rows are longer) */
    if (cfg->clickhouse.enabled) {
        if (!(c->b->native = malloc(sizeof *c->b->native)))
            return ing_oom(c);
        chnative_init(c->b->native, (size_t)flows->n);
    } else {
        buf_hint(c->b, (size_t)flows->n * 192 < c->body_len ? (size_t)flows->n * 192 : c->body_len);
    }
    struct report_ctx rc = {.ws_text = ws_text,
                            .agent_id = agent_id,
                            .host = host,
                            .seq = seq,
                            .cap = cap,
                            .version = version};
    struct ing_owner *owners = NULL;
    if (version == 2 && ing_procs_parse(c, jv_get(root, "procs"), &owners, &rc.n_owners) < 0)
        return -1;
    rc.owners = owners;
    struct local_sites ls = {.last_site = -1, .seen = calloc(cfg->n_sites + 1, 1)};
    rc.ls = &ls;
    if (!ls.seen) {
        free(owners);
        return ing_oom(c);
    }
    long i = 0;
    int bad = 0;
    for (const struct jv *f = flows->child; f && !bad; f = f->next, i++)
        bad = one_flow(c, f, i, &rc);
    free(owners);
    if (bad) {
        free(ls.seen);
        return -1;
    }

    struct ingest_batch *b = c->b;
    b->local_sites = local_sites_text(&ls, cfg);
    free(ls.seen);
    char thr[40];
    snprintf(thr, sizeof(thr), "%.17g", threshold);
    b->window_start_us = ws;
    b->min_us = b->max_us = ws;
    b->report[0] = dup_text(agent_id->s);
    b->report[1] = fmt_u64(seq);
    b->report[2] = dup_text(host->s);
    b->report[3] = dup_text(ws_text);
    b->report[4] = fmt_u64((uint64_t)cfg->window_seconds);
    b->report[5] = fmt_u64(has_dropped ? dropped : 0);
    b->report[6] = has_k ? fmt_u64(k) : NULL;
    b->report[7] = has_threshold ? strdup(thr) : NULL;
    b->report[8] = has_seen ? fmt_u64(seen) : NULL;
    b->report[9] = fmt_u64(b->n_rows);
    b->report[10] = fmt_u64(b->spool_dropped_reports);
    b->report[11] = dup_text(b->local_sites);
    if (!b->local_sites)
        return ing_oom(c);
    for (int p = 0; p < INGEST_REPORT_PARAMS; p++)
        if (!b->report[p] && p != 6 && p != 7 && p != 8)
            return ing_oom(c);
    return 0;
}

/* ---- entry ------------------------------------------------------------------------------- */

void ingest_batch_free(struct ingest_batch *b)
{
    if (!b)
        return;
    for (int i = 0; i < INGEST_REPORT_PARAMS; i++)
        free(b->report[i]);
    free(b->lost_reason);
    free(b->local_sites);
    free(b->copy);
    if (b->native)
        chnative_free(b->native);
    free(b->native);
    nasin_free(b->nas);
    for (size_t i = 0; i < b->n_rejects; i++)
        free(b->rejects[i].raw);
    free(b->rejects);
    memset(b, 0, sizeof(*b));
}

#ifndef NDEBUG
/* ing_flow_slot is written by hand: every key of flow_keys must find its own slot, and the same
 * key with its last byte changed none (or another key's). */
static void flow_slot_selftest(void)
{
    for (int i = 0; i < F_N; i++) {
        char near[FLOW_KEY_MAXLEN + 1];
        size_t n = strlen(flow_keys[i]);
        struct jv m = {.key = flow_keys[i], .key_len = (uint32_t)n};
        assert(ing_flow_slot(&m) == i);
        assert(n < sizeof near);
        memcpy(near, flow_keys[i], n + 1);
        near[n - 1] ^= 0x20;
        m.key = near;
        int other = ing_flow_slot(&m);
        assert(other != i && (other < 0 || strcmp(flow_keys[other], near) == 0));
    }
}
#endif

/* ingest_parse and ingest_parse_inplace: mut is body when it may be parsed in place. */
static int parse_request(const struct cfg *cfg, enum ingest_kind kind, const char *body, char *mut,
                         size_t len, int64_t now_us, struct ingest_batch *b, struct ingest_error *e)
{
#ifndef NDEBUG
    flow_slot_selftest();
#endif
    memset(b, 0, sizeof(*b));
    memset(e, 0, sizeof(*e));
    b->kind = kind;
    struct vctx c = {.cfg = cfg, .now_us = now_us, .body_len = len, .e = e, .b = b};

    /* Transfers come as one array, or as a stream of objects (NDJSON, concatenated). */
    size_t lead = 0;
    while (lead < len &&
           (body[lead] == ' ' || body[lead] == '\n' || body[lead] == '\r' || body[lead] == '\t'))
        lead++;
    bool stream = kind == INGEST_TRANSFERS && !(lead < len && body[lead] == '[');
    struct jv *first;
    size_t n_values;
    struct jv_error je;
    /* a refused transfer record keeps its text as received (body + off): not in place */
    struct jv_doc *doc = mut && kind != INGEST_TRANSFERS
                             ? jv_parse_inplace(mut, len, stream, &first, &n_values, &je)
                             : jv_parse(body, len, stream, &first, &n_values, &je);
    if (!doc) {
        e->status = je.semantic ? 422 : 400; /* JSON, but a duplicate member or U+0000 */
        snprintf(e->msg, sizeof(e->msg), "%s (byte %zu)", je.msg, je.offset);
        snprintf(e->path, sizeof(e->path), "%s", je.path);
        return -1;
    }
    int rc;
    switch (kind) {
    case INGEST_ATTRIBUTIONS:
        rc = parse_attributions(&c, first);
        break;
    case INGEST_COUNTERS:
        rc = ing_parse_counters(&c, first);
        break;
    case INGEST_TRANSFERS: {
        rc = 0;
        if (stream && n_values == 0) {
            rc = ing_bad(&c, (struct loc){.idx = -1}, "empty body: expected transfer records");
            break;
        }
        const struct jv *items = stream ? first : first->child;
        long i = 0;
        for (const struct jv *t = items; t && rc == 0; t = t->next, i++) {
            size_t copy_len = b->copy_len, n_rows = b->n_rows;
            int64_t min_us = b->min_us, max_us = b->max_us;
            b->n_records++;
            rc = ing_one_transfer(&c, t, i);
            if (rc < 0 && e->status == 422) { /* this record only: the others are kept */
                b->copy_len = copy_len, b->n_rows = n_rows;
                b->min_us = min_us, b->max_us = max_us;
                rc = qr_keep(b, i, e, body + t->off, t->len);
            }
        }
        break;
    }
    default:
        rc = -1;
    }
    jv_doc_free(doc);
    if (rc < 0) {
        ingest_batch_free(b);
        b->kind = kind;
        return -1;
    }
    return 0;
}

int ingest_parse(const struct cfg *cfg, enum ingest_kind kind, const char *body, size_t len,
                 int64_t now_us, struct ingest_batch *b, struct ingest_error *e)
{
    return parse_request(cfg, kind, body, NULL, len, now_us, b, e);
}

int ingest_parse_inplace(const struct cfg *cfg, enum ingest_kind kind, char *body, size_t len,
                         int64_t now_us, struct ingest_batch *b, struct ingest_error *e)
{
    return parse_request(cfg, kind, body, body, len, now_us, b, e);
}
