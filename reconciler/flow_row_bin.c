/* The flow record row as binary COPY (see flow_row_bin.h). */
#include "flow_row_bin.h"

#include <arpa/inet.h>
#include <string.h>

#include "copybin.h"

/* bigint columns are 8 bytes, integer ones 4 (flow_cols[].pg_type, checked against the database
 * by test_recon_db) */
static int int_width(int c)
{
    return flow_cols[c].pg_type[0] == 'b' ? 8 : 4;
}

size_t flow_row_bin_max(const struct flow_row *r)
{
    size_t n = 2;
    for (int c = 0; c < FR_NCOLS; c++) {
        n += 4;
        if (!r->v[c].set)
            continue;
        switch (flow_cols[c].type) {
        case FRT_TEXT:
            n += r->v[c].n;
            break;
        case FRT_INET:
            n += 4 + 16;
            break;
        default:
            n += 8;
        }
    }
    return n;
}

/* inet's send format: family, prefix bits, is_cidr, address length, address */
static unsigned char *put_inet(unsigned char *w, const char *text)
{
    unsigned char a[16];
    bool v6 = strchr(text, ':') != NULL;
    if (inet_pton(v6 ? AF_INET6 : AF_INET, text, a) != 1)
        return NULL;
    int nb = v6 ? 16 : 4;
    w = copybin_be(w, (uint64_t)(4 + nb), 4);
    *w++ = v6 ? COPYBIN_AF_INET6 : COPYBIN_AF_INET;
    *w++ = (unsigned char)(nb * 8);
    *w++ = 0;
    *w++ = (unsigned char)nb;
    memcpy(w, a, (size_t)nb);
    return w + nb;
}

size_t flow_row_copy_bin(char *out, const struct flow_row *r)
{
    unsigned char *w = copybin_be((unsigned char *)out, FR_NCOLS, 2);
    for (int c = 0; c < FR_NCOLS; c++) {
        const struct flow_val *v = &r->v[c];
        if (!v->set) {
            w = copybin_be(w, UINT32_MAX, 4); /* -1: NULL */
            continue;
        }
        switch (flow_cols[c].type) {
        case FRT_INT: {
            int n = int_width(c);
            w = copybin_be(copybin_be(w, (uint64_t)n, 4), v->u, n);
            break;
        }
        case FRT_TIME:
            w = copybin_be(copybin_be(w, 8, 4), (uint64_t)((int64_t)v->u - COPYBIN_PG_EPOCH_US), 8);
            break;
        case FRT_TEXT:
            w = copybin_be(w, v->n, 4);
            memcpy(w, v->s, v->n);
            w += v->n;
            break;
        case FRT_INET:
            if (!(w = put_inet(w, v->s)))
                return 0;
            break;
        }
    }
    return (size_t)(w - (unsigned char *)out);
}
