/* An open-addressing index from a 64-bit hash to a position in the caller's array (the caller
 * owns the items and says when two are equal), hashing of bytes and strings, and growable arrays:
 * the reconciliation's (recon.c, recon_deps.c) and the dependency planner's building blocks.
 * Memory: hugealloc.h (the index's slots and every array hix_grow grows are given back with
 * huge_free). */
#ifndef WL_HINDEX_H
#define WL_HINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hix_slot {
    uint64_t hash;
    size_t idx1; /* index + 1; 0 = empty */
};

struct hix {
    struct hix_slot *slots;
    size_t cap; /* power of two */
    size_t n;
};

/* Room for about expect keys before the first growth. 0 or -1 (out of memory). */
int hix_init(struct hix *ix, size_t expect) __attribute__((warn_unused_result));
void hix_free(struct hix *ix);
/* The slot holding a key with this hash for which eq() holds, or the empty slot where it goes. */
struct hix_slot *hix_find(struct hix *ix, uint64_t hash,
                          int (*eq)(const void *ctx, size_t idx, const void *key), const void *ctx,
                          const void *key);
/* Records idx in the empty slot s found by hix_find; may grow (s is then stale). 0 or -1. */
int hix_put(struct hix *ix, struct hix_slot *s, uint64_t hash, size_t idx)
    __attribute__((warn_unused_result));

/* Whether two strings are equal: one pointer, or the same bytes (compared here, not by a call to
 * strcmp: the keys are short, an owner's names, and most comparisons are equal). */
static inline bool hix_str_eq(const char *s, const char *t)
{
    if (s == t)
        return true;
    for (; *s == *t; s++, t++)
        if (!*s)
            return true;
    return false;
}

uint64_t hix_mix(uint64_t h, uint64_t v);
uint64_t hix_hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t hix_hash_str(uint64_t h, const char *s);

/* Makes *items hold at least need elements of size bytes (doubling) through huge_realloc
 * (hugealloc.h): a large array comes from the block cache, so give it back with huge_free, never
 * free(). 0 or -1. */
int hix_grow(void **items, size_t *cap, size_t need, size_t size)
    __attribute__((warn_unused_result));

#endif
