/* String -> index hash map (see cfg_names.h): open addressing, FNV-1a, grown at half full. */
#include "cfg_names.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct slot {
    char *key;
    long idx;
};

struct cfg_names {
    struct slot *s;
    size_t cap, n; /* cap a power of two */
};

static uint64_t hash(const char *k)
{
    uint64_t h = 1469598103934665603ull;
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h;
}

static struct slot *find(const struct cfg_names *m, const char *key)
{
    size_t i = (size_t)hash(key) & (m->cap - 1);
    while (m->s[i].key && strcmp(m->s[i].key, key) != 0)
        i = (i + 1) & (m->cap - 1);
    return &m->s[i];
}

static int grow(struct cfg_names *m)
{
    struct cfg_names g = {calloc(m->cap * 2, sizeof(struct slot)), m->cap * 2, m->n};
    if (!g.s)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->s[i].key)
            *find(&g, m->s[i].key) = m->s[i];
    free(m->s);
    *m = g;
    return 0;
}

struct cfg_names *cfg_names_new(size_t expect)
{
    struct cfg_names *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->cap = 16;
    while (m->cap < 2 * expect)
        m->cap *= 2;
    m->s = calloc(m->cap, sizeof(struct slot));
    if (!m->s) {
        free(m);
        return NULL;
    }
    return m;
}

void cfg_names_free(struct cfg_names *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->s[i].key);
    free(m->s);
    free(m);
}

long cfg_names_add(struct cfg_names *m, const char *key, long idx)
{
    if (!m || !key)
        return -1;
    struct slot *s = find(m, key);
    if (s->key)
        return s->idx;
    if (2 * (m->n + 1) > m->cap) {
        if (grow(m) < 0)
            return -1;
        s = find(m, key);
    }
    s->key = strdup(key);
    if (!s->key)
        return -1;
    s->idx = idx;
    m->n++;
    return -1;
}

long cfg_names_get(const struct cfg_names *m, const char *key)
{
    if (!m || !key)
        return -1;
    const struct slot *s = find(m, key);
    return s->key ? s->idx : -1;
}

void cfg_names_set(struct cfg_names *m, const char *key, long idx)
{
    if (!m || !key)
        return;
    struct slot *s = find(m, key);
    if (s->key)
        s->idx = idx;
    else
        cfg_names_add(m, key, idx);
}
