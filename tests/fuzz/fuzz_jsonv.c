/* libFuzzer target: the strict JSON reader (common/jsonv.c), one value and a stream, on a copy
 * (jv_parse) and in place (jv_parse_inplace: the same outcome). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int many = 0; many < 2; many++) {
        struct jv *first = NULL;
        size_t n = 0;
        struct jv_error e;
        struct jv_doc *d = jv_parse((const char *)data, size, many, &first, &n, &e);
        if (d) {
            /* every string the reader hands out is NUL-terminated at its length */
            for (const struct jv *v = first; v; v = v->next)
                if (v->type == JV_STRING && v->s[v->n] != 0)
                    abort();
            jv_doc_free(d);
        } else if (e.offset > size) {
            abort(); /* an error offset outside the input */
        }
        /* in place: the same outcome, error and offset */
        char *mut = malloc(size + 1);
        if (!mut)
            abort();
        memcpy(mut, data, size);
        struct jv *first2 = NULL;
        size_t n2 = 0;
        struct jv_error e2;
        struct jv_doc *d2 = jv_parse_inplace(mut, size, many, &first2, &n2, &e2);
        if (!d != !d2 || n2 != n ||
            (!d &&
             (e2.offset != e.offset || strcmp(e2.msg, e.msg) != 0 || strcmp(e2.path, e.path) != 0)))
            abort();
        jv_doc_free(d2);
        free(mut);
    }
    return 0;
}
