/* Accumulates the dependency rows of one window (recon_deps.h). */
#include "recon_deps.h"

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

static int eq_dep(const void *ctx, size_t idx, const void *key)
{
    const struct recon_dep *x = &((const struct recon_deps_acc *)ctx)->rows[idx], *y = key;
    return x->local_site == y->local_site && x->remote_site == y->remote_site &&
           x->kind == y->kind && strcmp(x->endpoint, y->endpoint) == 0 &&
           strcmp(x->workflow, y->workflow) == 0 && strcmp(x->user, y->user) == 0 &&
           strcmp(x->program, y->program) == 0;
}

int recon_deps_add(struct recon_deps_acc *a, int local_site, int remote_site, const char *workflow,
                   const char *user, const char *program, enum recon_dep_kind kind,
                   const char *endpoint, uint64_t bytes_out, uint64_t bytes_in,
                   uint64_t connections)
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
    uint64_t h = hix_mix(hix_mix(0, (uint64_t)(uint32_t)local_site << 32 | (uint32_t)remote_site),
                         (uint64_t)kind);
    h = hix_hash_str(
        hix_hash_str(hix_hash_str(hix_hash_str(h, key.endpoint), key.workflow), key.user),
        key.program);
    struct hix_slot *s = hix_find(&a->ix, h, eq_dep, a, &key);
    if (s->idx1) {
        struct recon_dep *d = &a->rows[s->idx1 - 1];
        d->bytes_out += bytes_out;
        d->bytes_in += bytes_in;
        d->connections += connections;
        return 0;
    }
    if (hix_grow((void **)&a->rows, &a->cap, a->n + 1, sizeof *a->rows))
        return -1;
    key.endpoint = strdup(key.endpoint);
    if (!key.endpoint)
        return -1;
    key.bytes_out = bytes_out;
    key.bytes_in = bytes_in;
    key.connections = connections;
    a->rows[a->n] = key;
    if (hix_put(&a->ix, s, h, a->n)) {
        free(key.endpoint);
        return -1;
    }
    a->n++;
    return 0;
}

static int cmp_dep(const void *pa, const void *pb)
{
    const struct recon_dep *x = pa, *y = pb;
    if (x->local_site != y->local_site)
        return x->local_site < y->local_site ? -1 : 1;
    int c = strcmp(x->workflow, y->workflow);
    if (!c)
        c = strcmp(x->user, y->user);
    if (!c)
        c = strcmp(x->program, y->program);
    if (c)
        return c;
    uint64_t tx = x->bytes_out + x->bytes_in, ty = y->bytes_out + y->bytes_in;
    if (tx != ty)
        return tx > ty ? -1 : 1;
    if (x->remote_site != y->remote_site)
        return x->remote_site < y->remote_site ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return strcmp(x->endpoint, y->endpoint);
}

void recon_deps_take(struct recon_deps_acc *a, struct recon_dep **rows, size_t *n)
{
    if (a->n)
        qsort(a->rows, a->n, sizeof *a->rows, cmp_dep);
    *rows = a->rows;
    *n = a->n;
    a->rows = NULL;
    a->n = a->cap = 0;
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
    a->rows = NULL;
    a->n = a->cap = 0;
    hix_free(&a->ix);
}
