/* Request-body compression for our own clients (common/deliver.c): zstd (default, level 3) or
 * gzip, named as the Content-Encoding token the reconciler decodes. */
#ifndef WL_COMPRESS_H
#define WL_COMPRESS_H

#include <stddef.h>

enum wl_compress { WL_COMPRESS_ZSTD, WL_COMPRESS_GZIP, WL_COMPRESS_NONE };

/* "zstd", "gzip", "none" -> *out; 0 or -1 for anything else. */
int wl_compress_parse(const char *s, enum wl_compress *out);
/* The Content-Encoding token ("zstd", "gzip"), NULL for none. */
const char *wl_compress_name(enum wl_compress c);
/* Compresses in[0..len) into a malloc'd buffer (*out, *out_len). Returns 0, or -1 (out of
 * memory or a library error; the caller sends the body as is). */
int wl_compress(enum wl_compress c, const char *in, size_t len, char **out, size_t *out_len);

#endif
