/* UTF-8 validation and repair (see utf8.h). */
#include "utf8.h"

#include <string.h>

size_t utf8_seq_len(const unsigned char *p, size_t avail, uint32_t *cp)
{
    if (avail == 0)
        return 0;
    unsigned c = p[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        n = 1, v = c, min = 0;
    } else if (c >= 0xC2 && c <= 0xDF) {
        n = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return 0; /* continuation byte, C0/C1 (overlong 2-byte), F5..FF */
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    if (cp)
        *cp = v;
    return n;
}

bool utf8_valid(const char *s, size_t len, size_t *bad_at)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t n = utf8_seq_len(p + i, len - i, NULL);
        if (n == 0) {
            if (bad_at)
                *bad_at = i;
            return false;
        }
        i += n;
    }
    return true;
}

size_t utf8_sanitize(const char *s, size_t len, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, w = 0;
    if (cap == 0)
        return 0;
    while (i < len) {
        size_t n = utf8_seq_len(p + i, len - i, NULL);
        const char *emit = n ? s + i : UTF8_REPLACEMENT;
        size_t emit_len = n ? n : 3;
        if (w + emit_len >= cap)
            break;
        memcpy(out + w, emit, emit_len);
        w += emit_len;
        i += n ? n : 1;
    }
    out[w] = 0;
    return w;
}

size_t utf8_put(char *w, uint32_t cp)
{
    if (cp < 0x80) {
        w[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        w[0] = (char)(0xC0 | (cp >> 6));
        w[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        w[0] = (char)(0xE0 | (cp >> 12));
        w[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        w[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    w[0] = (char)(0xF0 | (cp >> 18));
    w[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    w[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    w[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t utf8_prefix(const char *s, size_t max_chars, size_t max_bytes, size_t *chars)
{
    size_t i = 0, n = 0;
    while (s[i] && n < max_chars && i < max_bytes) {
        i++;
        while (((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
        n++;
    }
    if (chars)
        *chars = n;
    return i;
}
