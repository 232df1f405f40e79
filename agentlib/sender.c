/* The agent's reports through common/deliver.c (or to stdout). */
#include "sender.h"

#include <stdlib.h>
#include <string.h>

#define SENDER_DRAIN_MS 5000 /* at exit: the last (partial) window is worth a few seconds */

struct sender {
    FILE *out;
    struct deliver *d;
    uint64_t lines;
};

struct sender *sender_new(const struct sender_opts *o, char *err, size_t errlen)
{
    struct sender *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->out = o->out;
    if (s->out)
        return s;
    if (!o->url || !o->spool_dir) {
        snprintf(err, errlen, "a reconciler URL and a spool directory are needed");
        free(s);
        return NULL;
    }
    struct deliver_opts dopts = {
        .target = {.name = "delivery",
                   .url = o->url,
                   .token = o->token,
                   .timeout_ms = o->timeout_ms,
                   .compress = o->compress,
                   .tls = o->tls},
        .spool_dir = o->spool_dir,
        .spool_max_bytes = o->spool_max_bytes,
        .report_drops = true,
    };
    s->d = deliver_new(&dopts, err, errlen);
    if (!s->d) {
        free(s);
        return NULL;
    }
    return s;
}

void sender_free(struct sender *s)
{
    if (!s)
        return;
    deliver_close(s->d, SENDER_DRAIN_MS);
    free(s);
}

int sender_submit(struct sender *s, const char *body, size_t len, char *err, size_t errlen)
{
    if (errlen)
        err[0] = '\0';
    if (s->out) {
        if (fwrite(body, 1, len, s->out) != len || fputc('\n', s->out) == EOF ||
            fflush(s->out) != 0) {
            snprintf(err, errlen, "writing the report to stdout failed");
            return -1;
        }
        s->lines++;
        return 0;
    }
    if (deliver_submit(s->d, body, len) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void sender_stats(const struct sender *s, struct sender_stats *st)
{
    memset(st, 0, sizeof(*st));
    if (!s->d) {
        st->sent = s->lines;
        return;
    }
    struct deliver_stats ds;
    deliver_get_stats(s->d, &ds);
    st->sent = ds.c.sends[DELIVER_OK];
    st->rejected = ds.rejected;
    st->failures = ds.c.sends[DELIVER_RETRY] + ds.c.sends[DELIVER_HOLD];
    st->spooled = (size_t)(ds.spool_entries + ds.mem_entries);
    st->spool_dropped = ds.dropped_entries;
    st->last_status = ds.c.last_status;
}

void sender_metrics(const struct sender *s, FILE *f)
{
    if (s->d)
        deliver_metrics_render(s->d, f);
}
