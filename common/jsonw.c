/* JSON text output (see jsonw.h). */
#include "jsonw.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

void jw_strn(struct evbuffer *out, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t run = 0, i = 0;
    evbuffer_add(out, "\"", 1);
    while (i < len) {
        unsigned c = p[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t n = utf8_seq_len(p + i, len - i, NULL);
            if (n) {
                i += n;
                continue;
            }
        }
        evbuffer_add(out, s + run, i - run);
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
        i++;
        run = i;
    }
    evbuffer_add(out, s + run, len - run);
    evbuffer_add(out, "\"", 1);
}

void jw_str(struct evbuffer *out, const char *s)
{
    if (!s)
        evbuffer_add(out, "null", 4);
    else
        jw_strn(out, s, strlen(s));
}

void jw_error(struct evbuffer *out, const char *msg, const char *path)
{
    evbuffer_add(out, "{\"error\":", 9);
    jw_str(out, msg);
    evbuffer_add(out, ",\"path\":", 8);
    jw_str(out, path);
    evbuffer_add(out, "}\n", 2);
}

/* ---- the builder -------------------------------------------------------------------------- */

void jw_init(struct jw *w, struct evbuffer *out)
{
    memset(w, 0, sizeof(*w));
    w->out = out;
    w->first[0] = true;
}

/* Before a value: the comma between elements (a member's comma came with its key). */
static void before_value(struct jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (!w->first[w->depth])
        evbuffer_add(w->out, ",", 1);
    w->first[w->depth] = false;
}

static void begin(struct jw *w, const char *open)
{
    before_value(w);
    if (w->depth == JW_MAX_DEPTH) {
        w->failed = true;
        return;
    }
    evbuffer_add(w->out, open, 1);
    w->open[w->depth] = open[0];
    w->first[++w->depth] = true;
}

void jw_begin_object(struct jw *w)
{
    begin(w, "{");
}

void jw_begin_array(struct jw *w)
{
    begin(w, "[");
}

void jw_end(struct jw *w)
{
    if (w->depth == 0 || w->after_key) {
        w->failed = true;
        return;
    }
    w->depth--;
    evbuffer_add(w->out, w->open[w->depth] == '{' ? "}" : "]", 1);
}

void jw_key(struct jw *w, const char *key)
{
    if (w->depth == 0 || w->open[w->depth - 1] != '{' || w->after_key) {
        w->failed = true;
        return;
    }
    if (!w->first[w->depth])
        evbuffer_add(w->out, ",", 1);
    w->first[w->depth] = false;
    jw_str(w->out, key);
    evbuffer_add(w->out, ":", 1);
    w->after_key = true;
}

void jw_string(struct jw *w, const char *s)
{
    before_value(w);
    jw_str(w->out, s);
}

void jw_u64(struct jw *w, uint64_t v)
{
    before_value(w);
    evbuffer_add_printf(w->out, "%" PRIu64, v);
}

void jw_i64(struct jw *w, int64_t v)
{
    before_value(w);
    evbuffer_add_printf(w->out, "%" PRId64, v);
}

void jw_double(struct jw *w, double v)
{
    before_value(w);
    if (!isfinite(v)) {
        evbuffer_add(w->out, "null", 4);
        return;
    }
    char buf[32];
    /* cJSON's rule, kept so reports read the same: 15 digits unless they do not round-trip. */
    snprintf(buf, sizeof(buf), "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof(buf), "%.17g", v);
    evbuffer_add(w->out, buf, strlen(buf));
}

void jw_fixed(struct jw *w, double v, int decimals)
{
    before_value(w);
    if (!isfinite(v))
        evbuffer_add(w->out, "null", 4);
    else
        evbuffer_add_printf(w->out, "%.*f", decimals, v);
}

void jw_bool(struct jw *w, bool v)
{
    before_value(w);
    evbuffer_add(w->out, v ? "true" : "false", v ? 4 : 5);
}

void jw_null(struct jw *w)
{
    before_value(w);
    evbuffer_add(w->out, "null", 4);
}

void jw_raw(struct jw *w, const char *json, size_t n)
{
    before_value(w);
    evbuffer_add(w->out, json, n);
}

void jw_kv_str(struct jw *w, const char *key, const char *s)
{
    jw_key(w, key);
    jw_string(w, s);
}

void jw_kv_u64(struct jw *w, const char *key, uint64_t v)
{
    jw_key(w, key);
    jw_u64(w, v);
}

void jw_kv_i64(struct jw *w, const char *key, int64_t v)
{
    jw_key(w, key);
    jw_i64(w, v);
}

void jw_kv_double(struct jw *w, const char *key, double v)
{
    jw_key(w, key);
    jw_double(w, v);
}

void jw_kv_fixed(struct jw *w, const char *key, double v, int decimals)
{
    jw_key(w, key);
    jw_fixed(w, v, decimals);
}

int jw_finish(const struct jw *w)
{
    return w->failed || w->depth != 0 || w->after_key ? -1 : 0;
}

char *jw_take(struct evbuffer *out, size_t *len)
{
    size_t n = evbuffer_get_length(out);
    char *s = malloc(n + 1);
    if (!s)
        return NULL;
    if (evbuffer_remove(out, s, n) != (int)n) {
        free(s);
        return NULL;
    }
    s[n] = 0;
    if (len)
        *len = n;
    return s;
}
