/* Growable byte buffers (see growbuf.h). */
#include "growbuf.h"

#include <stdint.h>
#include <stdlib.h>

void *gb_grow(void *p, size_t *cap, size_t need, size_t first)
{
    if (need <= *cap)
        return p;
    size_t c = *cap ? *cap : (first ? first : 1);
    while (c < need) {
        if (c > SIZE_MAX / 2) {
            c = need;
            break;
        }
        c *= 2;
    }
    void *q = realloc(p, c);
    if (q)
        *cap = c;
    return q;
}

void *gb_fresh(void *p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return p;
    free(p);
    p = malloc(need);
    *cap = p ? need : 0;
    return p;
}
