/* JSON text output helpers (see jsonw.h). */
#include "jsonw.h"

#include <stddef.h>

#include <string.h>

/* Length of a valid UTF-8 sequence starting with a non-ASCII byte, or 0. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned c = p[0], cp;
    size_t n;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
        n = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}

void jw_str(struct evbuffer *out, const char *s)
{
    if (!s) {
        evbuffer_add(out, "null", 4);
        return;
    }
    evbuffer_add(out, "\"", 1);
    const char *run = s;
    for (const char *p = s; *p;) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            p++;
            continue;
        }
        if (c >= 0x80) {
            size_t n = utf8_len((const unsigned char *)p);
            if (n) {
                p += n;
                continue;
            }
        }
        evbuffer_add(out, run, (size_t)(p - run));
        switch (c) {
        case '"':
            evbuffer_add(out, "\\\"", 2);
            break;
        case '\\':
            evbuffer_add(out, "\\\\", 2);
            break;
        case '\n':
            evbuffer_add(out, "\\n", 2);
            break;
        case '\r':
            evbuffer_add(out, "\\r", 2);
            break;
        case '\t':
            evbuffer_add(out, "\\t", 2);
            break;
        default:
            if (c >= 0x80) /* not UTF-8 (a message cut inside a character): U+FFFD */
                evbuffer_add(out, "\\ufffd", 6);
            else
                evbuffer_add_printf(out, "\\u%04x", c);
        }
        p++;
        run = p;
    }
    evbuffer_add(out, run, strlen(run));
    evbuffer_add(out, "\"", 1);
}

void jw_error(struct evbuffer *out, const char *msg, const char *path)
{
    evbuffer_add(out, "{\"error\":", 9);
    jw_str(out, msg);
    evbuffer_add(out, ",\"path\":", 8);
    jw_str(out, path);
    evbuffer_add(out, "}\n", 2);
}
