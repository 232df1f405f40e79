/* Accumulates the dependency rows of one window (recon_deps.h). */
#include "recon_deps.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *recon_dep_kind_name(enum recon_dep_kind k)
{
    switch (k) {
    case RECON_DEP_SERVICE:
        return "service";
    case RECON_DEP_NFS:
        return "nfs";
    case RECON_DEP_TRANSFER:
        return "transfer";
    case RECON_DEP_PEER:
    default:
        return "peer";
    }
}

int recon_deps_init(struct recon_deps_acc *a, size_t expect)
{
    memset(a, 0, sizeof *a);
    return hix_init(&a->ix, expect);
}

/* s and t equal as strings (the rows of one owner share its pointers). */
static bool same(const char *s, const char *t)
{
    return s == t || strcmp(s, t) == 0;
}

static int eq_dep(const void *ctx, size_t idx, const void *key)
{
    const struct recon_dep *x = &((const struct recon_deps_acc *)ctx)->rows[idx], *y = key;
    return x->local_site == y->local_site && x->remote_site == y->remote_site &&
           x->kind == y->kind && strcmp(x->endpoint, y->endpoint) == 0 &&
           same(x->workflow, y->workflow) && same(x->user, y->user) && same(x->program, y->program);
}

uint64_t recon_deps_owner_hash(const char *workflow, const char *user, const char *program)
{
    return hix_hash_str(hix_hash_str(hix_hash_str(0, workflow ? workflow : ""), user ? user : ""),
                        program ? program : "");
}

int recon_deps_add(struct recon_deps_acc *a, int local_site, int remote_site, const char *workflow,
                   const char *user, const char *program, enum recon_dep_kind kind,
                   const char *endpoint, uint64_t bytes_out, uint64_t bytes_in,
                   uint64_t connections)
{
    if (bytes_out == 0 && bytes_in == 0)
        return 0;
    return recon_deps_add_h(a, recon_deps_owner_hash(workflow, user, program), local_site,
                            remote_site, workflow, user, program, kind, endpoint, bytes_out,
                            bytes_in, connections);
}

int recon_deps_add_h(struct recon_deps_acc *a, uint64_t owner_hash, int local_site, int remote_site,
                     const char *workflow, const char *user, const char *program,
                     enum recon_dep_kind kind, const char *endpoint, uint64_t bytes_out,
                     uint64_t bytes_in, uint64_t connections)
{
    if (bytes_out == 0 && bytes_in == 0)
        return 0;
    struct recon_dep key = {.local_site = local_site,
                            .remote_site = remote_site,
                            .workflow = workflow ? workflow : "",
                            .user = user ? user : "",
                            .program = program ? program : "",
                            .kind = kind,
                            .endpoint = (char *)(endpoint ? endpoint : "")};
    uint64_t h =
        hix_mix(hix_mix(owner_hash, (uint64_t)(uint32_t)local_site << 32 | (uint32_t)remote_site),
                (uint64_t)kind);
    h = hix_hash_str(h, key.endpoint);
    struct hix_slot *s = hix_find(&a->ix, h, eq_dep, a, &key);
    if (s->idx1) {
        struct recon_dep *d = &a->rows[s->idx1 - 1];
        d->bytes_out += bytes_out;
        d->bytes_in += bytes_in;
        d->connections += connections;
        return 0;
    }
    if (hix_grow((void **)&a->rows, &a->cap, a->n + 1, sizeof *a->rows) ||
        hix_grow((void **)&a->owner_hash, &a->cap_hash, a->n + 1, sizeof *a->owner_hash))
        return -1;
    key.endpoint = strdup(key.endpoint);
    if (!key.endpoint)
        return -1;
    key.bytes_out = bytes_out;
    key.bytes_in = bytes_in;
    key.connections = connections;
    a->rows[a->n] = key;
    a->owner_hash[a->n] = owner_hash;
    if (hix_put(&a->ix, s, h, a->n)) {
        free(key.endpoint);
        return -1;
    }
    a->n++;
    return 0;
}

/* ---- the order: local site, owner (workflow, user, program), bytes descending, remote site,
 * kind, endpoint. The owners are ranked once (a few thousand strcmp sorts) and the rows sorted
 * on integers, the endpoint compared only between rows equal in all the rest. ---- */

struct dep_ord {
    int32_t local, remote;
    uint32_t rank, kind;
    uint64_t total;
    const struct recon_dep *row;
};

static int cmp_owner_str(const void *pa, const void *pb, void *ctx)
{
    const struct recon_dep *rows = ctx;
    const struct recon_dep *x = &rows[*(const uint32_t *)pa], *y = &rows[*(const uint32_t *)pb];
    int c = strcmp(x->workflow, y->workflow);
    if (!c)
        c = strcmp(x->user, y->user);
    if (!c)
        c = strcmp(x->program, y->program);
    return c;
}

static int cmp_dep_ord(const void *pa, const void *pb)
{
    const struct dep_ord *x = pa, *y = pb;
    if (x->local != y->local)
        return x->local < y->local ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    if (x->remote != y->remote)
        return x->remote < y->remote ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->row->endpoint, y->row->endpoint);
}

struct owner_tab {
    const struct recon_dep *rows;
    uint32_t *first; /* per distinct owner: its first row */
    size_t n;
};

static int eq_owner(const void *ctx, size_t idx, const void *key)
{
    const struct owner_tab *t = ctx;
    const struct recon_dep *x = &t->rows[t->first[idx]], *y = key;
    return same(x->workflow, y->workflow) && same(x->user, y->user) && same(x->program, y->program);
}

/* rank[i]: the place of row i's owner among the rows' distinct owners in string order. */
static int rank_owners(const struct recon_deps_acc *a, uint32_t *rank)
{
    struct owner_tab t = {.rows = a->rows};
    struct hix ix;
    int rc = -1;
    uint32_t *of = malloc((a->n + 1) * sizeof *of), *order = NULL, *place = NULL;
    t.first = malloc((a->n + 1) * sizeof *t.first);
    if (!of || !t.first || hix_init(&ix, 1024)) {
        free(of);
        free(t.first);
        return -1;
    }
    for (size_t i = 0; i < a->n; i++) {
        struct hix_slot *s = hix_find(&ix, a->owner_hash[i], eq_owner, &t, &a->rows[i]);
        if (s->idx1) {
            of[i] = (uint32_t)(s->idx1 - 1);
            continue;
        }
        t.first[t.n] = (uint32_t)i;
        of[i] = (uint32_t)t.n;
        if (hix_put(&ix, s, a->owner_hash[i], t.n++))
            goto cleanup;
    }
    order = malloc((t.n + 1) * sizeof *order);
    place = malloc((t.n + 1) * sizeof *place);
    if (!order || !place)
        goto cleanup;
    for (size_t k = 0; k < t.n; k++)
        order[k] = t.first[k];
    if (t.n)
        qsort_r(order, t.n, sizeof *order, cmp_owner_str, (void *)a->rows);
    for (size_t k = 0; k < t.n; k++)
        place[of[order[k]]] = (uint32_t)k;
    for (size_t i = 0; i < a->n; i++)
        rank[i] = place[of[i]];
    rc = 0;
cleanup:
    hix_free(&ix);
    free(of);
    free(t.first);
    free(order);
    free(place);
    return rc;
}

int recon_deps_take(struct recon_deps_acc *a, struct recon_dep **rows, size_t *n)
{
    uint32_t *rank = malloc((a->n + 1) * sizeof *rank);
    struct dep_ord *ord = malloc((a->n + 1) * sizeof *ord);
    struct recon_dep *sorted = malloc((a->n + 1) * sizeof *sorted);
    if (!rank || !ord || !sorted || rank_owners(a, rank)) {
        free(rank);
        free(ord);
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < a->n; i++) {
        const struct recon_dep *d = &a->rows[i];
        ord[i] = (struct dep_ord){.local = d->local_site,
                                  .remote = d->remote_site,
                                  .rank = rank[i],
                                  .kind = (uint32_t)d->kind,
                                  .total = d->bytes_out + d->bytes_in,
                                  .row = d};
    }
    if (a->n)
        qsort(ord, a->n, sizeof *ord, cmp_dep_ord);
    for (size_t i = 0; i < a->n; i++)
        sorted[i] = *ord[i].row;
    free(a->rows);
    free(rank);
    free(ord);
    *rows = sorted;
    *n = a->n;
    a->rows = NULL;
    a->n = a->cap = 0;
    return 0;
}

void recon_deps_free(struct recon_dep *rows, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(rows[i].endpoint);
    free(rows);
}

void recon_deps_acc_free(struct recon_deps_acc *a)
{
    recon_deps_free(a->rows, a->n);
    free(a->owner_hash);
    a->owner_hash = NULL;
    a->rows = NULL;
    a->n = a->cap = a->cap_hash = 0;
    hix_free(&a->ix);
}
