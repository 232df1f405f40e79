/* Escapers for HTML/SVG, URLs, Markdown and terminals (see hm_esc.h). */
#include "hm_esc.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. Rejects overlongs,
 * surrogates and code points above U+10FFFF. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0)
        n = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0)
        n = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0)
        n = 4, cp = c & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3F);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
        (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF || cp == 0xFFFE || cp == 0xFFFF)
        return 0;
    return n;
}

static const char REPLACEMENT[] = "\xEF\xBF\xBD";

void hm_esc_html(struct evbuffer *out, const char *s)
{
    if (!s)
        return;
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p;
        switch (c) {
        case '&':
            evbuffer_add(out, "&amp;", 5);
            p++;
            continue;
        case '<':
            evbuffer_add(out, "&lt;", 4);
            p++;
            continue;
        case '>':
            evbuffer_add(out, "&gt;", 4);
            p++;
            continue;
        case '"':
            evbuffer_add(out, "&quot;", 6);
            p++;
            continue;
        case '\'':
            evbuffer_add(out, "&#39;", 5);
            p++;
            continue;
        default:
            break;
        }
        if (c < 0x20 || c == 0x7F) {
            evbuffer_add(out, REPLACEMENT, 3);
            p++;
            continue;
        }
        size_t n = utf8_len(p);
        if (n == 0) {
            evbuffer_add(out, REPLACEMENT, 3);
            p++;
            continue;
        }
        evbuffer_add(out, p, n);
        p += n;
    }
}

void hm_esc_url(struct evbuffer *out, const char *s)
{
    if (!s)
        return;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~')
            evbuffer_add(out, p, 1);
        else
            evbuffer_add_printf(out, "%%%02X", c);
    }
}

void hm_esc_md(struct evbuffer *out, const char *s)
{
    if (!s)
        return;
    static const char md_special[] = "|*_`[]\\#~!()";
    char one[2] = {0, 0};
    for (const char *p = s; *p; p++) {
        if (strchr(md_special, *p)) {
            one[0] = *p;
            evbuffer_add(out, "\\", 1);
            evbuffer_add(out, one, 1);
        } else if (*p == '\n' || *p == '\r') {
            evbuffer_add(out, " ", 1);
        } else {
            /* one byte at a time keeps multi-byte UTF-8 intact only when valid: let the HTML
             * escaper decide for the run up to the next special character */
            size_t run = strcspn(p, "|*_`[]\\#~!()\n\r");
            char *tmp = strndup(p, run);
            if (tmp) {
                hm_esc_html(out, tmp);
                free(tmp);
            }
            p += run - 1;
        }
    }
}

void hm_esc_term(struct evbuffer *out, const char *s)
{
    if (!s)
        return;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned c = *p;
        if (c < 0x20 || c == 0x7F) {
            evbuffer_add(out, "?", 1);
        } else if (c == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
            evbuffer_add(out, "?", 1); /* C1 controls, CSI among them */
            p++;
        } else
            evbuffer_add(out, p, 1);
    }
}
