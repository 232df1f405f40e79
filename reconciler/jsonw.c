/* JSON text output helpers (see jsonw.h). */
#include "jsonw.h"

#include <string.h>

void jw_str(struct evbuffer *out, const char *s)
{
    if (!s) {
        evbuffer_add(out, "null", 4);
        return;
    }
    evbuffer_add(out, "\"", 1);
    const char *run = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        evbuffer_add(out, run, (size_t)(p - run));
        run = p + 1;
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
            evbuffer_add_printf(out, "\\u%04x", c);
        }
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
