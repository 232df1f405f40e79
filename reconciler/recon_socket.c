/* Socket flows of one window: de-duplication, both-ends matching, the credited side's owner, and
 * the split of the window's flows across threads (recon_internal.h rcn_flows).
 *
 * With T threads the work goes in three phases, each thread on its own share and its own
 * `struct run` (indexes and accumulators), a barrier between phases:
 *  1. flows by position (thread k: the k-th slice of flows[]): each socket flow's sites, its
 *     host's first site, what is left out (unmapped, intra-site, de-duplicated) and, for the
 *     rest, its connection's hash;
 *  2. connections by hash (thread k: the connections whose hash falls to k): the connection
 *     table (struct conn: per side its sums, owner flow and role), then each connection's
 *     credited owner and the thread that credits it (rcn_owner_hash of the rollup owner's key),
 *     the connections listed by that thread; thread 0 merges the hosts' first sites meanwhile;
 *  3. owners by hash (thread k: the connections, NFS flows and transfers whose owner falls to
 *     k): the cells, the rollup and the dependencies, each connection prepared RCN_PREFETCH
 *     ahead of its credit (struct credit).
 * Then the calling thread merges: cells and dependencies by key (a dependency's key has no host,
 * so two threads can hold one), the owners and their rollup rows by appending (an owner key
 * includes its host: no two threads hold one owner). Every choice made by "first flow" compares
 * arrival order (came_before), never the order of processing, and every figure is an integer sum,
 * so the result is the same with any number of threads (tests/recon_core/driver.c checks 1, 2 and 3
 * on every scenario). */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hindex.h"
#include "hugealloc.h"
#include "recon_internal.h"

#define RCN_MAX_THREADS        8
#define RCN_FLOWS_PER_THREAD   200000
#define RCN_AUTO_THREADS_LIMIT 4
/* How many items ahead a loop over a table larger than the caches asks for the memory it will
 * touch (__builtin_prefetch): about what the memory system keeps in flight. */
#define RCN_PREFETCH 16

int rcn_threads(const struct recon_input *in)
{
    int n = in->threads;
    const char *env = getenv("WL_RECON_THREADS");
    if (n <= 0 && env && *env) /* 1..8; anything else is ignored */
        n = atoi(env) >= 1 && atoi(env) <= RCN_MAX_THREADS ? atoi(env) : 0;
    if (n > 0)
        return n > RCN_MAX_THREADS ? RCN_MAX_THREADS : n;
    /* half the cores: the other half ingests (on 2 cores a second thread gained nothing and cost
     * 27 % more CPU: BENCHMARKS.md "One window on several threads") */
    long half = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    long by_size = (long)(in->n_flows / RCN_FLOWS_PER_THREAD);
    long m = half < RCN_AUTO_THREADS_LIMIT ? half : RCN_AUTO_THREADS_LIMIT;
    if (m > by_size)
        m = by_size;
    return m < 1 ? 1 : (int)m;
}

/* An endpoint's order: family, the 16 address bytes, port. */
/* 8 address bytes as a number that orders as memcmp orders them (big-endian). */
static uint64_t be8(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

static int cmp_ep(const struct recon_addr *a, uint16_t pa, const struct recon_addr *b, uint16_t pb)
{
    if (a->family != b->family)
        return a->family < b->family ? -1 : 1;
    uint64_t x = be8(a->addr), y = be8(b->addr);
    if (x == y)
        x = be8(a->addr + 8), y = be8(b->addr + 8);
    if (x != y)
        return x < y ? -1 : 1;
    return (pa > pb) - (pa < pb);
}

/* The side of its connection a flow reports: 0 when its local endpoint is the lower. */
static int flow_side(const struct recon_flow *f)
{
    return cmp_ep(&f->local, f->local_port, &f->remote, f->remote_port) <= 0 ? 0 : 1;
}

static bool same_ep(const struct recon_addr *a, uint16_t pa, const struct recon_addr *b,
                    uint16_t pb)
{
    return a->family == b->family && pa == pb && memcmp(a->addr, b->addr, 16) == 0;
}

/* Whether two socket flows belong to one connection: one protocol, one pair of endpoints. */
static bool same_conn(const struct recon_flow *f, const struct recon_flow *g)
{
    if (f->proto != g->proto)
        return false;
    if (same_ep(&f->local, f->local_port, &g->local, g->local_port))
        return same_ep(&f->remote, f->remote_port, &g->remote, g->remote_port);
    return same_ep(&f->local, f->local_port, &g->remote, g->remote_port) &&
           same_ep(&f->remote, f->remote_port, &g->local, g->local_port);
}

static void put_ep(uint8_t *p, const struct recon_addr *a, uint16_t port)
{
    int32_t fam = a->family;
    memcpy(p, &fam, 4);
    memcpy(p + 4, a->addr, 16);
    memcpy(p + 20, &port, 2);
}

/* The hash of a flow's connection key: protocol, the lower endpoint, the higher one. */
static uint64_t conn_hash(const struct recon_flow *f, int me)
{
    uint8_t k[48];
    int32_t proto = f->proto;
    memcpy(k, &proto, 4);
    put_ep(k + 4 + 22 * me, &f->local, f->local_port);
    put_ep(k + 4 + 22 * (1 - me), &f->remote, f->remote_port);
    return hix_hash_bytes(0, k, sizeof k);
}

static int eq_host(const void *ctx, size_t idx, const void *key)
{
    return strcmp(((const struct run *)ctx)->hosts[idx].flow->host, (const char *)key) == 0;
}

int rcn_host_site(const struct run *r, const char *host)
{
    struct hix_slot *s =
        hix_find((struct hix *)&r->host_ix, hix_hash_str(0, host), eq_host, r, host);
    return s->idx1 ? r->hosts[s->idx1 - 1].site : -1;
}

/* Whether flow a came before flow b (recon_flow_order; else rank; else their order in flows[]). */
static bool came_before(const struct run *r, const struct recon_flow *a, const struct recon_flow *b)
{
    size_t i = (size_t)(a - r->in->flows), j = (size_t)(b - r->in->flows);
    const struct recon_flow_order *o = r->in->order;
    if (!o && r->in->rank && r->in->rank[i] != r->in->rank[j])
        return r->in->rank[i] < r->in->rank[j];
    if (o && o[i].seq != o[j].seq)
        return o[i].seq < o[j].seq;
    if (o) {
        int c = strcmp(o[i].agent, o[j].agent);
        if (c)
            return c < 0;
        if (o[i].idx != o[j].idx)
            return o[i].idx < o[j].idx;
    }
    return i < j;
}

static bool is_dedup_flow(const struct cfg *cfg, const struct recon_flow *f)
{
    for (size_t i = 0; i < cfg->n_nfs_ports; i++)
        if (f->local_port == cfg->nfs_ports[i] || f->remote_port == cfg->nfs_ports[i])
            return true;
    if (cfg->n_services == 0)
        return false;
    if (cfg_service_of_port(cfg, f->local_port) >= 0 ||
        cfg_service_of_port(cfg, f->remote_port) >= 0)
        return true;
    return f->user && cfg_service_of_user(cfg, f->user) >= 0;
}

/* The host's site is the site of its first flow with one (came_before): whichever flow is seen
 * first here, the earliest wins, so merging two threads' tables gives the same answer. */
static int note_host_site(struct run *r, const struct recon_flow *f, int site)
{
    if (!f->host || site < 0)
        return 0;
    struct host_site *hs = NULL;
    /* a report's flows come one after another: the last host first */
    if (r->host_last1 && strcmp(r->hosts[r->host_last1 - 1].flow->host, f->host) == 0)
        hs = &r->hosts[r->host_last1 - 1];
    uint64_t h = 0;
    struct hix_slot *s = NULL;
    if (!hs) {
        h = hix_hash_str(0, f->host);
        s = hix_find(&r->host_ix, h, eq_host, r, f->host);
        if (s->idx1) {
            r->host_last1 = s->idx1;
            hs = &r->hosts[s->idx1 - 1];
        }
    }
    if (hs) {
        if (came_before(r, f, hs->flow))
            *hs = (struct host_site){.flow = f, .site = site};
        return 0;
    }
    if (hix_grow((void **)&r->hosts, &r->cap_hosts, r->n_hosts + 1, sizeof *r->hosts))
        return -1;
    r->hosts[r->n_hosts] = (struct host_site){.flow = f, .site = site};
    if (hix_put(&r->host_ix, s, h, r->n_hosts))
        return -1;
    r->host_last1 = ++r->n_hosts;
    return 0;
}

/* Phase 1's answer for one flow: its connection's hash and its local and remote sites, or
 * rs < 0 when it joins none (then ls == PRE_NFS for an NFS flow: phase 3 reads no other flow). */
#define PRE_NFS (-2)

struct flow_pre {
    uint64_t hash;
    int32_t ls, rs;
};

static int classify(struct run *r, const struct recon_flow *f, struct flow_pre *pre,
                    struct recon_result *out)
{
    pre->rs = -1;
    pre->ls = f->source == RECON_FLOW_NFS ? PRE_NFS : -1;
    pre->hash = 0; /* read ahead of use (phase_conns) even when it joins no connection */
    if (f->source != RECON_FLOW_SOCKET)
        return 0;
    /* a report's flows mostly share their local address: its site looked up once */
    if (!r->last_local_ok || r->last_local.family != f->local.family ||
        memcmp(r->last_local.addr, f->local.addr, 16) != 0) {
        r->last_local = f->local;
        r->last_local_site = rcn_site_of(r->cfg, &f->local);
        r->last_local_ok = true;
    }
    int ls = r->last_local_site, rs = rcn_site_of(r->cfg, &f->remote);
    if (note_host_site(r, f, ls))
        return -1;
    if (ls < 0 || rs < 0) {
        out->n_unmapped++;
        return 0;
    }
    if (ls == rs) {
        out->n_intra_site++;
        return 0;
    }
    if (is_dedup_flow(r->cfg, f)) {
        out->n_dedup_flows++;
        return 0;
    }
    pre->hash = conn_hash(f, flow_side(f));
    pre->ls = ls;
    pre->rs = rs;
    return 0;
}

/* The connections' index sized once for at most n connections (load <= 2/3: it never grows). */
static int conn_ix_init(struct run *r, size_t n)
{
    size_t cap = 64;
    while (cap < n + n / 2)
        cap <<= 1;
    r->conn_ix.slots = huge_alloc_filled(cap * sizeof *r->conn_ix.slots);
    r->conns = huge_alloc((n + 1) * sizeof *r->conns); /* not filled: fewer when flows share one */
    if (!r->conn_ix.slots || !r->conns)
        return -1;
    memset(r->conn_ix.slots, 0, cap * sizeof *r->conn_ix.slots);
    r->conn_ix.cap = cap;
    r->cap_conns = n + 1;
    return 0;
}

static void add_to_conn(struct run *r, uint32_t fi, const struct flow_pre *pre)
{
    const struct recon_flow *flows = r->in->flows, *f = &flows[fi];
    int me = flow_side(f);
    uint64_t h = pre->hash, tag = h >> 32, *slots = r->conn_ix.slots;
    size_t mask = r->conn_ix.cap - 1, j = h & mask;
    struct conn *c = NULL;
    for (; slots[j]; j = (j + 1) & mask) {
        if (slots[j] >> 32 != tag)
            continue;
        struct conn *x = &r->conns[(uint32_t)slots[j] - 1];
        if (same_conn(f, &flows[x->owner[x->seen[0] ? 0 : 1]])) {
            c = x;
            break;
        }
    }
    if (!c) { /* room for every flow of the part was made (conn_ix_init) */
        c = &r->conns[r->n_conns];
        memset(c, 0, sizeof *c);
        slots[j] = tag << 32 | (uint64_t)(r->n_conns + 1);
        r->n_conns++;
        r->conn_ix.n++;
    }
    /* the owner: the side's first flow with a known role, else its first flow (in arrival
     * order: came_before) */
    bool known = f->role != RECON_ROLE_UNKNOWN, side_known = c->role[me] != RECON_ROLE_UNKNOWN;
    if (!c->seen[me] || (known && !side_known) ||
        (known == side_known && came_before(r, f, &flows[c->owner[me]]))) {
        c->role[me] = (uint8_t)f->role;
        c->owner[me] = fi;
    }
    c->seen[me] = true;
    c->tx[me] += f->tx_bytes;
    c->rx[me] += f->rx_bytes;
}

/* The side whose owner is credited: the client (connecting) side when known. */
static int credited_side(const struct conn *c)
{
    for (int i = 0; i < 2; i++)
        if (c->seen[i] && c->role[i] == RECON_ROLE_CLIENT)
            return i;
    for (int i = 0; i < 2; i++)
        if (c->seen[i] && c->role[i] == RECON_ROLE_SERVER && c->seen[1 - i])
            return 1 - i;
    return c->seen[0] ? 0 : 1;
}

/* a.b.c.d (as inet_ntop writes it); the end of what was written. */
static char *put_ipv4(char *p, const uint8_t *a)
{
    for (int i = 0; i < 4; i++) {
        unsigned v = a[i];
        if (i)
            *p++ = '.';
        if (v >= 100)
            *p++ = (char)('0' + v / 100);
        if (v >= 10)
            *p++ = (char)('0' + v / 10 % 10);
        *p++ = (char)('0' + v % 10);
    }
    *p = '\0';
    return p;
}

/* The remote end of a connection as its dependency: a configured endpoint's name, else the
 * listening side's ADDR:PORT, else (the credited side listened) the remote client's address.
 * e, port: the remote end (the owner flow's remote); roles: the credited side's and the other's. */
static enum recon_dep_kind dep_endpoint(const struct cfg *cfg, const struct recon_addr *e,
                                        uint16_t port, int role, int other_role, char *buf,
                                        size_t len)
{
    bool remote_listens = role != RECON_ROLE_SERVER || other_role == RECON_ROLE_SERVER;
    char a[INET6_ADDRSTRLEN] = "?";
    if (remote_listens) {
        const char *name = cfg_endpoint_name(cfg, e->family, e->addr, port);
        if (name) {
            snprintf(buf, len, "%s", name);
            return RECON_DEP_SERVICE;
        }
    }
    if (e->family != AF_INET6 && len >= INET_ADDRSTRLEN + 6) { /* IPv4: no snprintf */
        char *p = put_ipv4(buf, e->addr);
        if (remote_listens) {
            char d[8];
            int n = 0;
            unsigned v = port;
            do
                d[n++] = (char)('0' + v % 10);
            while ((v /= 10) && n < 7);
            *p++ = ':';
            while (n)
                *p++ = d[--n];
            *p = '\0';
        }
        return RECON_DEP_PEER;
    }
    inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->addr, a, sizeof a);
    if (!remote_listens)
        snprintf(buf, len, "%s", a);
    else if (e->family == AF_INET6)
        snprintf(buf, len, "[%s]:%u", a, port);
    else
        snprintf(buf, len, "%s:%u", a, port);
    return RECON_DEP_PEER;
}

/* A connection's credit, prepared (its owner, sites, bytes, paths and dependency key made, the
 * memory it will write asked for) RCN_PREFETCH connections before it is applied: the rollup's,
 * the cells' and the dependencies' tables are far larger than the caches. */
struct credit {
    uint32_t owner; /* in run.owners */
    int site[2];    /* by side */
    uint64_t dir[2];
    int64_t path[2]; /* from side s to the other: run.paths, or -1 (no bytes) */
    int credited;
    bool dep;          /* a dependency row (some bytes either way) */
    uint64_t dep_hash; /* its key's (recon_deps_prefetch) */
    enum recon_dep_kind kind;
    char ep[INET6_ADDRSTRLEN + 16];
};

static int credit_prepare(struct run *r, const struct conn *c, const struct flow_pre *pre,
                          struct credit *cr, struct recon_result *out)
{
    int credited = cr->credited = credited_side(c);
    uint32_t oi = c->owner[credited];
    const struct recon_flow *owner = &r->in->flows[oi];
    if (c->seen[0] && c->seen[1])
        out->n_both_ends++;
    /* the owner flow's local end is the credited side's */
    cr->site[credited] = pre[oi].ls;
    cr->site[1 - credited] = pre[oi].rs;
    int64_t id = rcn_owner_id(&r->owners, rcn_src_socket, owner->workflow, owner->user,
                              owner->program, owner->host, &owner->kube);
    if (id < 0)
        return -1;
    cr->owner = (uint32_t)id;
    for (int from = 0; from < 2; from++) {
        int to = 1 - from;
        /* one connection, one direction: max(sender tx, receiver rx) */
        uint64_t sent = c->seen[from] ? c->tx[from] : 0;
        uint64_t got = c->seen[to] ? c->rx[to] : 0;
        cr->dir[from] = sent > got ? sent : got;
        cr->path[from] = -1;
        if (cr->dir[from] == 0)
            continue;
        if ((cr->path[from] = rcn_path(r, cr->site[from], cr->site[to])) < 0)
            return -1;
        rcn_path_prefetch(r, (size_t)cr->path[from], cr->owner);
    }
    cr->dep = cr->dir[0] || cr->dir[1]; /* else no row (recon_deps_add) */
    if (!cr->dep)
        return 0;
    cr->kind = dep_endpoint(r->cfg, &owner->remote, owner->remote_port, c->role[credited],
                            c->seen[1 - credited] ? c->role[1 - credited] : RECON_ROLE_UNKNOWN,
                            cr->ep, sizeof cr->ep);
    struct rcn_owner_ent *o = &r->owners.v[id];
    if (o->dep_owner < 0 && (o->dep_owner = recon_deps_owner(&r->deps, o->key.workflow, o->key.user,
                                                             o->key.program)) < 0)
        return -1;
    cr->dep_hash = recon_deps_prefetch(&r->deps, (uint32_t)o->dep_owner, cr->site[credited],
                                       cr->site[1 - credited], cr->kind, cr->ep);
    return 0;
}

static int credit_apply(struct run *r, const struct credit *cr)
{
    int credited = cr->credited;
    for (int from = 0; from < 2; from++)
        if (cr->path[from] >= 0 &&
            rcn_attribute_path(r, (size_t)cr->path[from], cr->owner, cr->dir[from]))
            return -1;
    if (!cr->dep)
        return 0;
    return recon_deps_add_oh(&r->deps, (uint32_t)r->owners.v[cr->owner].dep_owner, cr->dep_hash,
                             cr->site[credited], cr->site[1 - credited], cr->kind, cr->ep,
                             cr->dir[credited], cr->dir[1 - credited], 1);
}

/* ---- the split across threads ---- */

/* The thread that credits an owner: its rollup key's hash (rcn_owner_hash), so no two threads
 * hold one owner or one row. */
static int owner_part(uint64_t owner_hash, int n)
{
    return n == 1 ? 0 : (int)((owner_hash >> 32) % (uint64_t)n);
}

/* Whether two flows name one owner (NULL = ""). */
static bool same_owner_strings(const struct recon_flow *a, const struct recon_flow *b)
{
    return hix_str_eq(rcn_str(a->workflow), rcn_str(b->workflow)) &&
           hix_str_eq(rcn_str(a->user), rcn_str(b->user)) &&
           hix_str_eq(rcn_str(a->program), rcn_str(b->program)) &&
           hix_str_eq(rcn_str(a->host), rcn_str(b->host)) &&
           hix_str_eq(rcn_str(a->kube.ns), rcn_str(b->kube.ns)) &&
           hix_str_eq(rcn_str(a->kube.pod), rcn_str(b->kube.pod)) &&
           hix_str_eq(rcn_str(a->kube.container), rcn_str(b->kube.container));
}

static int conn_part(uint64_t hash, int n)
{
    return (int)((hash >> 40) % (uint64_t)n);
}

struct job;

struct part {
    struct run run;            /* part 0: the caller's */
    struct recon_result count; /* its n_unmapped, n_intra_site, n_dedup_flows, n_both_ends */
    struct job *job;
    int k;
    /* with more than one thread: its connections' indexes grouped by the thread that credits
     * them (by_part[by_off[q] .. by_off[q + 1]) for thread q), so no thread reads the others' */
    uint32_t *by_part;
    size_t by_off[RCN_MAX_THREADS + 1];
};

struct job {
    struct part *parts;
    int n;
    struct flow_pre *pre; /* per flow */
    int64_t ws, we;
    int (*phase)(struct part *);
    atomic_int failed;
};

static int merge_hosts(struct job *j)
{
    struct run *r0 = &j->parts[0].run;
    for (int k = 1; k < j->n; k++) {
        const struct run *rk = &j->parts[k].run;
        for (size_t i = 0; i < rk->n_hosts; i++)
            if (note_host_site(r0, rk->hosts[i].flow, rk->hosts[i].site))
                return -1;
    }
    return 0;
}

static int phase_flows(struct part *p)
{
    struct job *j = p->job;
    const struct recon_input *in = p->run.in;
    size_t lo = in->n_flows * (size_t)p->k / (size_t)j->n;
    size_t hi = in->n_flows * (size_t)(p->k + 1) / (size_t)j->n;
    for (size_t i = lo; i < hi; i++)
        if (classify(&p->run, &in->flows[i], &j->pre[i], &p->count))
            return -1;
    return 0;
}

static int phase_conns(struct part *p)
{
    struct job *j = p->job;
    const struct recon_input *in = p->run.in;
    size_t mine = 0;
    for (size_t i = 0; i < in->n_flows; i++)
        mine += j->pre[i].rs >= 0 && conn_part(j->pre[i].hash, j->n) == p->k;
    if (conn_ix_init(&p->run, mine))
        return -1;
    size_t mask = p->run.conn_ix.cap - 1;
    for (size_t i = 0; i < in->n_flows; i++) {
        /* the index is far larger than the caches: its slot for a later flow asked for now */
        if (i + RCN_PREFETCH < in->n_flows)
            __builtin_prefetch(&p->run.conn_ix.slots[j->pre[i + RCN_PREFETCH].hash & mask]);
        const struct flow_pre *pre = &j->pre[i];
        if (pre->rs >= 0 && conn_part(pre->hash, j->n) == p->k)
            add_to_conn(&p->run, (uint32_t)i, pre);
    }
    const struct recon_flow *last = NULL; /* the last owner hashed (a report's share a few) */
    uint64_t last_h = 0;
    for (size_t i = 0; i < p->run.n_conns && j->n > 1; i++) {
        struct conn *c = &p->run.conns[i];
        const struct recon_flow *o = &in->flows[c->owner[credited_side(c)]];
        if (!last || !same_owner_strings(o, last)) {
            last_h =
                rcn_owner_hash(rcn_src_socket, o->workflow, o->user, o->program, o->host, &o->kube);
            last = o;
        }
        c->owner_part = (uint8_t)owner_part(last_h, j->n);
        p->by_off[c->owner_part + 1]++;
    }
    if (j->n > 1) { /* a counting sort of the connections by owner_part, in their order */
        if (!(p->by_part = huge_alloc((p->run.n_conns + 1) * sizeof *p->by_part)))
            return -1;
        size_t next[RCN_MAX_THREADS];
        for (int q = 0; q < j->n; q++)
            p->by_off[q + 1] += p->by_off[q];
        for (int q = 0; q < j->n; q++)
            next[q] = p->by_off[q];
        for (size_t i = 0; i < p->run.n_conns; i++)
            p->by_part[next[p->run.conns[i].owner_part]++] = (uint32_t)i;
    }
    return p->k == 0 ? merge_hosts(j) : 0;
}

static int phase_owners(struct part *p)
{
    struct job *j = p->job;
    const struct recon_input *in = p->run.in;
    p->run.host_run = &j->parts[0].run;
    /* each connection prepared RCN_PREFETCH connections before it is applied (struct credit) */
    struct credit ring[RCN_PREFETCH];
    size_t t = 0;
    for (int q = 0; q < j->n; q++) {
        const struct run *rq = &j->parts[q].run;
        const uint32_t *list = j->n > 1 ? j->parts[q].by_part : NULL;
        size_t lo = list ? j->parts[q].by_off[p->k] : 0;
        size_t hi = list ? j->parts[q].by_off[p->k + 1] : rq->n_conns;
        for (size_t x = lo; x < hi; x++) {
            struct credit *cr = &ring[t++ % RCN_PREFETCH];
            if (t > RCN_PREFETCH && credit_apply(&p->run, cr))
                return -1;
            if (credit_prepare(&p->run, &rq->conns[list ? list[x] : x], j->pre, cr, &p->count))
                return -1;
        }
    }
    for (size_t u = t > RCN_PREFETCH ? t - RCN_PREFETCH : 0; u < t; u++)
        if (credit_apply(&p->run, &ring[u % RCN_PREFETCH]))
            return -1;
    for (size_t i = 0; i < in->n_flows; i++) {
        const struct recon_flow *f = &in->flows[i];
        if (j->pre[i].ls == PRE_NFS &&
            owner_part(
                rcn_owner_hash(rcn_src_nfs, f->workflow, f->user, f->program, f->host, &f->kube),
                j->n) == p->k &&
            rcn_add_nfs_flow(&p->run, f, &p->count))
            return -1;
    }
    for (size_t i = 0; i < in->n_transfers; i++) {
        const struct recon_transfer *t = &in->transfers[i];
        if (owner_part(
                rcn_owner_hash(rcn_src_service, t->workflow, t->requester, t->service, "", NULL),
                j->n) == p->k &&
            rcn_add_transfer(&p->run, t, j->ws, j->we, &p->count))
            return -1;
    }
    return 0;
}

static void *work(void *arg)
{
    struct part *p = arg;
    if (!atomic_load(&p->job->failed) && p->job->phase(p))
        atomic_store(&p->job->failed, 1);
    return NULL;
}

/* One phase on every part: parts 1.. on threads of their own, part 0 here; a part whose thread
 * cannot start runs here too, after. Each phase ends when every part's has. */
static void run_phase(struct job *j, int (*phase)(struct part *))
{
    pthread_t tid[RCN_MAX_THREADS];
    bool started[RCN_MAX_THREADS] = {false};
    j->phase = phase;
    for (int k = 1; k < j->n; k++)
        started[k] = pthread_create(&tid[k], NULL, work, &j->parts[k]) == 0;
    work(&j->parts[0]);
    for (int k = 1; k < j->n; k++) {
        if (started[k])
            pthread_join(tid[k], NULL);
        else
            work(&j->parts[k]);
    }
}

/* Part k's cells, rollup and dependencies into part 0's. */
static int merge_part(struct run *r0, struct run *rk)
{
    uint32_t *cell_map = malloc((rk->n_cells + 1) * sizeof *cell_map);
    if (!cell_map)
        return -1;
    for (size_t i = 0; i < rk->n_cells; i++) {
        const struct recon_cell *from = &rk->cells[i].cell;
        struct cell_acc *c = rcn_cell_get(r0, from->src_site, from->dst_site);
        if (!c) {
            free(cell_map);
            return -1;
        }
        c->cell.socket_bytes += from->socket_bytes;
        c->cell.nfs_bytes += from->nfs_bytes;
        c->cell.service_bytes += from->service_bytes;
        cell_map[i] = (uint32_t)(c - r0->cells);
    }
    int rc = rcn_roll_merge(r0, rk, cell_map);
    free(cell_map);
    if (rc)
        return -1;
    return recon_deps_merge(&r0->deps, &rk->deps);
}

static void add_counts(struct recon_result *out, const struct recon_result *c)
{
    out->n_unmapped += c->n_unmapped;
    out->n_intra_site += c->n_intra_site;
    out->n_dedup_flows += c->n_dedup_flows;
    out->n_both_ends += c->n_both_ends;
}

int rcn_flows(struct run *r, int n, int64_t ws, int64_t we, struct recon_result *out)
{
    const struct recon_input *in = r->in;
    int made = 1, rc = -1;
    struct job j = {.n = n, .ws = ws, .we = we};
    atomic_init(&j.failed, 0);
    j.parts = calloc((size_t)n, sizeof *j.parts);
    j.pre = huge_alloc_filled((in->n_flows + 1) * sizeof *j.pre);
    if (!j.parts || !j.pre)
        goto cleanup;
    j.parts[0].run = *r; /* moved in here, moved back below */
    for (int k = 0; k < n; k++) {
        j.parts[k].job = &j;
        j.parts[k].k = k;
    }
    for (; made < n; made++)
        if (rcn_run_init(&j.parts[made].run, r->cfg, in, in->n_flows / (size_t)n))
            break;
    if (made == n) {
        run_phase(&j, phase_flows);
        run_phase(&j, phase_conns);
        run_phase(&j, phase_owners);
        rc = atomic_load(&j.failed) ? -1 : 0;
    }
    for (int k = 0; k < n && rc == 0; k++)
        add_counts(out, &j.parts[k].count);
    for (int k = 1; k < n && rc == 0; k++)
        rc = merge_part(&j.parts[0].run, &j.parts[k].run);
    *r = j.parts[0].run;
    r->host_run = r;
    for (int k = 1; k < made && k < n; k++)
        rcn_run_free(&j.parts[k].run);
    if (made < n) /* the one whose init failed holds what it made */
        rcn_run_free(&j.parts[made].run);
cleanup:
    for (int k = 0; j.parts && k < n; k++)
        huge_free(j.parts[k].by_part);
    free(j.parts);
    huge_free(j.pre);
    return rc;
}
