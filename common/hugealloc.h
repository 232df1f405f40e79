/* Large arrays on transparent huge pages, kept for reuse (hugealloc.c). */
#ifndef WL_HUGEALLOC_H
#define WL_HUGEALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* size bytes, uninitialised (a reused block holds what its last user left); from
 * HUGEALLOC_ABOVE bytes on aligned to a huge page and advised MADV_HUGEPAGE (one fault per 2 MiB
 * instead of per 4 KiB), and taken from the blocks huge_free kept when one fits. NULL: out of
 * memory. Give it back with huge_free (free() is wrong for a block of HUGEALLOC_ABOVE or more),
 * never with realloc: huge_realloc. */
#define HUGEALLOC_ABOVE ((size_t)8 << 20)
void *huge_alloc(size_t size);
/* Gives back a block of huge_alloc (kept mapped for the next one it fits, within the cache's
 * bounds) or any malloc'd pointer (freed); NULL: nothing. */
void huge_free(void *p);
/* A block of size bytes holding the first min(old_size, size) bytes of p (a huge_alloc block or
 * NULL), p given back; NULL when out of memory (p untouched). */
void *huge_realloc(void *p, size_t old_size, size_t size);
/* Bytes the cache holds mapped and unused. */
size_t huge_cached_bytes(void);

#endif
