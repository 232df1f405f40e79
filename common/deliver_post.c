/* One POST under the delivery policy (common/deliver_post.h). */
#include "deliver_post.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "log.h"

#define DELIVER_RETRY_AFTER_MAX_S 600

static enum deliver_class classify(int status)
{
    if (status >= 200 && status < 300)
        return DELIVER_OK;
    if (status == 0 || status >= 500 || status == 429 || status == 408 || status < 200)
        return DELIVER_RETRY;
    if (status == 400 || status == 413 || status == 422)
        return DELIVER_REJECT;
    return DELIVER_HOLD;
}

static void log_state(struct deliver_target *t, const struct deliver_result *r)
{
    enum deliver_class was = t->c.state;
    if (r->cls == DELIVER_REJECT)
        return; /* about one body: the caller logs it */
    t->c.state = r->cls;
    if (r->cls == was)
        return;
    if (r->cls == DELIVER_OK)
        log_info(t->name, "%s accepts again", t->url);
    else if (r->cls == DELIVER_RETRY)
        log_warn(t->name, "%s: %s; keeping the data and retrying with backoff", t->url, r->msg);
    else
        log_error(t->name,
                  "%s: %s; keeping the data in order and retrying (fix the URL or token: "
                  "nothing is dropped)",
                  t->url, r->msg);
}

static int post_body(struct deliver_target *t, const char *body, size_t len, const char *enc,
                     struct httpc_response *resp, char *err, size_t errlen)
{
    struct httpc_req rq = {.url = t->url,
                           .token = t->token,
                           .body = body,
                           .len = len,
                           .content_encoding = enc,
                           .timeout_ms = t->timeout_ms > 0 ? t->timeout_ms : 10000,
                           .tls = &t->tls};
    return httpc_do(&rq, resp, err, errlen);
}

void deliver_post_once(struct deliver_target *t, const char *body, size_t len,
                       struct deliver_result *r)
{
    memset(r, 0, sizeof(*r));
    r->retry_after_s = -1;
    char *z = NULL;
    size_t zlen = 0;
    const char *enc = NULL;
    if (!t->compress_refused && t->compress != WL_COMPRESS_NONE &&
        wl_compress(t->compress, body, len, &z, &zlen) == 0) {
        if (zlen < len)
            enc = wl_compress_name(t->compress);
        else
            free(z), z = NULL;
    }
    struct httpc_response resp;
    char err[400] = "";
    int rc = post_body(t, enc ? z : body, enc ? zlen : len, enc, &resp, err, sizeof(err));
    if (rc == 0 && resp.status == 415 && enc) {
        log_warn(t->name,
                 "%s refuses Content-Encoding %s (415): sending uncompressed from now on "
                 "(set compress \"none\" to silence this)",
                 t->url, enc);
        t->compress_refused = true;
        httpc_response_free(&resp);
        enc = NULL;
        rc = post_body(t, body, len, NULL, &resp, err, sizeof(err));
    }
    if (rc != 0) {
        r->cls = DELIVER_RETRY;
        size_t ul = strlen(t->url);
        bool prefixed = !strncmp(err, t->url, ul) && !strncmp(err + ul, ": ", 2);
        snprintf(r->msg, sizeof(r->msg), "%s", prefixed ? err + ul + 2 : err);
        t->c.transport++;
    } else {
        r->status = resp.status;
        r->retry_after_s = resp.retry_after_s;
        r->cls = classify(resp.status);
        snprintf(r->msg, sizeof(r->msg), "answered %d%s%.300s", resp.status,
                 resp.body && resp.body[0] ? ": " : "", resp.body ? resp.body : "");
        for (char *p = r->msg; *p; p++) /* one log line per message */
            if (*p == '\n' || *p == '\r')
                *p = ' ';
    }
    r->body = resp.body; /* handed over */
    resp.body = NULL;
    httpc_response_free(&resp);
    t->c.sends[r->cls]++;
    t->c.last_status = r->status;
    if (r->cls == DELIVER_OK) {
        t->c.raw_bytes += len;
        t->c.wire_bytes += enc ? zlen : len;
    }
    free(z);
    log_state(t, r);
}

int deliver_backoff_ms(const struct deliver_target *t, unsigned n, int retry_after_s)
{
    int lo = t->backoff_min_ms > 0 ? t->backoff_min_ms : 500;
    int hi = t->backoff_max_ms > 0 ? t->backoff_max_ms : 30000;
    int64_t d = lo;
    for (unsigned i = 1; i < n && d < hi; i++)
        d *= 2;
    if (d > hi)
        d = hi;
    uint32_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
        rnd = (uint32_t)n * 2654435761u;
    d = d / 2 + (int64_t)(rnd % (uint32_t)(d / 2 + 1));
    if (retry_after_s >= 0) {
        int64_t ra = (int64_t)(retry_after_s > DELIVER_RETRY_AFTER_MAX_S ? DELIVER_RETRY_AFTER_MAX_S
                                                                         : retry_after_s) *
                     1000;
        if (ra > d)
            d = ra;
    }
    return (int)d;
}

void deliver_counters_render(FILE *f, const struct deliver_counters *c)
{
    static const char *const names[] = {"ok", "retry", "held", "rejected"};
    fprintf(f, "# HELP wanledger_delivery_sends_total POSTs to the reconciler by result (ok 2xx; "
               "retry 5xx/429/408/transport; held other 4xx, data kept; rejected 400/413/422, "
               "body quarantined).\n"
               "# TYPE wanledger_delivery_sends_total counter\n");
    for (int i = 0; i < 4; i++)
        fprintf(f, "wanledger_delivery_sends_total{result=\"%s\"} %llu\n", names[i],
                (unsigned long long)c->sends[i]);
    fprintf(f,
            "# HELP wanledger_delivery_transport_errors_total POSTs that got no HTTP answer.\n"
            "# TYPE wanledger_delivery_transport_errors_total counter\n"
            "wanledger_delivery_transport_errors_total %llu\n"
            "# HELP wanledger_delivery_body_bytes_total Delivered bodies' bytes before (raw) and "
            "after (wire) compression.\n"
            "# TYPE wanledger_delivery_body_bytes_total counter\n"
            "wanledger_delivery_body_bytes_total{stage=\"raw\"} %llu\n"
            "wanledger_delivery_body_bytes_total{stage=\"wire\"} %llu\n"
            "# HELP wanledger_delivery_last_status HTTP status of the last POST (0 = no answer).\n"
            "# TYPE wanledger_delivery_last_status gauge\n"
            "wanledger_delivery_last_status %d\n"
            "# HELP wanledger_delivery_held 1 while the reconciler refuses with a 4xx that is not "
            "the data's fault (URL, token): data waits.\n"
            "# TYPE wanledger_delivery_held gauge\n"
            "wanledger_delivery_held %d\n",
            (unsigned long long)c->transport, (unsigned long long)c->raw_bytes,
            (unsigned long long)c->wire_bytes, c->last_status, c->state == DELIVER_HOLD);
}

void deliver_result_free(struct deliver_result *r)
{
    free(r->body);
    r->body = NULL;
}
