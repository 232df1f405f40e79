/* Socket flows of one window: de-duplication, both-ends matching, the credited side's owner, and
 * the split of the window's flows across threads (recon_internal.h rcn_flows).
 *
 * With T threads the work goes in three phases, each thread on its own share and its own
 * `struct run` (indexes and accumulators), a barrier between phases:
 *  1. flows by position (thread k: the k-th slice of flows[]): each socket flow's sites, its
 *     host's first site, what is left out (unmapped, intra-site, de-duplicated) and, for the
 *     rest, its connection's hash;
 *  2. connections by hash (thread k: the connections whose hash falls to k): the connection
 *     table, each side's sums and owner; then each connection's credited owner and the thread
 *     that credits it (a hash of the owner's workflow, user, program and host); thread 0 merges
 *     the hosts' first sites meanwhile;
 *  3. owners by hash (thread k: the connections, NFS flows and transfers whose owner falls to
 *     k): the cells, the rollup and the dependencies.
 * Then the calling thread merges: cells and dependencies by key (a dependency's key has no host,
 * so two threads can hold one), the rollup rows by appending (an owner key includes its host:
 * no two threads hold one row). Every choice made by "first flow" compares arrival order
 * (came_before), never the order of processing, and every figure is an integer sum, so the
 * result is the same with any number of threads (tests/recon_core/driver.c checks 1, 2 and 3 on
 * every scenario). */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hindex.h"
#include "recon_internal.h"

#define RCN_MAX_THREADS        8
#define RCN_FLOWS_PER_THREAD   200000
#define RCN_AUTO_THREADS_LIMIT 4

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

static int cmp_endpoint(const struct endpoint *a, const struct endpoint *b)
{
    if (a->family != b->family)
        return a->family < b->family ? -1 : 1;
    int c = memcmp(a->addr, b->addr, 16);
    if (c)
        return c;
    return (a->port > b->port) - (a->port < b->port);
}

static int eq_conn(const void *ctx, size_t idx, const void *key)
{
    const struct conn *a = &((const struct run *)ctx)->conns[idx], *b = key;
    return a->proto == b->proto && cmp_endpoint(&a->ep[0], &b->ep[0]) == 0 &&
           cmp_endpoint(&a->ep[1], &b->ep[1]) == 0;
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

/* Whether flow a came before flow b (recon_flow_order; else their order in flows[]). */
static bool came_before(const struct run *r, const struct recon_flow *a, const struct recon_flow *b)
{
    size_t i = (size_t)(a - r->in->flows), j = (size_t)(b - r->in->flows);
    const struct recon_flow_order *o = r->in->order;
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
    uint64_t h = hix_hash_str(0, f->host);
    struct hix_slot *s = hix_find(&r->host_ix, h, eq_host, r, f->host);
    if (s->idx1) {
        struct host_site *hs = &r->hosts[s->idx1 - 1];
        if (came_before(r, f, hs->flow))
            *hs = (struct host_site){.flow = f, .site = site};
        return 0;
    }
    if (hix_grow((void **)&r->hosts, &r->cap_hosts, r->n_hosts + 1, sizeof *r->hosts))
        return -1;
    r->hosts[r->n_hosts] = (struct host_site){.flow = f, .site = site};
    if (hix_put(&r->host_ix, s, h, r->n_hosts))
        return -1;
    r->n_hosts++;
    return 0;
}

/* A socket flow's connection key: its endpoints in order, the reporting side `me`. */
static void conn_key(const struct recon_flow *f, int ls, int rs, struct conn *key, int *me)
{
    memset(key, 0, sizeof *key);
    struct endpoint l = {.family = f->local.family, .port = f->local_port};
    struct endpoint m = {.family = f->remote.family, .port = f->remote_port};
    memcpy(l.addr, f->local.addr, 16);
    memcpy(m.addr, f->remote.addr, 16);
    *me = cmp_endpoint(&l, &m) <= 0 ? 0 : 1; /* which side of the connection reported */
    key->proto = f->proto;
    key->ep[*me] = l;
    key->ep[1 - *me] = m;
    key->site[*me] = ls;
    key->site[1 - *me] = rs;
}

static uint64_t conn_hash(const struct conn *key)
{
    return hix_hash_bytes(
        hix_hash_bytes(hix_mix(0, (uint64_t)key->proto), &key->ep[0], sizeof key->ep[0]),
        &key->ep[1], sizeof key->ep[1]);
}

/* Phase 1's answer for one flow: its connection's hash, or rs < 0 when it joins none. */
struct flow_pre {
    uint64_t hash;
    int32_t ls, rs;
};

static int classify(struct run *r, const struct recon_flow *f, struct flow_pre *pre,
                    struct recon_result *out)
{
    pre->rs = -1;
    if (f->source != RECON_FLOW_SOCKET)
        return 0;
    int ls = rcn_site_of(r->cfg, &f->local), rs = rcn_site_of(r->cfg, &f->remote);
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
    struct conn key;
    int me;
    conn_key(f, ls, rs, &key, &me);
    pre->hash = conn_hash(&key);
    pre->ls = ls;
    pre->rs = rs;
    return 0;
}

static int add_to_conn(struct run *r, const struct recon_flow *f, const struct flow_pre *pre)
{
    struct conn key;
    int me;
    conn_key(f, pre->ls, pre->rs, &key, &me);
    uint64_t h = pre->hash; /* conn_hash(&key), made in phase 1 */
    struct hix_slot *s = hix_find(&r->conn_ix, h, eq_conn, r, &key);
    struct conn *c;
    if (s->idx1) {
        c = &r->conns[s->idx1 - 1];
    } else {
        if (hix_grow((void **)&r->conns, &r->cap_conns, r->n_conns + 1, sizeof *r->conns))
            return -1;
        c = &r->conns[r->n_conns];
        *c = key;
        c->hash = h;
        if (hix_put(&r->conn_ix, s, h, r->n_conns))
            return -1;
        r->n_conns++;
    }
    /* the owner: the side's first flow with a known role, else its first flow (in arrival
     * order: came_before) */
    struct conn_side *side = &c->side[me];
    bool known = f->role != RECON_ROLE_UNKNOWN, side_known = side->role != RECON_ROLE_UNKNOWN;
    if (!side->seen || (known && !side_known) ||
        (known == side_known && came_before(r, f, side->owner))) {
        side->role = f->role;
        side->owner = f;
    }
    side->seen = true;
    side->tx += f->tx_bytes;
    side->rx += f->rx_bytes;
    return 0;
}

/* The side whose owner is credited: the client (connecting) side when known. */
static int credited_side(const struct conn *c)
{
    for (int i = 0; i < 2; i++)
        if (c->side[i].seen && c->side[i].role == RECON_ROLE_CLIENT)
            return i;
    for (int i = 0; i < 2; i++)
        if (c->side[i].seen && c->side[i].role == RECON_ROLE_SERVER && c->side[1 - i].seen)
            return 1 - i;
    return c->side[0].seen ? 0 : 1;
}

/* The remote end of a connection as its dependency: a configured endpoint's name, else the
 * listening side's ADDR:PORT, else (the credited side listened) the remote client's address. */
static enum recon_dep_kind dep_endpoint(const struct cfg *cfg, const struct conn *c, int credited,
                                        char *buf, size_t len)
{
    const struct endpoint *e = &c->ep[1 - credited];
    bool remote_listens = c->side[credited].role != RECON_ROLE_SERVER ||
                          c->side[1 - credited].role == RECON_ROLE_SERVER;
    char a[INET6_ADDRSTRLEN] = "?";
    if (remote_listens) {
        const char *name = cfg_endpoint_name(cfg, e->family, e->addr, e->port);
        if (name) {
            snprintf(buf, len, "%s", name);
            return RECON_DEP_SERVICE;
        }
    }
    inet_ntop(e->family == AF_INET6 ? AF_INET6 : AF_INET, e->addr, a, sizeof a);
    if (!remote_listens)
        snprintf(buf, len, "%s", a);
    else if (e->family == AF_INET6)
        snprintf(buf, len, "[%s]:%u", a, e->port);
    else
        snprintf(buf, len, "%s:%u", a, e->port);
    return RECON_DEP_PEER;
}

static int credit_conn(struct run *r, const struct conn *c, struct recon_result *out)
{
    int credited = credited_side(c);
    const struct recon_flow *owner = c->side[credited].owner;
    if (c->side[0].seen && c->side[1].seen)
        out->n_both_ends++;
    uint64_t dir[2];
    struct rcn_owner o;
    rcn_owner_init(&o, rcn_src_socket, owner->workflow, owner->user, owner->program, owner->host,
                   &owner->kube);
    for (int from = 0; from < 2; from++) {
        int to = 1 - from;
        /* one connection, one direction: max(sender tx, receiver rx) */
        uint64_t sent = c->side[from].seen ? c->side[from].tx : 0;
        uint64_t got = c->side[to].seen ? c->side[to].rx : 0;
        dir[from] = sent > got ? sent : got;
        if (rcn_attribute_owner(r, c->site[from], c->site[to], &o, dir[from]))
            return -1;
    }
    char ep[INET6_ADDRSTRLEN + 16];
    enum recon_dep_kind kind = dep_endpoint(r->cfg, c, credited, ep, sizeof ep);
    return recon_deps_add(&r->deps, c->site[credited], c->site[1 - credited], owner->workflow,
                          owner->user, owner->program, kind, ep, dir[credited], dir[1 - credited],
                          1);
}

/* ---- the split across threads ---- */

/* The thread that credits an owner: part of every rollup key (so no two threads hold one row). */
static int owner_part(const char *workflow, const char *user, const char *program, const char *host,
                      int n)
{
    if (n == 1)
        return 0;
    uint64_t h =
        hix_hash_str(hix_hash_str(hix_hash_str(hix_hash_str(0, rcn_str(workflow)), rcn_str(user)),
                                  rcn_str(program)),
                     rcn_str(host));
    return (int)((h >> 32) % (uint64_t)n);
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
    for (size_t i = 0; i < in->n_flows; i++) {
        const struct flow_pre *pre = &j->pre[i];
        if (pre->rs >= 0 && conn_part(pre->hash, j->n) == p->k &&
            add_to_conn(&p->run, &in->flows[i], pre))
            return -1;
    }
    for (size_t i = 0; i < p->run.n_conns; i++) {
        struct conn *c = &p->run.conns[i];
        const struct recon_flow *o = c->side[credited_side(c)].owner;
        c->owner_part = owner_part(o->workflow, o->user, o->program, o->host, j->n);
    }
    return p->k == 0 ? merge_hosts(j) : 0;
}

static int phase_owners(struct part *p)
{
    struct job *j = p->job;
    const struct recon_input *in = p->run.in;
    p->run.host_run = &j->parts[0].run;
    for (int q = 0; q < j->n; q++) {
        const struct run *rq = &j->parts[q].run;
        for (size_t i = 0; i < rq->n_conns; i++)
            if (rq->conns[i].owner_part == p->k && credit_conn(&p->run, &rq->conns[i], &p->count))
                return -1;
    }
    for (size_t i = 0; i < in->n_flows; i++) {
        const struct recon_flow *f = &in->flows[i];
        if (f->source == RECON_FLOW_NFS &&
            owner_part(f->workflow, f->user, f->program, f->host, j->n) == p->k &&
            rcn_add_nfs_flow(&p->run, f, &p->count))
            return -1;
    }
    for (size_t i = 0; i < in->n_transfers; i++) {
        const struct recon_transfer *t = &in->transfers[i];
        if (owner_part(t->workflow, t->requester, t->service, "", j->n) == p->k &&
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
    for (size_t i = 0; i < rk->n_cells; i++) {
        const struct recon_cell *from = &rk->cells[i].cell;
        struct cell_acc *c = rcn_cell_get(r0, from->src_site, from->dst_site);
        if (!c)
            return -1;
        c->cell.socket_bytes += from->socket_bytes;
        c->cell.nfs_bytes += from->nfs_bytes;
        c->cell.service_bytes += from->service_bytes;
    }
    /* appended, not looked up: no row of rk is in r0 (owner_part); r0's rollup index no longer
     * covers every row, and nothing looks a row up after the merge */
    if (rk->n_rollup) {
        if (hix_grow((void **)&r0->rollup, &r0->cap_rollup, r0->n_rollup + rk->n_rollup,
                     sizeof *r0->rollup))
            return -1;
        memcpy(r0->rollup + r0->n_rollup, rk->rollup, rk->n_rollup * sizeof *rk->rollup);
        r0->n_rollup += rk->n_rollup;
    }
    for (size_t i = 0; i < rk->deps.n; i++) {
        const struct recon_dep *d = &rk->deps.rows[i];
        if (recon_deps_add(&r0->deps, d->local_site, d->remote_site, d->workflow, d->user,
                           d->program, d->kind, d->endpoint, d->bytes_out, d->bytes_in,
                           d->connections))
            return -1;
    }
    return 0;
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
    j.pre = malloc((in->n_flows + 1) * sizeof *j.pre);
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
    free(j.parts);
    free(j.pre);
    return rc;
}
