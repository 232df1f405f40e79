/* Content-Encoding decoding for the tests' own HTTP receivers (tests/harness/th_decode.h). */
#include "th_decode.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>

#define TH_DECODE_MAX (256u << 20)

static char *gunzip(const char *in, size_t len, size_t *out_len)
{
    z_stream zs = {0};
    if (inflateInit2(&zs, 15 + 16) != Z_OK)
        return NULL;
    size_t cap = len * 4 + 1024, n = 0;
    char *out = malloc(cap + 1);
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)len;
    int r = Z_OK;
    while (out && r == Z_OK) {
        if (n == cap) {
            char *o2 = cap < TH_DECODE_MAX ? realloc(out, cap * 2 + 1) : NULL;
            if (!o2)
                break;
            out = o2;
            cap *= 2;
        }
        zs.next_out = (Bytef *)out + n;
        zs.avail_out = (uInt)(cap - n);
        r = inflate(&zs, Z_NO_FLUSH);
        n = zs.total_out;
    }
    inflateEnd(&zs);
    if (r != Z_STREAM_END) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

char *th_decode_body(const char *enc, const char *in, size_t len, size_t *out_len)
{
    if (!enc || !strcasecmp(enc, "identity")) {
        char *c = malloc(len + 1);
        memcpy(c, in, len);
        c[len] = '\0';
        *out_len = len;
        return c;
    }
    if (!strcasecmp(enc, "gzip"))
        return gunzip(in, len, out_len);
    if (strcasecmp(enc, "zstd"))
        return NULL;
    unsigned long long sz = ZSTD_getFrameContentSize(in, len);
    if (sz == ZSTD_CONTENTSIZE_ERROR || sz == ZSTD_CONTENTSIZE_UNKNOWN || sz > TH_DECODE_MAX)
        return NULL;
    char *out = malloc(sz + 1);
    size_t n = ZSTD_decompress(out, sz, in, len);
    if (ZSTD_isError(n) || n != sz) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}
