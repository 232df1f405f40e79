/* Reconciliation of one window, pure: observed bytes from counters, attributed bytes from flows
 * and transfers (de-duplicated, laid onto circuits along routes), cells and their statuses. */
#include "recon.h"

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hindex.h"
#include "hugealloc.h"
#include "recon_internal.h"
#include "sitemap.h"

const char *recon_status_name(enum cell_status s)
{
    return cell_status_name(s);
}

int recon_status_parse(const char *s)
{
    return (int)cell_status_parse(s);
}

uint64_t recon_spread(uint64_t total, int64_t start_us, int64_t end_us, int64_t from_us,
                      int64_t to_us)
{
    if (end_us <= start_us)
        return (start_us >= from_us && start_us < to_us) ? total : 0;
    int64_t lo = from_us > start_us ? from_us : start_us;
    int64_t hi = to_us < end_us ? to_us : end_us;
    if (hi <= lo)
        return 0;
    /* floor(total * elapsed / span) at both ends: adjacent ranges share their edge value, so the
     * parts of one total always add up to it exactly. */
    unsigned __int128 span = (unsigned __int128)(end_us - start_us);
    unsigned __int128 upto_hi = (unsigned __int128)total * (uint64_t)(hi - start_us) / span;
    unsigned __int128 upto_lo = (unsigned __int128)total * (uint64_t)(lo - start_us) / span;
    return (uint64_t)(upto_hi - upto_lo);
}

enum cell_status recon_cell_status(const struct cfg *cfg, double valid_fraction,
                                   uint64_t observed_payload_bytes, bool has_coverage,
                                   double coverage)
{
    return cell_status_of(cfg, valid_fraction, observed_payload_bytes, has_coverage, coverage);
}

const char *rcn_str(const char *s)
{
    return s ? s : "";
}

int rcn_site_of(const struct cfg *cfg, const struct recon_addr *a)
{
    if (a->family != AF_INET && a->family != AF_INET6)
        return -1;
    return sm_lookup(cfg->sitemap, a->family, a->addr);
}

/* ---- per-link counters over the window ---- */

/* One direction of one interface over the window. */
struct counter_part {
    int64_t covered_us;
    uint64_t octets;
    double payload;
};

struct link_counts {
    size_t n_samples;
    uint64_t speed_bps;
    struct counter_part in, out;
};

/* Delta of a cumulative counter; false when the interval must be discarded. 64-bit: false if it
 * went back. 32-bit: the delta is d0 = (cur - prev) mod 2^32 plus k wraps of 2^32, and the true
 * delta cannot exceed max (what the interface can carry over the interval): only k = 0 is
 * possible when d0 + 2^32 > max, and then the delta is d0 (one wrap at most, decided by the
 * speed); otherwise k is ambiguous and the interval is discarded (never undercounted). */
static bool counter_delta(uint64_t prev, uint64_t cur, int bits, uint64_t max, uint64_t *d)
{
    if (bits != 32) {
        if (cur < prev)
            return false;
        *d = cur - prev;
        return true;
    }
    if (prev > UINT32_MAX || cur > UINT32_MAX)
        return false;
    uint64_t d0 = (cur - prev) & UINT32_MAX;
    if (d0 + (UINT64_C(1) << 32) <= max)
        return false; /* more than one wrap fits in the interval: the wrap count is unknown */
    *d = d0;
    return true;
}

/* Most octets a 32-bit counter's interface can count over dt_us: its speed (the larger of the two
 * samples' speed_bps; 32-bit ifSpeed saturates at 2^32-1, which bounds nothing), else the link's
 * configured capacity, plus 1%; UINT64_MAX when neither is known. */
static uint64_t max_octets(const struct cfg_link *link, uint64_t speed0, uint64_t speed1,
                           int64_t dt_us)
{
    uint64_t bps = speed0 > speed1 ? speed0 : speed1;
    if (bps >= UINT32_MAX)
        bps = 0;
    if (!bps)
        bps = link->capacity_bps;
    if (!bps || dt_us <= 0)
        return UINT64_MAX;
    unsigned __int128 b = (unsigned __int128)bps * (uint64_t)dt_us * 101 / (8 * 100 * 1000000ULL);
    return b > UINT64_MAX - 1 ? UINT64_MAX : (uint64_t)b + 1;
}

/* max: most octets the interface can carry over the interval (see counter_delta); packets are
 * bounded by it over 60 bytes (Ethernet's 64-byte minimum frame, less slack). */
static void add_interval(const struct cfg *cfg, struct counter_part *part, int64_t ws, int64_t we,
                         int64_t t0, int64_t t1, bool has_oct, uint64_t oct0, uint64_t oct1,
                         bool has_pkt, uint64_t pkt0, uint64_t pkt1, int bits, uint64_t max)
{
    uint64_t doct, dpkt;
    if (!has_oct || !counter_delta(oct0, oct1, bits, max, &doct))
        return;
    int64_t lo = t0 > ws ? t0 : ws, hi = t1 < we ? t1 : we;
    if (hi <= lo)
        return;
    uint64_t oct = recon_spread(doct, t0, t1, ws, we);
    part->covered_us += hi - lo;
    part->octets += oct;
    uint64_t max_pkts = max == UINT64_MAX ? UINT64_MAX : max / 60 + 1;
    if (has_pkt && counter_delta(pkt0, pkt1, bits, max_pkts, &dpkt)) {
        uint64_t pkts = recon_spread(dpkt, t0, t1, ws, we);
        part->payload += (double)oct - (double)pkts * cfg->bytes_per_packet;
    } else {
        part->payload += (double)oct * cfg->ratio_without_packets;
    }
}

static int cmp_sample(const void *a, const void *b)
{
    const struct recon_sample *x = *(const struct recon_sample *const *)a;
    const struct recon_sample *y = *(const struct recon_sample *const *)b;
    if (x->link != y->link)
        return x->link < y->link ? -1 : 1;
    return (x->at_us > y->at_us) - (x->at_us < y->at_us);
}

static int count_links(const struct cfg *cfg, const struct recon_input *in, struct link_counts *lc,
                       char *err, size_t errlen)
{
    int64_t ws = in->window_start_us, we = ws + (int64_t)cfg->window_seconds * 1000000;
    const struct recon_sample **order = malloc((in->n_samples + 1) * sizeof *order);
    if (!order) {
        snprintf(err, errlen, "recon: out of memory sorting %zu samples", in->n_samples);
        return -1;
    }
    for (size_t i = 0; i < in->n_samples; i++) {
        const struct recon_sample *s = &in->samples[i];
        if (s->link < 0 || (size_t)s->link >= cfg->n_links) {
            snprintf(err, errlen, "recon: samples[%zu]: link %d is not configured", i, s->link);
            free(order);
            return -1;
        }
        order[i] = s;
    }
    if (in->n_samples)
        qsort(order, in->n_samples, sizeof *order, cmp_sample);
    for (size_t i = 0; i < in->n_samples; i++) {
        const struct recon_sample *c = order[i];
        struct link_counts *l = &lc[c->link];
        l->n_samples++;
        if (c->speed_bps > l->speed_bps)
            l->speed_bps = c->speed_bps;
        if (i == 0 || order[i - 1]->link != c->link)
            continue;
        const struct recon_sample *p = order[i - 1];
        if (c->at_us <= p->at_us || c->counter_bits != p->counter_bits)
            continue;
        if (p->uptime_cs >= 0 && c->uptime_cs >= 0 && c->uptime_cs < p->uptime_cs)
            continue; /* rebooted: the counters restarted somewhere in the interval */
        if (c->discontinuity_cs != p->discontinuity_cs)
            continue;
        if (c->at_us <= ws || p->at_us >= we)
            continue;
        uint64_t max = c->counter_bits == 32 ? max_octets(&cfg->links[c->link], p->speed_bps,
                                                          c->speed_bps, c->at_us - p->at_us)
                                             : UINT64_MAX;
        add_interval(cfg, &l->in, ws, we, p->at_us, c->at_us, p->has_in_octets && c->has_in_octets,
                     p->in_octets, c->in_octets, p->has_in_pkts && c->has_in_pkts, p->in_pkts,
                     c->in_pkts, c->counter_bits, max);
        add_interval(cfg, &l->out, ws, we, p->at_us, c->at_us,
                     p->has_out_octets && c->has_out_octets, p->out_octets, c->out_octets,
                     p->has_out_pkts && c->has_out_pkts, p->out_pkts, c->out_pkts, c->counter_bits,
                     max);
    }
    free(order);
    return 0;
}

static uint64_t pair_key(int src, int dst)
{
    return ((uint64_t)(uint32_t)src << 32) | (uint32_t)dst;
}

static int eq_cell(const void *ctx, size_t idx, const void *key)
{
    return ((const struct run *)ctx)->cells[idx].key == *(const uint64_t *)key;
}

struct cell_acc *rcn_cell_get(struct run *r, int src, int dst)
{
    uint64_t key = pair_key(src, dst), h = hix_mix(0, key);
    struct hix_slot *s = hix_find(&r->cell_ix, h, eq_cell, r, &key);
    if (s->idx1)
        return &r->cells[s->idx1 - 1];
    if (hix_grow((void **)&r->cells, &r->cap_cells, r->n_cells + 1, sizeof *r->cells))
        return NULL;
    struct cell_acc *c = &r->cells[r->n_cells];
    memset(c, 0, sizeof *c);
    c->key = key;
    c->cell.src_site = src;
    c->cell.dst_site = dst;
    c->cell.valid_fraction = 1.0;
    if (hix_put(&r->cell_ix, s, h, r->n_cells))
        return NULL;
    r->n_cells++;
    return c;
}

static int eq_path(const void *ctx, size_t idx, const void *key)
{
    return ((const struct run *)ctx)->paths[idx].key == *(const uint64_t *)key;
}

static int eq_route(const void *ctx, size_t idx, const void *key)
{
    return ((const struct run *)ctx)->routes[idx].key == *(const uint64_t *)key;
}

static int route_put(struct run *r, int src, int dst, int route)
{
    uint64_t key = pair_key(src, dst), h = hix_mix(0, key);
    struct hix_slot *s = hix_find(&r->route_ix, h, eq_route, r, &key);
    if (s->idx1)
        return 0; /* the first route of a pair, and a route before a link */
    if (hix_grow((void **)&r->routes, &r->cap_routes, r->n_routes + 1, sizeof *r->routes))
        return -1;
    r->routes[r->n_routes] = (struct pair_route){key, route};
    if (hix_put(&r->route_ix, s, h, r->n_routes))
        return -1;
    r->n_routes++;
    return 0;
}

/* cfg_path's answer from an index built once per run (cfg_path scans every route and link per
 * pair: 0.65 s of a 1 M-flow window's CPU at 5,000 circuits). */
static int routes_index(struct run *r)
{
    const struct cfg *cfg = r->cfg;
    if (hix_init(&r->route_ix, cfg->n_routes + 2 * cfg->n_links))
        return -1;
    for (size_t i = 0; i < cfg->n_routes; i++)
        if (cfg->routes[i].src_idx >= 0 && cfg->routes[i].dst_idx >= 0 &&
            route_put(r, cfg->routes[i].src_idx, cfg->routes[i].dst_idx, (int)i))
            return -1;
    for (size_t i = 0; i < cfg->n_links; i++) {
        int a = cfg->links[i].site_idx, b = cfg->links[i].peer_site_idx;
        if (a >= 0 && b >= 0 && (route_put(r, a, b, -1) || route_put(r, b, a, -1)))
            return -1;
    }
    return 0;
}

static size_t route_of(struct run *r, int src, int dst, int *out, size_t max)
{
    uint64_t key = pair_key(src, dst), h = hix_mix(0, key);
    struct hix_slot *s = hix_find(&r->route_ix, h, eq_route, r, &key);
    if (!s->idx1 || max < 2)
        return 0;
    int i = r->routes[s->idx1 - 1].route;
    if (i < 0) {
        out[0] = src;
        out[1] = dst;
        return 2;
    }
    const struct cfg_route *rt = &r->cfg->routes[i];
    if (rt->n_via + 2 > max)
        return 0;
    size_t n = 0;
    out[n++] = src;
    for (size_t k = 0; k < rt->n_via; k++)
        out[n++] = rt->via_idx[k];
    out[n++] = dst;
    return n;
}

/* The sites from src to dst along which the pair's bytes are laid: its route, the direct pair
 * when a link joins them, else just (src, dst) (a no_counter cell). */
static const struct pair_path *path_get(struct run *r, int src, int dst)
{
    uint64_t key = pair_key(src, dst), h = hix_mix(0, key);
    size_t ns = r->cfg->n_sites;
    uint32_t *direct = NULL; /* up to RCN_DIRECT_PATH_SITES sites: an array by pair, no hashing */
    struct hix_slot *s = NULL;
    if (ns <= RCN_DIRECT_PATH_SITES && src >= 0 && dst >= 0 && (size_t)src < ns &&
        (size_t)dst < ns) {
        if (!r->path_of && !(r->path_of = calloc(ns * ns + 1, sizeof *r->path_of)))
            return NULL;
        direct = &r->path_of[(size_t)src * ns + (size_t)dst];
        if (*direct)
            return &r->paths[*direct - 1];
    } else {
        s = hix_find(&r->path_ix, h, eq_path, r, &key);
        if (s->idx1)
            return &r->paths[s->idx1 - 1];
    }
    size_t n = route_of(r, src, dst, r->path_buf, r->cfg->n_sites + 1);
    if (n < 2) {
        r->path_buf[0] = src;
        r->path_buf[1] = dst;
        n = 2;
    }
    if (hix_grow((void **)&r->path_sites, &r->cap_path_sites, r->n_path_sites + n,
                 sizeof *r->path_sites) ||
        hix_grow((void **)&r->path_cells, &r->cap_path_cells, r->n_path_sites + n,
                 sizeof *r->path_cells) ||
        hix_grow((void **)&r->paths, &r->cap_paths, r->n_paths + 1, sizeof *r->paths))
        return NULL;
    memcpy(r->path_sites + r->n_path_sites, r->path_buf, n * sizeof *r->path_buf);
    /* every hop's cell made with the path (as the first bytes laid on it made them) */
    for (size_t i = 0; i + 1 < n; i++) {
        struct cell_acc *c = rcn_cell_get(r, r->path_buf[i], r->path_buf[i + 1]);
        if (!c)
            return NULL;
        r->path_cells[r->n_path_sites + i] = (uint32_t)(c - r->cells);
    }
    struct pair_path *p = &r->paths[r->n_paths];
    p->key = key;
    p->off = r->n_path_sites;
    p->len = n;
    r->n_path_sites += n;
    if (direct)
        *direct = (uint32_t)r->n_paths + 1;
    else if (hix_put(&r->path_ix, s, h, r->n_paths))
        return NULL;
    r->n_paths++;
    return p;
}

const char rcn_src_socket[] = "socket", rcn_src_nfs[] = "nfs", rcn_src_service[] = "service";

int64_t rcn_path(struct run *r, int src, int dst)
{
    const struct pair_path *p = path_get(r, src, dst);
    return p ? p - r->paths : -1;
}

void rcn_path_prefetch(const struct run *r, size_t path, uint32_t owner)
{
    const struct pair_path *p = &r->paths[path];
    for (size_t i = 0; i + 1 < p->len; i++) {
        __builtin_prefetch(&r->cells[r->path_cells[p->off + i]], 1);
        rcn_roll_prefetch(r, owner, r->path_cells[p->off + i]);
    }
}

int rcn_attribute_path(struct run *r, size_t path, uint32_t owner, uint64_t bytes)
{
    const struct pair_path *p = &r->paths[path];
    const char *source = r->owners.v[owner].key.source;
    for (size_t i = 0; i + 1 < p->len; i++) {
        uint32_t cell = r->path_cells[p->off + i];
        struct cell_acc *c = &r->cells[cell];
        if (source == rcn_src_socket)
            c->cell.socket_bytes += bytes;
        else if (source == rcn_src_nfs)
            c->cell.nfs_bytes += bytes;
        else
            c->cell.service_bytes += bytes;
        if (rcn_roll_add(r, owner, cell, bytes))
            return -1;
    }
    return 0;
}

int rcn_attribute_owner(struct run *r, int src, int dst, uint32_t owner, uint64_t bytes)
{
    if (bytes == 0)
        return 0;
    int64_t p = rcn_path(r, src, dst);
    return p < 0 ? -1 : rcn_attribute_path(r, (size_t)p, owner, bytes);
}

int rcn_attribute(struct run *r, int src, int dst, const char *source, const char *workflow,
                  const char *user, const char *program, const char *host,
                  const struct recon_kube *kube, uint64_t bytes)
{
    if (bytes == 0)
        return 0;
    int64_t id = rcn_owner_id(&r->owners, source, workflow, user, program, host, kube);
    return id < 0 ? -1 : rcn_attribute_owner(r, src, dst, (uint32_t)id, bytes);
}

/* ---- counters -> circuit directions -> cells ---- */

static int cmp_link_circuit(const void *a, const void *b, void *ctx)
{
    const struct cfg *cfg = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    int c = strcmp(cfg->links[x].circuit, cfg->links[y].circuit);
    return c ? c : (x > y) - (x < y);
}

static int observe_circuits(struct run *r, const struct link_counts *lc, int64_t window_us,
                            struct recon_result *out)
{
    const struct cfg *cfg = r->cfg;
    size_t cap = 0;
    int rc = -1;
    /* the links of one circuit are its ends: group them by circuit name */
    int *order = malloc((cfg->n_links + 1) * sizeof *order);
    if (!order)
        return -1;
    for (size_t i = 0; i < cfg->n_links; i++)
        order[i] = (int)i;
    if (cfg->n_links)
        qsort_r(order, cfg->n_links, sizeof *order, cmp_link_circuit, (void *)cfg);
    for (size_t g = 0, end; g < cfg->n_links; g = end) {
        const struct cfg_link *li = &cfg->links[order[g]];
        for (end = g + 1;
             end < cfg->n_links && strcmp(cfg->links[order[end]].circuit, li->circuit) == 0; end++)
            ;
        if (li->site_idx == li->peer_site_idx)
            continue;
        /* both directions of this circuit, between the two sites of its first link */
        for (int d = 0; d < 2; d++) {
            int from = d == 0 ? li->site_idx : li->peer_site_idx;
            int to = d == 0 ? li->peer_site_idx : li->site_idx;
            int sender = -1, receiver = -1;
            for (size_t k = g; k < end; k++) {
                const struct cfg_link *lj = &cfg->links[order[k]];
                if (sender < 0 && lj->site_idx == from && lj->peer_site_idx == to)
                    sender = order[k];
                if (receiver < 0 && lj->site_idx == to && lj->peer_site_idx == from)
                    receiver = order[k];
            }
            double fs = sender >= 0 ? (double)lc[sender].out.covered_us / (double)window_us : 0;
            double fr = receiver >= 0 ? (double)lc[receiver].in.covered_us / (double)window_us : 0;
            bool use_out = sender >= 0 && (receiver < 0 || fs >= CELL_MIN_VALID_FRACTION ||
                                           fs >= fr || lc[receiver].n_samples == 0);
            int used = use_out ? sender : receiver;
            const struct counter_part *part = use_out ? &lc[used].out : &lc[used].in;
            if (hix_grow((void **)&out->links, &cap, out->n_links + 1, sizeof *out->links))
                goto cleanup;
            struct recon_link_obs *o = &out->links[out->n_links++];
            memset(o, 0, sizeof *o);
            o->circuit = li->circuit;
            o->src_site = from;
            o->dst_site = to;
            o->out_counter = use_out;
            o->link = used;
            o->observed_bytes = part->octets;
            o->observed_payload_bytes = part->payload > 0 ? (uint64_t)llround(part->payload) : 0;
            o->valid_fraction = (double)part->covered_us / (double)window_us;
            if (sender >= 0 && cfg->links[sender].capacity_bps)
                o->capacity_bps = cfg->links[sender].capacity_bps;
            else if (receiver >= 0 && cfg->links[receiver].capacity_bps)
                o->capacity_bps = cfg->links[receiver].capacity_bps;
            else
                o->capacity_bps = lc[used].speed_bps;
            if (o->capacity_bps && part->covered_us > 0) {
                o->has_utilization = true;
                o->utilization = (double)part->octets * 8.0 /
                                 ((double)part->covered_us / 1e6 * (double)o->capacity_bps);
            }
            struct cell_acc *c = rcn_cell_get(r, from, to);
            if (!c)
                goto cleanup;
            if (!c->cell.has_link || o->valid_fraction < c->cell.valid_fraction)
                c->cell.valid_fraction = o->valid_fraction;
            c->cell.has_link = true;
            c->cell.observed_bytes += o->observed_bytes;
            c->payload += part->payload > 0 ? part->payload : 0;
            c->cell.capacity_bps += o->capacity_bps;
        }
    }
    rc = 0;
cleanup:
    free(order);
    return rc;
}

int rcn_add_nfs_flow(struct run *r, const struct recon_flow *f, struct recon_result *out)
{
    int client = rcn_site_of(r->cfg, &f->local);
    if (client < 0 && f->local.family == 0 && f->host) {
        client = rcn_host_site(r->host_run, f->host);
    }
    int server = rcn_site_of(r->cfg, &f->nfs_server);
    if (client < 0 || server < 0) {
        out->n_unmapped++;
        return 0;
    }
    if (client == server) {
        out->n_intra_site++;
        return 0;
    }
    int src = f->nfs_op == RECON_NFS_READ ? server : client;
    int dst = f->nfs_op == RECON_NFS_READ ? client : server;
    if (rcn_attribute(r, src, dst, rcn_src_nfs, f->workflow, f->user, f->program, f->host, &f->kube,
                      f->nfs_bytes))
        return -1;
    /* dependency: "SERVER:EXPORT" seen from the client's site */
    char a[INET6_ADDRSTRLEN] = "?", ep[INET6_ADDRSTRLEN + 1100];
    inet_ntop(f->nfs_server.family == AF_INET6 ? AF_INET6 : AF_INET, f->nfs_server.addr, a,
              sizeof a);
    snprintf(ep, sizeof ep, "%s:%s", a, f->nfs_export && *f->nfs_export ? f->nfs_export : "/");
    bool read = f->nfs_op == RECON_NFS_READ;
    return recon_deps_add(&r->deps, client, server, f->workflow, f->user, f->program, RECON_DEP_NFS,
                          ep, read ? 0 : f->nfs_bytes, read ? f->nfs_bytes : 0, 1);
}

static int site_of_end(const struct cfg *cfg, const char *s)
{
    if (!s)
        return -1;
    int i = cfg_site_index(cfg, s);
    return i >= 0 ? i : cfg_site_of_addr(cfg, s);
}

int rcn_add_transfer(struct run *r, const struct recon_transfer *t, int64_t ws, int64_t we,
                     struct recon_result *out)
{
    uint64_t part = recon_spread(t->bytes, t->start_us, t->end_us, ws, we);
    if (part == 0)
        return 0;
    int src = site_of_end(r->cfg, t->src), dst = site_of_end(r->cfg, t->dst);
    if (src < 0 || dst < 0) {
        out->n_unmapped++;
        return 0;
    }
    if (src == dst) {
        out->n_intra_site++;
        return 0;
    }
    if (rcn_attribute(r, src, dst, rcn_src_service, t->workflow, t->requester, t->service, "", NULL,
                      part))
        return -1;
    /* dependency: the requester's work is at the destination; it pulls from the source */
    char ep[1100];
    snprintf(ep, sizeof ep, "%s %s", t->service ? t->service : "", t->src);
    return recon_deps_add(&r->deps, dst, src, t->workflow, t->requester, t->service,
                          RECON_DEP_TRANSFER, ep, 0, part, 1);
}

/* ---- results ---- */

static int cmp_cell(const void *a, const void *b)
{
    const struct recon_cell *x = a, *y = b;
    if (x->src_site != y->src_site)
        return x->src_site < y->src_site ? -1 : 1;
    return (x->dst_site > y->dst_site) - (x->dst_site < y->dst_site);
}

static int cmp_link(const void *a, const void *b)
{
    const struct recon_link_obs *x = a, *y = b;
    int c = strcmp(x->circuit, y->circuit);
    if (c)
        return c;
    return (x->src_site > y->src_site) - (x->src_site < y->src_site);
}

static int cmp_cell_ix(const void *a, const void *b, void *ctx)
{
    const struct cell_acc *cells = ctx;
    return cmp_cell(&cells[*(const uint32_t *)a].cell, &cells[*(const uint32_t *)b].cell);
}

static int finish_cells(struct run *r, struct recon_result *out)
{
    int rc = -1;
    uint32_t *order = malloc((r->n_cells + 1) * sizeof *order);
    uint32_t *pos = malloc((r->n_cells + 1) * sizeof *pos);
    out->cells = malloc((r->n_cells + 1) * sizeof *out->cells);
    if (!order || !pos || !out->cells)
        goto cleanup;
    for (size_t i = 0; i < r->n_cells; i++) {
        struct recon_cell *c = &r->cells[i].cell;
        c->observed_payload_bytes = (uint64_t)llround(r->cells[i].payload);
        c->attributed_bytes = c->socket_bytes + c->nfs_bytes + c->service_bytes;
        c->unattributed_bytes = c->observed_payload_bytes > c->attributed_bytes
                                    ? c->observed_payload_bytes - c->attributed_bytes
                                    : 0;
        if (!c->has_link) {
            c->valid_fraction = 0;
            c->status = CELL_NO_COUNTER;
        } else {
            c->has_coverage = c->observed_payload_bytes > 0;
            c->coverage = c->has_coverage
                              ? (double)c->attributed_bytes / (double)c->observed_payload_bytes
                              : 0;
            c->status = recon_cell_status(r->cfg, c->valid_fraction, c->observed_payload_bytes,
                                          c->has_coverage, c->coverage);
        }
        order[i] = (uint32_t)i;
    }
    /* the cells sorted through their indexes: the rollup's rows are ordered by their cell's place
     */
    if (r->n_cells)
        qsort_r(order, r->n_cells, sizeof *order, cmp_cell_ix, r->cells);
    for (size_t i = 0; i < r->n_cells; i++) {
        out->cells[i] = r->cells[order[i]].cell;
        pos[order[i]] = (uint32_t)i;
    }
    out->n_cells = r->n_cells;
    if (rcn_roll_finish(r, pos, out))
        goto cleanup;
    if (out->n_links)
        qsort(out->links, out->n_links, sizeof *out->links, cmp_link);
    if (recon_deps_take(&r->deps, &out->deps, &out->n_deps))
        goto cleanup;
    rc = 0;
cleanup:
    free(order);
    free(pos);
    return rc;
}

void rcn_run_free(struct run *r)
{
    huge_free(r->cells);
    hix_free(&r->cell_ix);
    huge_free(r->paths);
    hix_free(&r->path_ix);
    huge_free(r->path_sites);
    huge_free(r->path_cells);
    free(r->path_of);
    rcn_owners_free(&r->owners);
    huge_free(r->rolls);
    huge_free(r->conns);
    huge_free(r->conn_ix.slots);
    huge_free(r->hosts);
    hix_free(&r->host_ix);
    recon_deps_acc_free(&r->deps);
    free(r->path_buf);
    huge_free(r->routes);
    hix_free(&r->route_ix);
}

int rcn_run_init(struct run *r, const struct cfg *cfg, const struct recon_input *in, size_t expect)
{
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    r->in = in;
    r->host_run = r;
    r->path_buf = malloc((cfg->n_sites + 2) * sizeof *r->path_buf);
    /* the connections' table is sized by recon_socket.c once it knows their number; the rollup's
     * at about 2 rows per 5 flows (the fleet's shape), the dependencies' at 1 per 10 */
    if (!r->path_buf || hix_init(&r->cell_ix, 256) || hix_init(&r->path_ix, 256) ||
        rcn_owners_init(&r->owners, 1024) || hix_init(&r->host_ix, 64) ||
        recon_deps_init(&r->deps, expect / 16 + 64) || routes_index(r))
        return -1;
    return 0;
}

int recon_run(const struct cfg *cfg, const struct recon_input *in, struct recon_result *out,
              char *err, size_t errlen)
{
    int rc = -1;
    struct run r;
    struct link_counts *lc = NULL;
    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    if (cfg->window_seconds <= 0 ||
        in->window_start_us % ((int64_t)cfg->window_seconds * 1000000) != 0) {
        snprintf(err, errlen, "recon: window_start %lld is not aligned to %d s",
                 (long long)in->window_start_us, cfg->window_seconds);
        return -1;
    }
    if (in->n_flows >= UINT32_MAX) { /* flows are indexed by 32 bits (struct conn) */
        snprintf(err, errlen, "recon: %zu flows in one window (at most %u)", in->n_flows,
                 UINT32_MAX - 1);
        return -1;
    }
    int64_t ws = in->window_start_us, window_us = (int64_t)cfg->window_seconds * 1000000;
    lc = calloc(cfg->n_links + 1, sizeof *lc);
    int threads = rcn_threads(in);
    if (!lc || rcn_run_init(&r, cfg, in, in->n_flows / (size_t)threads)) {
        snprintf(err, errlen, "recon: out of memory");
        goto cleanup;
    }
    if (count_links(cfg, in, lc, err, errlen))
        goto cleanup;
    if (observe_circuits(&r, lc, window_us, out) ||
        rcn_flows(&r, threads, ws, ws + window_us, out) || finish_cells(&r, out)) {
        snprintf(err, errlen, "recon: out of memory");
        goto cleanup;
    }
    rc = 0;
cleanup:
    if (rc)
        recon_result_free(out);
    rcn_run_free(&r);
    free(lc);
    return rc;
}

void recon_result_free(struct recon_result *r)
{
    if (!r)
        return;
    huge_free(r->links);
    free(r->cells);
    huge_free(r->rollup);
    recon_deps_free(r->deps, r->n_deps);
    memset(r, 0, sizeof *r);
}
