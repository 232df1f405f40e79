/* Escapers for HTML/SVG, URLs, Markdown and terminals (see hm_esc.h). */
#include "hm_esc.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

/* Length of the valid UTF-8 sequence at s (utf8.h's rule), or 0 when invalid; XML also forbids
 * the noncharacters U+FFFE and U+FFFF, so they count as invalid here. */
static size_t utf8_len(const unsigned char *s)
{
    uint32_t cp;
    size_t n = utf8_seq_len(s, strnlen((const char *)s, 4), &cp);
    return n && cp != 0xFFFE && cp != 0xFFFF ? n : 0;
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
