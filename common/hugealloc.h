/* Large arrays on transparent huge pages (hugealloc.c). */
#ifndef WL_HUGEALLOC_H
#define WL_HUGEALLOC_H

#include <stddef.h>

/* size bytes, uninitialised, freed with free(); from HUGEALLOC_ABOVE bytes on aligned to a huge
 * page and advised MADV_HUGEPAGE (one fault per 2 MiB instead of per 4 KiB). NULL: out of
 * memory. */
#define HUGEALLOC_ABOVE ((size_t)8 << 20)
void *huge_alloc(size_t size);

#endif
