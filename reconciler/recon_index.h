/* Small building blocks of the pure reconciliation: an open-addressing index from a 64-bit hash to
 * a position in the caller's array (the caller owns the items and says when two are equal),
 * hashing of bytes and strings, and growable arrays. Used by recon.c and recon_deps.c. */
#ifndef WL_RECON_INDEX_H
#define WL_RECON_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct rix_slot {
    uint64_t hash;
    size_t idx1; /* index + 1; 0 = empty */
};

struct rix {
    struct rix_slot *slots;
    size_t cap; /* power of two */
    size_t n;
};

/* Room for about expect keys before the first growth. 0 or -1 (out of memory). */
int rix_init(struct rix *ix, size_t expect) __attribute__((warn_unused_result));
void rix_free(struct rix *ix);
/* The slot holding a key with this hash for which eq() holds, or the empty slot where it goes. */
struct rix_slot *rix_find(struct rix *ix, uint64_t hash,
                          int (*eq)(const void *ctx, size_t idx, const void *key), const void *ctx,
                          const void *key);
/* Records idx in the empty slot s found by rix_find; may grow (s is then stale). 0 or -1. */
int rix_put(struct rix *ix, struct rix_slot *s, uint64_t hash, size_t idx)
    __attribute__((warn_unused_result));

uint64_t rix_mix(uint64_t h, uint64_t v);
uint64_t rix_hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t rix_hash_str(uint64_t h, const char *s);

/* Makes *items hold at least need elements of size bytes (doubling). 0 or -1. */
int rix_grow(void **items, size_t *cap, size_t need, size_t size)
    __attribute__((warn_unused_result));

#endif
