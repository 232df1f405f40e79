/* The one UTF-8 rule of the tree (RFC 3629): no overlong forms, no UTF-16 surrogates
 * (U+D800-U+DFFF), nothing above U+10FFFF, no truncated sequences. utf8_valid checks, utf8_sanitize
 * repairs (every byte that does not start a well-formed sequence becomes U+FFFD, one per byte).
 * Callers add their own output rules on top (control characters, XML's U+FFFE/U+FFFF). */
#ifndef WL_UTF8_H
#define WL_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* U+FFFD REPLACEMENT CHARACTER in UTF-8. */
#define UTF8_REPLACEMENT "\xEF\xBF\xBD"
/* Bytes utf8_sanitize may write for len input bytes (each may become U+FFFD), NUL included. */
#define UTF8_SANITIZE_LEN(len) (3 * (len) + 1)

/* Length (1-4) of the well-formed sequence at p[0..avail), or 0 when p does not start one.
 * ASCII (including NUL) is 1. The code point goes to *cp when cp is not NULL. */
size_t utf8_seq_len(const unsigned char *p, size_t avail, uint32_t *cp);
/* True when s[0..len) is well-formed UTF-8; otherwise *bad_at (when not NULL) gets the offset of
 * the first byte that does not start a well-formed sequence. */
bool utf8_valid(const char *s, size_t len, size_t *bad_at);
/* Copies s[0..len) into out (cap bytes, NUL-terminated; UTF8_SANITIZE_LEN(len) keeps all of it),
 * each byte that does not start a well-formed sequence replaced by U+FFFD. A cut at cap never
 * splits a character. Returns the bytes written, NUL excluded. */
size_t utf8_sanitize(const char *s, size_t len, char *out, size_t cap);
/* For display of an already valid string: the byte length of s's first max_chars characters
 * (a lead byte and its continuation bytes), stopping before a character that would start at or
 * after max_bytes; the characters counted go to *chars when not NULL. */
size_t utf8_prefix(const char *s, size_t max_chars, size_t max_bytes, size_t *chars);
/* Writes code point cp (< 0x110000, not a surrogate) as UTF-8 into out; returns its length. */
size_t utf8_put(char *out, uint32_t cp);

#endif
