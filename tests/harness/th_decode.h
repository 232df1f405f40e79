/* Test receivers (wla_receiver, wl-http-sink, the poller's spool test) decode request bodies the
 * way a reconciler would: Content-Encoding zstd or gzip, with libzstd/zlib directly (not through
 * the code under test). */
#ifndef WL_TH_DECODE_H
#define WL_TH_DECODE_H

#include <stddef.h>

/* enc NULL or "identity": a copy. Returns a malloc'd NUL-terminated body (*out_len set) or NULL
 * on an unknown encoding or corrupt data. */
char *th_decode_body(const char *enc, const char *in, size_t len, size_t *out_len);

#endif
