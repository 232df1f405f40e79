/* Serialises one window's flows as the /v1/attributions JSON body. */
#include "report.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>

#include "jsonw.h"
#include "llhist_json.h"
#include "socket.h"
#include "timeutil.h"
#include "utf8.h"

void report_format_endpoint(uint8_t family, const uint8_t addr[16], uint16_t port, char *out,
                            size_t outlen)
{
    char a[INET6_ADDRSTRLEN];
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (family == AF_INET6 && memcmp(addr, mapped, 12) == 0) {
        inet_ntop(AF_INET, addr + 12, a, sizeof(a));
        snprintf(out, outlen, "%s:%u", a, port);
    } else if (family == AF_INET6) {
        inet_ntop(AF_INET6, addr, a, sizeof(a));
        snprintf(out, outlen, "[%s]:%u", a, port);
    } else {
        inet_ntop(AF_INET, addr, a, sizeof(a));
        snprintf(out, outlen, "%s:%u", a, port);
    }
}

const char *report_role_name(int role)
{
    return role == WL_ROLE_CLIENT ? "client" : role == WL_ROLE_SERVER ? "server" : "unknown";
}

char *report_clean_text(const char *s, char *out, size_t outlen)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0, left = strlen(s);
    if (outlen == 0)
        return out;
    while (left) {
        size_t len = utf8_seq_len(p, left, NULL); /* the tree's one rule (utf8.h) */
        /* C0 controls, DEL, and C1 controls (U+0080-U+009F = C2 80 - C2 9F) */
        bool control =
            (len == 1 && (*p < 0x20 || *p == 0x7f)) || (len == 2 && p[0] == 0xc2 && p[1] < 0xa0);
        const char *emit = len && !control ? (const char *)p : UTF8_REPLACEMENT;
        size_t emit_len = len && !control ? len : 3;
        if (n + emit_len >= outlen)
            break;
        memcpy(out + n, emit, emit_len);
        n += emit_len;
        p += len ? len : 1;
        left -= len ? len : 1;
    }
    out[n] = '\0';
    return out;
}

/* Adds s as a string member, cleaned (report_clean_text). False when out of memory. */
static bool add_clean_str(struct jw *w, const char *name, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p >= 0x20 && *p < 0x7f) /* printable ASCII, the usual case: nothing to clean */
        p++;
    if (!*p) {
        jw_kv_str(w, name, s);
        return true;
    }
    size_t cap = REPORT_CLEAN_LEN(strlen(s));
    char *buf = malloc(cap);
    if (!buf)
        return false;
    jw_kv_str(w, name, report_clean_text(s, buf, cap));
    free(buf);
    return true;
}

static bool add_str_if(struct jw *w, const char *name, const char *v)
{
    return !(v && v[0]) || add_clean_str(w, name, v);
}

/* The members of flow r's owner (a procs[] entry; version 1: the flow's own); false when out of
 * memory. */
static bool owner_members(struct jw *w, const struct flow_rec *r)
{
    bool ok = true;
    jw_kv_u64(w, "pid", r->owner.pid);
    jw_kv_u64(w, "ppid", r->owner.ppid);
    jw_kv_u64(w, "uid", r->owner.uid);
    ok &= add_clean_str(w, "program", r->owner.comm);
    if (r->meta) {
        ok &= add_str_if(w, "user", r->meta->user);
        ok &= add_str_if(w, "exe", r->meta->exe);
        ok &= add_str_if(w, "workflow", r->meta->workflow);
        ok &= add_str_if(w, "cgroup", r->meta->cgroup);
        ok &= add_str_if(w, "container", r->meta->container);
        ok &= add_str_if(w, "pod_uid", r->meta->pod_uid);
        ok &= add_str_if(w, "namespace", r->meta->kube.namespace_);
        ok &= add_str_if(w, "pod", r->meta->kube.pod);
        ok &= add_str_if(w, "container_name", r->meta->kube.container);
        ok &= add_str_if(w, "unit", r->meta->unit);
        ok &= add_str_if(w, "slurm_job", r->meta->slurm_job);
    }
    return ok;
}

static bool owner_json(struct jw *w, const struct flow_rec *r)
{
    jw_begin_object(w);
    bool ok = owner_members(w, r);
    jw_end(w);
    return ok;
}

static bool meta_same(const struct flow_meta *a, const struct flow_meta *b)
{
    if (a == b)
        return true;
    if (!a || !b)
        return false;
    const char *x[] = {a->user,           a->exe,     a->workflow,        a->cgroup,
                       a->container,      a->pod_uid, a->kube.namespace_, a->kube.pod,
                       a->kube.container, a->unit,    a->slurm_job};
    const char *y[] = {b->user,           b->exe,     b->workflow,        b->cgroup,
                       b->container,      b->pod_uid, b->kube.namespace_, b->kube.pod,
                       b->kube.container, b->unit,    b->slurm_job};
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        if (strcmp(x[i], y[i]) != 0)
            return false;
    return true;
}

/* Whether two flows' owners are written alike (owner_json). */
static bool owner_same(const struct flow_rec *a, const struct flow_rec *b)
{
    return a->owner.pid == b->owner.pid && a->owner.ppid == b->owner.ppid &&
           a->owner.uid == b->owner.uid &&
           strncmp(a->owner.comm, b->owner.comm, sizeof a->owner.comm) == 0 &&
           meta_same(a->meta, b->meta);
}

static uint64_t owner_hash(const struct flow_rec *r)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a over what owner_same compares first */
    uint32_t v[3] = {r->owner.pid, r->owner.ppid, r->owner.uid};
    const unsigned char *p = (const unsigned char *)v;
    for (size_t i = 0; i < sizeof v; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    for (size_t i = 0; i < sizeof r->owner.comm && r->owner.comm[i]; i++)
        h = (h ^ (unsigned char)r->owner.comm[i]) * 1099511628211ULL;
    return h;
}

/* The distinct owners of fs in order of first appearance: proc[i] is the procs[] index of flow
 * i, first[k] the first flow of entry k; *n the number of entries. -1 when out of memory. */
static int index_owners(const struct flowset *fs, uint32_t *proc, size_t *first, size_t *n)
{
    size_t cap = 16;
    while (cap < 2 * fs->n)
        cap *= 2;
    uint32_t *slot = calloc(cap, sizeof *slot); /* entry + 1; 0 empty */
    if (!slot)
        return -1;
    *n = 0;
    for (size_t i = 0; i < fs->n; i++) {
        size_t h = (size_t)owner_hash(&fs->v[i]) & (cap - 1);
        while (slot[h] && !owner_same(&fs->v[first[slot[h] - 1]], &fs->v[i]))
            h = (h + 1) & (cap - 1);
        if (!slot[h]) { /* a new entry */
            first[*n] = i;
            *n += 1;
            slot[h] = (uint32_t)*n;
        }
        proc[i] = slot[h] - 1;
    }
    free(slot);
    return 0;
}

/* One flow object, naming its process's entry in procs[] (version 1: with its owner's members,
 * proc < 0); false when out of memory. Counters are written exactly (u64, no double). */
static bool flow_json(struct jw *w, const struct flow_rec *r, int64_t proc)
{
    char ep[64];
    bool ok = true;
    jw_begin_object(w);
    if (r->source == FLOW_SRC_SOCKET) {
        jw_kv_str(w, "source", "socket");
        jw_kv_str(w, "proto", r->proto == IPPROTO_TCP ? "tcp" : "udp");
        report_format_endpoint(r->family, r->laddr, r->lport, ep, sizeof(ep));
        jw_kv_str(w, "local", ep);
        report_format_endpoint(r->family, r->raddr, r->rport, ep, sizeof(ep));
        jw_kv_str(w, "remote", ep);
        jw_kv_str(w, "role", report_role_name(r->role));
        jw_kv_u64(w, "tx_bytes", r->tx_bytes);
        jw_kv_u64(w, "rx_bytes", r->rx_bytes);
        jw_kv_u64(w, "tx_calls", r->tx_calls);
        jw_kv_u64(w, "rx_calls", r->rx_calls);
    } else {
        jw_kv_str(w, "source", "nfs");
        ok &= add_clean_str(w, "server", r->server);
        if (r->family == AF_INET || r->family == AF_INET6) { /* client address (nfslocal.h) */
            char a[INET6_ADDRSTRLEN];
            inet_ntop(r->family, r->laddr, a, sizeof(a));
            jw_kv_str(w, "local", a);
        }
        ok &= add_clean_str(w, "export", r->export_path);
        ok &= add_clean_str(w, "op", r->op);
        jw_kv_u64(w, "bytes", r->bytes);
        jw_kv_u64(w, "ops", r->ops);
        if (r->latency) {
            jw_kv_u64(w, "errors", r->errors);
            jw_key(w, "latency_us");
            llhist_write_json(w, r->latency);
        }
    }
    if (proc >= 0)
        jw_kv_u64(w, "proc", (uint64_t)proc);
    else
        ok &= owner_members(w, r);
    jw_end(w);
    return ok;
}

char *report_json(const struct report_header *h, const struct flowset *fs, char *err, size_t errlen)
{
    char ts[TM_RFC3339_LEN];
    char *out = NULL;
    struct evbuffer *b = evbuffer_new();
    struct jw w;
    uint32_t *proc = malloc((fs->n + 1) * sizeof *proc);
    size_t *first = malloc((fs->n + 1) * sizeof *first), n_procs = 0;
    int version = h->version == 1 ? 1 : 2;
    bool ok = b && proc && first && (version == 1 || index_owners(fs, proc, first, &n_procs) == 0);
    if (!ok)
        goto oom;
    jw_init(&w, b);
    jw_begin_object(&w);
    jw_kv_u64(&w, "version", (uint64_t)version);
    ok &= add_clean_str(&w, "host", h->host);
    ok &= add_clean_str(&w, "agent_id", h->agent_id);
    jw_kv_u64(&w, "seq", h->seq);
    jw_kv_str(&w, "window_start", tm_format_rfc3339(h->window_start_us, ts));
    jw_kv_i64(&w, "window_seconds", h->window_seconds);
    jw_kv_u64(&w, "dropped_events", h->dropped_events);
    jw_key(&w, "sampling");
    jw_begin_object(&w);
    jw_kv_u64(&w, "k", h->k);
    jw_kv_double(&w, "threshold", h->threshold);
    jw_kv_u64(&w, "flows_seen", h->flows_seen);
    jw_end(&w);
    if (h->lost_to_us > 0) { /* README.md "Restarts" */
        jw_key(&w, "lost");
        jw_begin_object(&w);
        jw_kv_str(&w, "from", tm_format_rfc3339(h->lost_from_us, ts));
        jw_kv_str(&w, "to", tm_format_rfc3339(h->lost_to_us, ts));
        jw_kv_str(&w, "reason", h->lost_reason ? h->lost_reason : "unknown");
        jw_end(&w);
    }
    jw_key(&w, "spool");
    jw_begin_object(&w);
    jw_kv_u64(&w, "dropped_reports", h->spool_dropped_reports);
    jw_end(&w);
    if (version == 2) {
        jw_key(&w, "procs"); /* each flow's process once */
        jw_begin_array(&w);
        for (size_t k = 0; k < n_procs && ok; k++)
            ok &= owner_json(&w, &fs->v[first[k]]);
        jw_end(&w);
    }
    jw_key(&w, "flows");
    jw_begin_array(&w);
    for (size_t i = 0; i < fs->n && ok; i++)
        ok &= flow_json(&w, &fs->v[i], version == 2 ? (int64_t)proc[i] : -1);
    jw_end(&w);
    jw_end(&w);
    if (!ok || jw_finish(&w) != 0 || !(out = jw_take(b, NULL)))
        goto oom;
    evbuffer_free(b);
    free(proc);
    free(first);
    return out;
oom:
    snprintf(err, errlen, "out of memory formatting the report");
    if (b)
        evbuffer_free(b);
    free(proc);
    free(first);
    return NULL;
}
