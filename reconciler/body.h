/* Request bodies as clients send them: `Content-Encoding` gzip, deflate (zlib or raw) and zstd
 * decoded by streaming, with the decoded size bounded, so a small compressed body cannot grow
 * past the endpoint's limit (decoding stops at the first byte over it). */
#ifndef WL_BODY_H
#define WL_BODY_H

#include <stddef.h>

enum body_coding { BODY_IDENTITY, BODY_GZIP, BODY_DEFLATE, BODY_ZSTD };

struct body_error {
    int status; /* 400 (corrupt stream), 413 (decoded size over the bound), 415, 500 */
    char msg[200];
};

/* The coding named by a Content-Encoding header (NULL, "", "identity": BODY_IDENTITY; "gzip",
 * "x-gzip", "deflate", "zstd", case-insensitive, with "identity" allowed around them). Returns 0,
 * or -1 with e->status 415 and a message naming the coding that is not supported. */
int body_coding_of(const char *header, enum body_coding *coding, struct body_error *e)
    __attribute__((warn_unused_result));

/* Name of a coding for logs and metrics ("identity", "gzip", …). */
const char *body_coding_name(enum body_coding coding);

/* Decodes in[0..in_len) into a malloc'd, NUL-terminated *out of *out_len bytes, at most max_out.
 * Returns 0, or -1 with *e filled and *out NULL: 413 as soon as the decoded data would pass
 * max_out, 400 for a corrupt or truncated stream or data after its end. */
int body_decode(enum body_coding coding, const char *in, size_t in_len, size_t max_out, char **out,
                size_t *out_len, struct body_error *e) __attribute__((warn_unused_result));

#endif
