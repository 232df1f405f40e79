/* The tree's one way to make room in a malloc'd byte buffer: grown by doubling with what it holds
 * kept (appends), or replaced whole without a copy (scratch rewritten from the start). Callers keep
 * their own `need <= cap` test inline where a buffer is checked per value. */
#ifndef WL_GROWBUF_H
#define WL_GROWBUF_H

#include <stddef.h>

/* p (capacity *cap bytes) with room for at least need bytes, its contents kept: the capacity is
 * doubled, from first when it was 0, until need fits. Returns p itself when it is large enough,
 * or the moved buffer. NULL when out of memory: p is still the caller's and *cap unchanged. */
void *gb_grow(void *p, size_t *cap, size_t need, size_t first) __attribute__((warn_unused_result));
/* p replaced by a buffer of exactly need bytes when smaller (free, then malloc: nothing copied);
 * p itself when large enough. NULL when out of memory: p has been freed and *cap is 0. */
void *gb_fresh(void *p, size_t *cap, size_t need) __attribute__((warn_unused_result));

#endif
