/* The tree's one escaper for PostgreSQL's COPY text format: backslash, tab, newline and
 * carriage return become \\, \t, \n and \r (a NUL cannot be sent: callers refuse U+0000 first,
 * as jsonv.h does). NULL is written by callers as \N. */
#ifndef WL_COPYESC_H
#define WL_COPYESC_H

#include <stddef.h>

/* Bytes copyesc_text may write for n input bytes. */
#define COPYESC_MAX(n) (2 * (n))

/* Writes s[0..n) escaped into out (at least COPYESC_MAX(n) bytes, not NUL-terminated); returns
 * the bytes written. */
size_t copyesc_text(char *out, const char *s, size_t n);

#endif
