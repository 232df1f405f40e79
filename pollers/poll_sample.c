/* Counter samples and their JSON encoding (jsonw.h: exact 64-bit counters, which cJSON's doubles
 * would round above 2^53). */
#include "poll_sample.h"

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "jsonw.h"
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

char *poll_batch_json(const char *poller, const struct poll_sample *samples, size_t n, size_t *len)
{
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return NULL;
    struct jw w;
    jw_init(&w, b);
    jw_begin_object(&w);
    jw_kv_u64(&w, "version", 1);
    jw_kv_str(&w, "poller", poller);
    jw_key(&w, "samples");
    jw_begin_array(&w);
    for (size_t i = 0; i < n; i++) {
        const struct poll_sample *s = &samples[i];
        char at[TM_RFC3339_LEN];
        jw_begin_object(&w);
        jw_kv_str(&w, "device", s->device);
        jw_kv_str(&w, "interface", s->interface);
        jw_kv_str(&w, "at", tm_format_rfc3339(s->at_us, at));
        if (s->has_uptime)
            jw_kv_i64(&w, "uptime_cs", s->uptime_cs);
        jw_kv_u64(&w, "in_octets", s->in_octets);
        jw_kv_u64(&w, "out_octets", s->out_octets);
        if (s->has_pkts) {
            jw_kv_u64(&w, "in_pkts", s->in_pkts);
            jw_kv_u64(&w, "out_pkts", s->out_pkts);
        }
        jw_kv_u64(&w, "speed_bps", s->speed_bps);
        jw_kv_i64(&w, "counter_bits", s->counter_bits);
        jw_kv_i64(&w, "discontinuity_cs", s->discontinuity_cs);
        jw_end(&w);
    }
    jw_end(&w);
    jw_end(&w);
    char *out = jw_finish(&w) == 0 ? jw_take(b, len) : NULL;
    evbuffer_free(b);
    return out;
}
