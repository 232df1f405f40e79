/* String -> index map (see cfg_names.h) on the project's hash index (hindex.h): the keys are
 * copied into an array the index points into. */
#include "cfg_names.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hindex.h"
#include "hugealloc.h"

struct ent {
    char *key;
    long idx;
};

struct cfg_names {
    struct hix ix;
    struct ent *e;
    size_t n, cap;
};

static int eq(const void *ctx, size_t i, const void *key)
{
    const struct cfg_names *m = ctx;
    return strcmp(m->e[i].key, key) == 0;
}

struct cfg_names *cfg_names_new(size_t expect)
{
    struct cfg_names *m = calloc(1, sizeof(*m));
    if (!m || hix_init(&m->ix, expect) < 0) {
        free(m);
        return NULL;
    }
    return m;
}

void cfg_names_free(struct cfg_names *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        free(m->e[i].key);
    huge_free(m->e);
    hix_free(&m->ix);
    free(m);
}

long cfg_names_add(struct cfg_names *m, const char *key, long idx)
{
    if (!m || !key)
        return -1;
    uint64_t h = hix_hash_str(0, key);
    struct hix_slot *s = hix_find(&m->ix, h, eq, m, key);
    if (s->idx1)
        return m->e[s->idx1 - 1].idx;
    if (hix_grow((void **)&m->e, &m->cap, m->n + 1, sizeof(*m->e)) < 0)
        return -1;
    char *k = strdup(key);
    if (!k)
        return -1;
    if (hix_put(&m->ix, s, h, m->n) < 0) {
        free(k);
        return -1;
    }
    m->e[m->n++] = (struct ent){k, idx};
    return -1;
}

long cfg_names_get(const struct cfg_names *m, const char *key)
{
    if (!m || !key)
        return -1;
    /* hix_find does not change the index; it takes it non-const for hix_put's sake */
    struct hix_slot *s = hix_find((struct hix *)&m->ix, hix_hash_str(0, key), eq, m, key);
    return s->idx1 ? m->e[s->idx1 - 1].idx : -1;
}

void cfg_names_set(struct cfg_names *m, const char *key, long idx)
{
    if (!m || !key)
        return;
    struct hix_slot *s = hix_find(&m->ix, hix_hash_str(0, key), eq, m, key);
    if (s->idx1)
        m->e[s->idx1 - 1].idx = idx;
    else
        cfg_names_add(m, key, idx);
}
