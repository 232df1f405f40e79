/* The dependency planner (hm_deps_plan.h). Sizes are small (one selector's endpoints and the
 * hops they cross over a span), so plain arrays with linear look-ups and one sort suffice. */
#include "hm_deps_plan.h"

#include "hindex.h"
#include "hugealloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct plan_ctx {
    const struct cfg *cfg;
    struct hm_dep_plan *p;
    size_t cap_c, cap_e;
    int *path;
    /* per (window, hop) bytes today / moved, for the peak check */
    struct hop_window {
        int64_t window_us;
        size_t circuit;
        uint64_t now, moved;
    } * hw;
    size_t n_hw, cap_hw;
};

static long circuit_index(struct plan_ctx *x, int a, int b)
{
    struct hm_dep_plan *p = x->p;
    for (size_t i = 0; i < p->n_circuits; i++)
        if (p->circuits[i].src_site == a && p->circuits[i].dst_site == b)
            return (long)i;
    if (hix_grow((void **)&p->circuits, &x->cap_c, p->n_circuits + 1, sizeof *p->circuits))
        return -1;
    struct hm_dep_circuit *c = &p->circuits[p->n_circuits];
    memset(c, 0, sizeof *c);
    c->src_site = a;
    c->dst_site = b;
    return (long)p->n_circuits++;
}

/* Appends one (window, hop) amount; hw_coalesce sorts and sums them afterwards. */
static struct hop_window *hop_window(struct plan_ctx *x, int64_t w, size_t circuit)
{
    if (hix_grow((void **)&x->hw, &x->cap_hw, x->n_hw + 1, sizeof *x->hw))
        return NULL;
    x->hw[x->n_hw] = (struct hop_window){.window_us = w, .circuit = circuit};
    return &x->hw[x->n_hw++];
}

static int cmp_hw(const void *a, const void *b)
{
    const struct hop_window *x = a, *y = b;
    if (x->circuit != y->circuit)
        return x->circuit < y->circuit ? -1 : 1;
    return (x->window_us > y->window_us) - (x->window_us < y->window_us);
}

static void hw_coalesce(struct plan_ctx *x)
{
    if (!x->n_hw)
        return;
    qsort(x->hw, x->n_hw, sizeof *x->hw, cmp_hw);
    size_t n = 0;
    for (size_t i = 0; i < x->n_hw; i++) {
        if (n && cmp_hw(&x->hw[n - 1], &x->hw[i]) == 0) {
            x->hw[n - 1].now += x->hw[i].now;
            x->hw[n - 1].moved += x->hw[i].moved;
        } else {
            x->hw[n++] = x->hw[i];
        }
    }
    x->n_hw = n;
}

/* Lays bytes of window w from src to dst on every hop of its path: today's or moved load.
 * Returns 0, 1 when the pair has no path of circuits, -1 out of memory. */
static int lay(struct plan_ctx *x, int64_t w, int src, int dst, uint64_t bytes, bool moved)
{
    if (bytes == 0 || src == dst)
        return 0;
    size_t n = cfg_path(x->cfg, src, dst, x->path, x->cfg->n_sites + 1);
    if (n < 2)
        return 1;
    for (size_t i = 0; i + 1 < n; i++) {
        long c = circuit_index(x, x->path[i], x->path[i + 1]);
        if (c < 0)
            return -1;
        struct hop_window *h = hop_window(x, w, (size_t)c);
        if (!h)
            return -1;
        if (moved) {
            x->p->circuits[c].bytes_moved += bytes;
            h->moved += bytes;
        } else {
            x->p->circuits[c].bytes_now += bytes;
            h->now += bytes;
        }
    }
    return 0;
}

static int add_endpoint(struct plan_ctx *x, const struct hm_dep_row *r, int window_seconds)
{
    struct hm_dep_plan *p = x->p;
    struct hm_dep_endpoint *e = NULL;
    for (size_t i = 0; i < p->n_endpoints && !e; i++) {
        struct hm_dep_endpoint *c = &p->endpoints[i];
        if (c->local_site == r->local_site && c->remote_site == r->remote_site &&
            strcmp(c->kind, r->kind) == 0 && strcmp(c->endpoint, r->endpoint) == 0)
            e = c;
    }
    if (!e) {
        if (hix_grow((void **)&p->endpoints, &x->cap_e, p->n_endpoints + 1, sizeof *p->endpoints))
            return -1;
        e = &p->endpoints[p->n_endpoints++];
        memset(e, 0, sizeof *e);
        e->local_site = r->local_site;
        e->remote_site = r->remote_site;
        e->kind = r->kind;
        e->endpoint = r->endpoint;
    }
    e->bytes_out += r->bytes_out;
    e->bytes_in += r->bytes_in;
    e->connections += r->connections;
    uint64_t out_bps = r->bytes_out * 8 / (uint64_t)window_seconds;
    uint64_t in_bps = r->bytes_in * 8 / (uint64_t)window_seconds;
    if (out_bps > e->peak_out_bps)
        e->peak_out_bps = out_bps;
    if (in_bps > e->peak_in_bps)
        e->peak_in_bps = in_bps;
    return 0;
}

static int cmp_endpoint(const void *a, const void *b)
{
    const struct hm_dep_endpoint *x = a, *y = b;
    uint64_t tx = x->bytes_out + x->bytes_in, ty = y->bytes_out + y->bytes_in;
    if (tx != ty)
        return tx > ty ? -1 : 1;
    int c = strcmp(x->endpoint, y->endpoint);
    return c ? c : (x->local_site > y->local_site) - (x->local_site < y->local_site);
}

static int cmp_circuit(const void *a, const void *b)
{
    const struct hm_dep_circuit *x = a, *y = b;
    if (x->src_site != y->src_site)
        return x->src_site < y->src_site ? -1 : 1;
    return (x->dst_site > y->dst_site) - (x->dst_site < y->dst_site);
}

/* Peak utilisation per hop, today and moved: observed bytes of the window's cell, minus what the
 * selector put there today, plus what it would put there from the target site. */
static void peaks(struct plan_ctx *x, const struct hm_dep_cell *cells, size_t n_cells)
{
    const struct cfg *cfg = x->cfg;
    double window_s = (double)cfg->window_seconds;
    for (size_t i = 0; i < n_cells; i++) {
        const struct hm_dep_cell *cl = &cells[i];
        if (!cl->has_observed || cl->capacity_bps == 0)
            continue;
        long ci = -1;
        for (size_t k = 0; k < x->p->n_circuits && ci < 0; k++)
            if (x->p->circuits[k].src_site == cl->src_site &&
                x->p->circuits[k].dst_site == cl->dst_site)
                ci = (long)k;
        if (ci < 0)
            continue;
        struct hm_dep_circuit *c = &x->p->circuits[ci];
        uint64_t now = 0, moved = 0;
        struct hop_window key = {.window_us = cl->window_us, .circuit = (size_t)ci};
        const struct hop_window *h =
            x->n_hw ? bsearch(&key, x->hw, x->n_hw, sizeof *x->hw, cmp_hw) : NULL;
        if (h) {
            now = h->now;
            moved = h->moved;
        }
        double cap = (double)cl->capacity_bps * window_s;
        double base = (double)cl->observed_bytes - (double)now;
        if (base < 0)
            base = 0; /* the counters saw less than was attributed (coverage > 1) */
        double u_now = (double)cl->observed_bytes * 8 / cap;
        double u_moved = (base + (x->p->move_to >= 0 ? (double)moved : (double)now)) * 8 / cap;
        if (cl->capacity_bps > c->capacity_bps)
            c->capacity_bps = cl->capacity_bps;
        if (!c->has_util || u_now > c->peak_util_now) {
            c->peak_util_now = u_now;
            c->peak_window_now_us = cl->window_us;
        }
        if (!c->has_util || u_moved > c->peak_util_moved) {
            c->peak_util_moved = u_moved;
            c->peak_window_moved_us = cl->window_us;
        }
        c->has_util = true;
    }
    for (size_t k = 0; k < x->p->n_circuits; k++) {
        struct hm_dep_circuit *c = &x->p->circuits[k];
        c->exceeds_now = c->has_util && c->peak_util_now > cfg->saturation;
        c->exceeds_moved = c->has_util && c->peak_util_moved > cfg->saturation;
    }
}

int hm_deps_plan(const struct cfg *cfg, const struct hm_dep_row *rows, size_t n_rows,
                 const struct hm_dep_cell *cells, size_t n_cells, int move_to,
                 struct hm_dep_plan *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->move_to = move_to;
    struct plan_ctx x = {.cfg = cfg, .p = out};
    x.path = malloc((cfg->n_sites + 2) * sizeof *x.path);
    if (!x.path)
        goto oom;
    for (size_t i = 0; i < n_rows; i++) {
        const struct hm_dep_row *r = &rows[i];
        out->total_bytes += r->bytes_out + r->bytes_in;
        if (add_endpoint(&x, r, cfg->window_seconds))
            goto oom;
        int a = lay(&x, r->window_us, r->local_site, r->remote_site, r->bytes_out, false);
        int b = lay(&x, r->window_us, r->remote_site, r->local_site, r->bytes_in, false);
        if (a < 0 || b < 0)
            goto oom;
        out->unrouted_bytes += (a ? r->bytes_out : 0) + (b ? r->bytes_in : 0);
        if (move_to >= 0 &&
            (lay(&x, r->window_us, move_to, r->remote_site, r->bytes_out, true) < 0 ||
             lay(&x, r->window_us, r->remote_site, move_to, r->bytes_in, true) < 0))
            goto oom;
    }
    for (size_t i = 0; i < out->n_endpoints; i++) {
        struct hm_dep_endpoint *e = &out->endpoints[i];
        e->share = out->total_bytes ? (double)(e->bytes_out + e->bytes_in) / out->total_bytes : 0;
    }
    hw_coalesce(&x);
    peaks(&x, cells, n_cells);
    if (out->n_endpoints)
        qsort(out->endpoints, out->n_endpoints, sizeof *out->endpoints, cmp_endpoint);
    if (out->n_circuits)
        qsort(out->circuits, out->n_circuits, sizeof *out->circuits, cmp_circuit);
    free(x.path);
    huge_free(x.hw);
    return 0;
oom:
    free(x.path);
    huge_free(x.hw);
    hm_deps_plan_free(out);
    snprintf(err, errlen, "deps: out of memory");
    return -1;
}

void hm_deps_plan_free(struct hm_dep_plan *p)
{
    huge_free(p->endpoints);
    huge_free(p->circuits);
    memset(p, 0, sizeof *p);
}

uint64_t hm_deps_site_bytes(const struct hm_dep_plan *p, int local_site, int remote_site)
{
    uint64_t bytes = 0;
    for (size_t i = 0; i < p->n_endpoints; i++)
        if (p->endpoints[i].local_site == local_site &&
            (remote_site < 0 || p->endpoints[i].remote_site == remote_site))
            bytes += p->endpoints[i].bytes_out + p->endpoints[i].bytes_in;
    return bytes;
}
