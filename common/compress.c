/* zstd (ZSTD_compress at level 3: ~the speed of gzip -1 with a better ratio on JSON) and gzip
 * (zlib deflate with a gzip wrapper, level 6) over one whole body. */
#include "compress.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#define WL_ZSTD_LEVEL 3

int wl_compress_parse(const char *s, enum wl_compress *out)
{
    if (!strcmp(s, "zstd"))
        *out = WL_COMPRESS_ZSTD;
    else if (!strcmp(s, "gzip"))
        *out = WL_COMPRESS_GZIP;
    else if (!strcmp(s, "none"))
        *out = WL_COMPRESS_NONE;
    else
        return -1;
    return 0;
}

const char *wl_compress_name(enum wl_compress c)
{
    return c == WL_COMPRESS_ZSTD ? "zstd" : c == WL_COMPRESS_GZIP ? "gzip" : NULL;
}

static int gzip_body(const char *in, size_t len, char **out, size_t *out_len)
{
    z_stream zs = {0};
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    size_t cap = deflateBound(&zs, (uLong)len) + 32;
    char *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&zs);
        return -1;
    }
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)len;
    zs.next_out = (Bytef *)buf;
    zs.avail_out = (uInt)cap;
    int r = deflate(&zs, Z_FINISH);
    size_t n = zs.total_out;
    deflateEnd(&zs);
    if (r != Z_STREAM_END) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = n;
    return 0;
}

int wl_compress(enum wl_compress c, const char *in, size_t len, char **out, size_t *out_len)
{
    if (c == WL_COMPRESS_GZIP)
        return len > 0xffffffffu ? -1 : gzip_body(in, len, out, out_len);
    if (c != WL_COMPRESS_ZSTD)
        return -1;
    size_t cap = ZSTD_compressBound(len);
    char *buf = malloc(cap ? cap : 1);
    if (!buf)
        return -1;
    size_t n = ZSTD_compress(buf, cap, in, len, WL_ZSTD_LEVEL);
    if (ZSTD_isError(n)) {
        free(buf);
        return -1;
    }
    *out = buf;
    *out_len = n;
    return 0;
}
