/* The hash index, hashing and growable arrays (hindex.h). */
#include "hindex.h"

#include "hugealloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int hix_init(struct hix *ix, size_t expect)
{
    size_t cap = 64;
    while (cap < expect * 2)
        cap <<= 1;
    /* written once at once, not calloc'd: a calloc'd table's page is faulted in twice, on the
     * first look-up (the shared zero page) and again on the first insert */
    ix->slots = huge_alloc_filled(cap * sizeof *ix->slots);
    ix->cap = cap;
    ix->n = 0;
    if (!ix->slots)
        return -1;
    memset(ix->slots, 0, cap * sizeof *ix->slots);
    return 0;
}

void hix_free(struct hix *ix)
{
    huge_free(ix->slots);
    ix->slots = NULL;
}

static int hix_double(struct hix *ix)
{
    size_t cap = ix->cap * 2;
    struct hix_slot *s = huge_alloc_filled(cap * sizeof *s);
    if (!s)
        return -1;
    memset(s, 0, cap * sizeof *s);
    for (size_t i = 0; i < ix->cap; i++) {
        if (!ix->slots[i].idx1)
            continue;
        size_t j = ix->slots[i].hash & (cap - 1);
        while (s[j].idx1)
            j = (j + 1) & (cap - 1);
        s[j] = ix->slots[i];
    }
    huge_free(ix->slots);
    ix->slots = s;
    ix->cap = cap;
    return 0;
}

struct hix_slot *hix_find(struct hix *ix, uint64_t hash,
                          int (*eq)(const void *ctx, size_t idx, const void *key), const void *ctx,
                          const void *key)
{
    size_t j = hash & (ix->cap - 1);
    for (;;) {
        struct hix_slot *s = &ix->slots[j];
        if (!s->idx1 || (s->hash == hash && eq(ctx, s->idx1 - 1, key)))
            return s;
        j = (j + 1) & (ix->cap - 1);
    }
}

int hix_put(struct hix *ix, struct hix_slot *s, uint64_t hash, size_t idx)
{
    s->hash = hash;
    s->idx1 = idx + 1;
    ix->n++;
    if (ix->n * 2 > ix->cap)
        return hix_double(ix);
    return 0;
}

uint64_t hix_mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* Eight bytes at a time (a multiply and a shift per word: hashing the reconciliation's strings
 * and keys byte by byte, FNV-1a, was a tenth of its CPU); the tail zero-padded, the length mixed
 * in so "a" and "a\0" differ. In-memory only: no hash is ever stored. */
uint64_t hix_hash_bytes(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t f = 0xcbf29ce484222325ULL ^ n;
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        f = (f ^ w) * 0x9fb21c651e98df25ULL;
        f ^= f >> 29;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, b, n);
        f = (f ^ w) * 0x9fb21c651e98df25ULL;
        f ^= f >> 29;
    }
    return hix_mix(h, f);
}

uint64_t hix_hash_str(uint64_t h, const char *s)
{
    return hix_hash_bytes(h, s, strlen(s));
}

int hix_grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *p = huge_realloc(*items, *cap * size, c * size); /* realloc while small */
    if (!p)
        return -1;
    *items = p;
    *cap = c;
    return 0;
}
