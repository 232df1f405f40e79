/* Spool-first, in-order delivery of reports to the reconciler. */
#include "sender.h"

#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "spool.h"

struct sender {
    char *url;
    char *token;
    int timeout_ms;
    FILE *out;
    struct spool *spool;
    struct sender_stats st;
};

struct sender *sender_new(const struct sender_opts *o, char *err, size_t errlen)
{
    struct sender *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->out = o->out;
    s->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 10000;
    if (!s->out) {
        if (!o->url || !o->spool_dir) {
            snprintf(err, errlen, "a reconciler URL and a spool directory are needed");
            goto fail;
        }
        s->url = strdup(o->url);
        s->token = o->token ? strdup(o->token) : NULL;
        if (!s->url || (o->token && !s->token)) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        s->spool = spool_open(o->spool_dir, o->spool_max_bytes, err, errlen);
        if (!s->spool)
            goto fail;
    }
    return s;
fail:
    sender_free(s);
    return NULL;
}

void sender_free(struct sender *s)
{
    if (!s)
        return;
    spool_close(s->spool);
    free(s->url);
    free(s->token);
    free(s);
}

/* 4xx other than 401/403/408/429 means this body will never be accepted: waiting would block
 * every later report. */
static bool permanently_rejected(int status)
{
    return status >= 400 && status < 500 && status != 401 && status != 403 && status != 408 &&
           status != 429;
}

size_t sender_flush(struct sender *s, char *err, size_t errlen)
{
    size_t delivered = 0;
    if (errlen)
        err[0] = '\0';
    if (!s->spool)
        return 0;
    for (;;) {
        char *body = NULL;
        size_t len = 0;
        int r = spool_peek(s->spool, &body, &len);
        if (r == 0)
            break;
        if (r < 0) {
            snprintf(err, errlen, "reading the spool failed");
            break;
        }
        struct httpc_response resp = {0};
        char herr[256] = "";
        int rc = httpc_post(s->url, s->token, body, len, s->timeout_ms, &resp, herr, sizeof(herr));
        free(body);
        s->st.last_status = rc == 0 ? resp.status : 0;
        if (rc == 0 && resp.status >= 200 && resp.status < 300) {
            httpc_response_free(&resp);
            spool_pop(s->spool);
            s->st.sent++;
            delivered++;
            continue;
        }
        if (rc == 0 && permanently_rejected(resp.status)) {
            snprintf(err, errlen, "%s answered %d: %.200s (report dropped)", s->url, resp.status,
                     resp.body ? resp.body : "");
            httpc_response_free(&resp);
            spool_pop(s->spool);
            s->st.rejected++;
            continue;
        }
        s->st.failures++;
        if (rc == 0)
            snprintf(err, errlen, "%s answered %d: %.200s", s->url, resp.status,
                     resp.body ? resp.body : "");
        else
            snprintf(err, errlen, "%s: %s", s->url, herr);
        httpc_response_free(&resp);
        break;
    }
    return delivered;
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
        s->st.sent++;
        return 0;
    }
    if (spool_push(s->spool, body, len, err, errlen))
        return -1;
    sender_flush(s, err, errlen);
    return 0;
}

void sender_stats(const struct sender *s, struct sender_stats *st)
{
    *st = s->st;
    if (s->spool) {
        st->spooled = spool_count(s->spool);
        st->spool_dropped = spool_dropped(s->spool);
    }
}
