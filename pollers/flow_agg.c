/* Per-window flow aggregation (see flow_agg.h): an open-addressing hash table of cells. */
#include "flow_agg.h"

#include <stdlib.h>
#include <string.h>

#include "timeutil.h"

struct flow_agg {
    int window_seconds;
    size_t cap, n, max;      /* cap grows (doubling) while n > cap / 2, up to 2 * max */
    struct flow_cell *cells; /* samples == 0 marks an empty slot */
    int64_t oldest_us;       /* earliest window start held (INT64_MAX when empty) */
    uint64_t dropped;
};

struct flow_agg *flow_agg_new(int window_seconds, size_t max_cells)
{
    struct flow_agg *a = calloc(1, sizeof(*a));
    if (!a)
        return NULL;
    a->window_seconds = window_seconds > 0 ? window_seconds : 60;
    a->max = max_cells ? max_cells : 1000000;
    a->cap = 1024;
    a->oldest_us = INT64_MAX;
    a->cells = calloc(a->cap, sizeof(*a->cells));
    if (!a->cells) {
        free(a);
        return NULL;
    }
    return a;
}

void flow_agg_free(struct flow_agg *a)
{
    if (!a)
        return;
    free(a->cells);
    free(a);
}

size_t flow_agg_cells(const struct flow_agg *a)
{
    return a->n;
}

uint64_t flow_agg_dropped(const struct flow_agg *a)
{
    return a->dropped;
}

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL; /* FNV-1a */
    return h;
}

static uint64_t hash_of(const struct flow_cell *k)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = mix(h, &k->window_start_us, sizeof(k->window_start_us));
    h = mix(h, &k->device, sizeof(k->device));
    h = mix(h, k->src, 16);
    h = mix(h, k->dst, 16);
    h = mix(h, &k->proto, 1);
    h = mix(h, &k->dport, 2);
    return h ^ (h >> 29);
}

static bool same_key(const struct flow_cell *a, const struct flow_cell *b)
{
    return a->window_start_us == b->window_start_us && a->device == b->device &&
           a->family == b->family && a->proto == b->proto && a->dport == b->dport &&
           memcmp(a->src, b->src, 16) == 0 && memcmp(a->dst, b->dst, 16) == 0;
}

/* Re-inserts every cell into a table of new_cap slots. 0 or -1 (out of memory: unchanged). */
static int rehash(struct flow_agg *a, size_t new_cap)
{
    struct flow_cell *nc = calloc(new_cap, sizeof(*nc));
    if (!nc)
        return -1;
    for (size_t i = 0; i < a->cap; i++) {
        if (!a->cells[i].samples)
            continue;
        size_t s = (size_t)hash_of(&a->cells[i]) & (new_cap - 1);
        while (nc[s].samples)
            s = (s + 1) & (new_cap - 1);
        nc[s] = a->cells[i];
    }
    free(a->cells);
    a->cells = nc;
    a->cap = new_cap;
    return 0;
}

int flow_agg_add(struct flow_agg *a, uint32_t device, const struct flow_rec *r, int64_t at_us)
{
    struct flow_cell k;
    memset(&k, 0, sizeof(k));
    int64_t t = r->end_ms > 0 ? r->end_ms * 1000 : at_us;
    k.window_start_us = tm_window_start(t, a->window_seconds);
    k.device = device;
    k.family = r->family;
    memcpy(k.src, r->src, 16);
    memcpy(k.dst, r->dst, 16);
    k.proto = r->proto;
    k.dport = (r->proto == 6 || r->proto == 17 || r->proto == 132) ? r->dport : 0;
    if (a->n + 1 > a->cap / 2 && a->n < a->max)
        (void)rehash(a, a->cap * 2); /* out of memory: the table fills up and counts drops */
    size_t i = (size_t)hash_of(&k) & (a->cap - 1);
    while (a->cells[i].samples && !same_key(&a->cells[i], &k))
        i = (i + 1) & (a->cap - 1);
    struct flow_cell *c = &a->cells[i];
    if (!c->samples) {
        if (a->n >= a->max || a->n + 1 > a->cap - a->cap / 4) {
            a->dropped++;
            return -1;
        }
        *c = k;
        c->rate_min = r->rate;
        c->in_if = r->in_if;
        c->out_if = r->out_if;
        a->n++;
        if (k.window_start_us < a->oldest_us)
            a->oldest_us = k.window_start_us;
    }
    double w = r->rate ? r->rate : 1;
    c->samples += r->packets ? r->packets : 1;
    c->sampled_bytes += r->bytes;
    /* saturating: a bogus record must not wrap the estimate around */
    unsigned __int128 est = (unsigned __int128)r->rate * r->bytes + c->estimated_bytes;
    c->estimated_bytes = est > UINT64_MAX ? UINT64_MAX : (uint64_t)est;
    c->variance += w * (w - 1) * r->sq_bytes;
    if (r->rate < c->rate_min)
        c->rate_min = r->rate;
    if (r->rate > c->rate_max)
        c->rate_max = r->rate;
    return 0;
}

static int by_window(const void *x, const void *y)
{
    const struct flow_cell *a = x, *b = y;
    return (a->window_start_us > b->window_start_us) - (a->window_start_us < b->window_start_us);
}

int flow_agg_take(struct flow_agg *a, int64_t before_us, struct flow_cell **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (before_us <= a->oldest_us)
        return 0; /* nothing that old: no scan (called every second) */
    size_t k = 0;
    for (size_t i = 0; i < a->cap; i++)
        if (a->cells[i].samples && a->cells[i].window_start_us < before_us)
            k++;
    if (k == 0)
        return 0;
    struct flow_cell *o = malloc(k * sizeof(*o));
    if (!o)
        return -1;
    /* copy the survivors out and re-insert them: removal from linear probing needs a rehash */
    struct flow_cell *keep = NULL;
    size_t n_keep = a->n - k, j = 0, m = 0;
    if (n_keep) {
        keep = malloc(n_keep * sizeof(*keep));
        if (!keep) {
            free(o);
            return -1;
        }
    }
    for (size_t i = 0; i < a->cap; i++) {
        if (!a->cells[i].samples)
            continue;
        if (a->cells[i].window_start_us < before_us)
            o[j++] = a->cells[i];
        else
            keep[m++] = a->cells[i];
    }
    memset(a->cells, 0, a->cap * sizeof(*a->cells));
    a->n = 0;
    a->oldest_us = INT64_MAX;
    for (size_t i = 0; i < m; i++) {
        size_t s = (size_t)hash_of(&keep[i]) & (a->cap - 1);
        while (a->cells[s].samples)
            s = (s + 1) & (a->cap - 1);
        a->cells[s] = keep[i];
        a->n++;
        if (keep[i].window_start_us < a->oldest_us)
            a->oldest_us = keep[i].window_start_us;
    }
    free(keep);
    qsort(o, k, sizeof(*o), by_window);
    *out = o;
    *n = k;
    return 0;
}
