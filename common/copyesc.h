/* The tree's one writer of PostgreSQL COPY text-format values: text with backslash, tab, newline
 * and carriage return escaped as \\, \t, \n and \r (a NUL cannot be sent: callers refuse U+0000
 * first, as jsonv.h does), and unsigned decimals. NULL is written by callers as \N. */
#ifndef WL_COPYESC_H
#define WL_COPYESC_H

#include <stddef.h>
#include <stdint.h>

/* Bytes copyesc_text may write for n input bytes. */
#define COPYESC_MAX(n) (2 * (n))

/* Writes s[0..n) escaped into out (at least COPYESC_MAX(n) bytes, not NUL-terminated); returns
 * the bytes written. */
size_t copyesc_text(char *out, const char *s, size_t n);

/* Bytes copyesc_u64 may write. */
#define COPYESC_U64_MAX 20

/* Writes v in decimal into out (COPYESC_U64_MAX bytes, not NUL-terminated); returns the bytes
 * written. Inline, two digits a step, straight into out: ingest writes ~10 per flow record, and
 * the byte-a-step form through a scratch buffer was ~6 % of its instructions (callgrind). */
static inline size_t copyesc_u64(char *out, uint64_t v)
{
    static const char d2[201] =
        "00010203040506070809101112131415161718192021222324252627282930313233"
        "34353637383940414243444546474849505152535455565758596061626364656667"
        "6869707172737475767778798081828384858687888990919293949596979899";
    size_t nd = 1; /* digits: compares with 10, 100, ... (p wraps only after the last one) */
    for (uint64_t p = 10; nd < COPYESC_U64_MAX && v >= p; p *= 10)
        nd++;
    char *e = out + nd;
    while (v >= 100) {
        unsigned i = (unsigned)(v % 100) * 2;
        v /= 100;
        *--e = d2[i + 1];
        *--e = d2[i];
    }
    if (v >= 10) {
        *--e = d2[v * 2 + 1];
        *--e = d2[v * 2];
    } else {
        *--e = (char)('0' + v);
    }
    return nd;
}

#endif
