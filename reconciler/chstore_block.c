/* The outbox block of one report (see chstore_block.h). */
#include "chstore_block.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "compress.h"

int chblock_build(const char *copy, size_t len, int64_t ws_us, struct chblock *out)
{
    memset(out, 0, sizeof *out);
    char epoch[24];
    int el = snprintf(epoch, sizeof epoch, "%" PRId64, ws_us / 1000000);
    /* the epoch text is never longer than the RFC 3339 text it replaces (19+ characters) */
    char *raw = malloc(len + 1);
    if (!raw)
        return -1;
    size_t n = 0;
    for (const char *p = copy, *end = copy + len; p < end;) {
        const char *tab = memchr(p, '\t', (size_t)(end - p));
        const char *nl = tab ? memchr(tab, '\n', (size_t)(end - tab)) : NULL;
        if (!tab || !nl || (size_t)(tab - p) < (size_t)el) {
            free(raw);
            return -1;
        }
        memcpy(raw + n, epoch, (size_t)el);
        n += (size_t)el;
        memcpy(raw + n, tab, (size_t)(nl + 1 - tab));
        n += (size_t)(nl + 1 - tab);
        p = nl + 1;
    }
    out->raw_len = n;
    char *z = NULL;
    size_t zl = 0;
    if (n && wl_compress(WL_COMPRESS_ZSTD, raw, n, &z, &zl) == 0 && zl < n) {
        free(raw);
        out->data = z;
        out->len = zl;
        out->coding = "zstd";
        return 0;
    }
    free(z);
    out->data = raw;
    out->len = n;
    out->coding = "identity";
    return 0;
}

void chblock_free(struct chblock *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

int chblock_decode(const char *coding, const char *data, size_t len, size_t raw_len, char *dst)
{
    if (strcmp(coding, "identity") == 0) {
        if (len != raw_len)
            return -1;
        memcpy(dst, data, len);
        return 0;
    }
    if (strcmp(coding, "zstd") != 0)
        return -1;
    size_t n = ZSTD_decompress(dst, raw_len, data, len);
    return ZSTD_isError(n) || n != raw_len ? -1 : 0;
}
