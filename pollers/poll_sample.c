/* Counter samples and their JSON encoding (hand-written: cJSON stores numbers as doubles, which
 * would round 64-bit counters above 2^53). */
#include "poll_sample.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"

int poll_batch_add(struct poll_batch *b, const struct poll_sample *s)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        struct poll_sample *items = realloc(b->items, cap * sizeof(*items));
        if (!items)
            return -1;
        b->items = items;
        b->cap = cap;
    }
    b->items[b->n++] = *s;
    return 0;
}

void poll_batch_clear(struct poll_batch *b)
{
    b->n = 0;
}

void poll_batch_free(struct poll_batch *b)
{
    free(b->items);
    b->items = NULL;
    b->n = b->cap = 0;
}

struct buf {
    char *p;
    size_t len, cap;
    bool failed;
};

static void buf_reserve(struct buf *b, size_t more)
{
    if (b->failed || b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->failed = true;
        return;
    }
    b->p = p;
    b->cap = cap;
}

__attribute__((format(printf, 2, 3))) static void buf_printf(struct buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    buf_reserve(b, (size_t)n);
    if (b->failed)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* A JSON string literal; control characters escaped, other bytes passed through (UTF-8). */
static void buf_json_str(struct buf *b, const char *s)
{
    buf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c < 0x20)
            buf_printf(b, "\\u%04x", c);
        else
            buf_printf(b, "%c", c);
    }
    buf_printf(b, "\"");
}

char *poll_batch_json(const char *poller, const struct poll_sample *samples, size_t n, size_t *len)
{
    struct buf b = {0};
    buf_printf(&b, "{\"version\":1,\"poller\":");
    buf_json_str(&b, poller);
    buf_printf(&b, ",\"samples\":[");
    for (size_t i = 0; i < n; i++) {
        const struct poll_sample *s = &samples[i];
        char at[TM_RFC3339_LEN];
        buf_printf(&b, "%s{\"device\":", i ? "," : "");
        buf_json_str(&b, s->device);
        buf_printf(&b, ",\"interface\":");
        buf_json_str(&b, s->interface);
        buf_printf(&b, ",\"at\":\"%s\"", tm_format_rfc3339(s->at_us, at));
        if (s->has_uptime)
            buf_printf(&b, ",\"uptime_cs\":%" PRId64, s->uptime_cs);
        buf_printf(&b, ",\"in_octets\":%" PRIu64 ",\"out_octets\":%" PRIu64, s->in_octets,
                   s->out_octets);
        if (s->has_pkts)
            buf_printf(&b, ",\"in_pkts\":%" PRIu64 ",\"out_pkts\":%" PRIu64, s->in_pkts,
                       s->out_pkts);
        buf_printf(
            &b, ",\"speed_bps\":%" PRIu64 ",\"counter_bits\":%d,\"discontinuity_cs\":%" PRId64 "}",
            s->speed_bps, s->counter_bits, s->discontinuity_cs);
    }
    buf_printf(&b, "]}");
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.len;
    return b.p;
}
