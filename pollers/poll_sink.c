/* Sample batching on the event loop; delivery through common/deliver.c (its sender thread owns
 * the spool). */
#include "poll_sink.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "deliver.h"
#include "log.h"

#define POLL_SINK_STOP_MS  3000  /* a clean stop tries briefly to deliver the last batches */
#define POLL_SINK_DRAIN_MS 60000 /* --once: deliver everything unless a send fails */

struct poll_sink {
    struct poll_sink_opts o;
    struct event *flush_ev;
    struct poll_batch batch;
    struct deliver *d;
    void (*tap)(void *arg, const struct poll_sample *s);
    void *tap_arg;
};

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    poll_sink_flush(arg);
}

struct poll_sink *poll_sink_new(struct event_base *base, const struct poll_sink_opts *o, char *err,
                                size_t errlen)
{
    struct poll_sink *sk = calloc(1, sizeof(*sk));
    if (!sk) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    sk->o = *o;
    if (sk->o.flush_ms <= 0)
        sk->o.flush_ms = 1000;
    sk->flush_ev = event_new(base, -1, EV_PERSIST, on_flush, sk);
    if (!sk->flush_ev) {
        snprintf(err, errlen, "out of memory");
        free(sk);
        return NULL;
    }
    struct timeval tv = {sk->o.flush_ms / 1000, (sk->o.flush_ms % 1000) * 1000};
    event_add(sk->flush_ev, &tv);
    if (!sk->o.out) {
        const struct cfg_delivery *dv = o->delivery;
        struct deliver_opts dopts = {
            .target = {.name = "delivery",
                       .url = o->url,
                       .token = o->token,
                       .timeout_ms = o->post_timeout_ms,
                       .compress = dv ? dv->compress : WL_COMPRESS_ZSTD},
            .spool_dir = o->spool_dir,
            .spool_max_bytes = o->spool_max_bytes,
            .report_drops = true,
        };
        if (dv)
            dopts.target.tls = (struct httpc_tls){.ca_file = dv->ca_file,
                                                  .cert_file = dv->client_cert,
                                                  .key_file = dv->client_key,
                                                  .allow_plain_remote = dv->allow_plain_http};
        sk->d = deliver_new(&dopts, err, errlen);
        if (!sk->d) {
            event_free(sk->flush_ev);
            free(sk);
            return NULL;
        }
    }
    return sk;
}

void poll_sink_set_tap(struct poll_sink *sk, void (*fn)(void *arg, const struct poll_sample *s),
                       void *arg)
{
    sk->tap = fn;
    sk->tap_arg = arg;
}

void poll_sink_add(struct poll_sink *sk, const struct poll_sample *s)
{
    if (sk->tap)
        sk->tap(sk->tap_arg, s);
    if (poll_batch_add(&sk->batch, s) != 0)
        log_error(s->device, "out of memory: sample of %s dropped", s->interface);
}

void poll_sink_flush(struct poll_sink *sk)
{
    if (sk->batch.n == 0)
        return;
    size_t len = 0;
    char *body = poll_batch_json(sk->o.poller, sk->batch.items, sk->batch.n, &len);
    if (!body) {
        log_error(NULL, "out of memory: %zu samples dropped", sk->batch.n);
        poll_batch_clear(&sk->batch);
        return;
    }
    poll_batch_clear(&sk->batch);
    if (sk->o.out) {
        fprintf(sk->o.out, "%s\n", body);
        fflush(sk->o.out);
    } else {
        deliver_submit(sk->d, body, len); /* logs when it cannot even queue */
    }
    free(body);
}

size_t poll_sink_close(struct poll_sink *sk, int drain)
{
    if (!sk)
        return 0;
    poll_sink_flush(sk);
    size_t left = sk->d ? deliver_close(sk->d, drain ? POLL_SINK_DRAIN_MS : POLL_SINK_STOP_MS) : 0;
    event_free(sk->flush_ev);
    poll_batch_free(&sk->batch);
    free(sk);
    return left;
}

void poll_sink_metrics(struct poll_sink *sk, FILE *f)
{
    if (sk->d)
        deliver_metrics_render(sk->d, f);
}
