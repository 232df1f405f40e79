/* Large arrays on transparent huge pages, kept for reuse (hugealloc.c): the reconciler's per-window
 * arrays (the load's flows, recon_run's connections, indexes and rows). */
#ifndef WL_HUGEALLOC_H
#define WL_HUGEALLOC_H

#include <stdbool.h>
#include <stddef.h>

/* size bytes, uninitialised (a reused block holds what its last user left); from
 * HUGEALLOC_ABOVE bytes on aligned to a huge page and advised MADV_HUGEPAGE (one fault per 2 MiB
 * instead of per 4 KiB), and taken from the blocks huge_free kept when one fits. NULL: out of
 * memory. Give it back with huge_free (free() is wrong for any of its blocks: the cache would
 * keep counting it live), never with realloc: huge_realloc. */
#define HUGEALLOC_ABOVE ((size_t)8 << 20)
void *huge_alloc(size_t size);
/* huge_alloc for a block that will be written whole soon: the pages of a block not taken from
 * the cache are mapped at once (MADV_POPULATE_WRITE: one system call instead of a fault per page),
 * from 1 MiB on; below HUGEALLOC_ABOVE a malloc'd block. huge_free it. */
void *huge_alloc_filled(size_t size);
/* Gives back a block of huge_alloc (kept mapped for the next one it fits, within the cache's
 * bounds) or any malloc'd pointer (freed); NULL: nothing. */
void huge_free(void *p);
/* A block of size bytes holding the first min(old_size, size) bytes of p (a block of huge_alloc,
 * huge_realloc or malloc, or NULL), p given back; NULL when out of memory (p untouched). While
 * p is not one of the cache's blocks and size is under HUGEALLOC_ABOVE, realloc(p, size). */
void *huge_realloc(void *p, size_t old_size, size_t size);
/* Bytes the cache holds mapped and unused. */
size_t huge_cached_bytes(void);
/* Blocks handed out and not given back (a block freed with free() stays counted: the tests'
 * check that every path gives its blocks back through huge_free). */
size_t huge_live_blocks(void);
/* Tests: the size from which blocks are huge (HUGEALLOC_ABOVE when 0), so that small windows take
 * the same path as a fleet's; the previous value. */
size_t huge_set_above(size_t bytes);

#endif
