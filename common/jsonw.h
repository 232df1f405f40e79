/* The tree's one JSON writer, into libevent buffers: string literals (escaped, always valid
 * UTF-8: utf8.h's rule, bad bytes become U+FFFD), exact 64-bit integers (never through a double),
 * and a small builder that places the commas and colons. Every JSON producer uses it. */
#ifndef WL_JSONW_H
#define WL_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/buffer.h>

/* Appends s as a JSON string literal (quotes included); NULL becomes null. Bytes that are not
 * UTF-8 (a message cut inside a character) become U+FFFD, so the output is always valid JSON. */
void jw_str(struct evbuffer *out, const char *s);
/* The same for s[0..n) (a NUL inside is written as \u0000). */
void jw_strn(struct evbuffer *out, const char *s, size_t n);
/* Appends {"error": msg, "path": path} and a newline. */
void jw_error(struct evbuffer *out, const char *msg, const char *path);

/* A builder: jw_begin_object/array … jw_end, members with jw_key then one value. */
#define JW_MAX_DEPTH 32
struct jw {
    struct evbuffer *out;
    int depth;
    bool first[JW_MAX_DEPTH + 1]; /* nothing written yet at this level */
    char open[JW_MAX_DEPTH];      /* '{' or '[' opened at each level */
    bool after_key;
    bool failed; /* nesting too deep or unbalanced: the text is not to be used */
};
void jw_init(struct jw *w, struct evbuffer *out);
void jw_begin_object(struct jw *w);
void jw_begin_array(struct jw *w);
void jw_end(struct jw *w);
void jw_key(struct jw *w, const char *key);
void jw_string(struct jw *w, const char *s); /* NULL writes null */
void jw_u64(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
/* Shortest text that reads back as the same double; NaN and infinities become null. */
void jw_double(struct jw *w, double v);
/* Fixed-point with the given decimals ("0.123400" for 6); NaN and infinities become null. */
void jw_fixed(struct jw *w, double v, int decimals);
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
/* Already-formatted JSON text (a number as written, a nested document). */
void jw_raw(struct jw *w, const char *json, size_t n);
/* Members: key and value in one call. */
void jw_kv_str(struct jw *w, const char *key, const char *s);
void jw_kv_u64(struct jw *w, const char *key, uint64_t v);
void jw_kv_i64(struct jw *w, const char *key, int64_t v);
void jw_kv_double(struct jw *w, const char *key, double v);
void jw_kv_fixed(struct jw *w, const char *key, double v, int decimals);
/* 0 when the document is complete and well nested. */
int jw_finish(const struct jw *w);

/* The buffer's contents as a malloc'd NUL-terminated string (the buffer is drained); *len gets
 * its length when len is not NULL. NULL when out of memory. */
char *jw_take(struct evbuffer *out, size_t *len);

#endif
