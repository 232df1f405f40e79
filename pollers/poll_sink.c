/* Sample batching, spooling and delivery to the reconciler.
 * Threads: the event loop only appends encoded batches to an in-memory queue; the sender thread
 * alone touches the spool (push, peek, pop), so a push that drops the oldest entry can never race
 * a pop of the entry being posted. */
#include "poll_sink.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "httpc.h"
#include "log.h"
#include "spool.h"

struct pending {
    char *body;
    size_t len;
    struct pending *next;
};

struct poll_sink {
    struct poll_sink_opts o;
    struct event *flush_ev;
    struct poll_batch batch;

    /* sender side */
    struct spool *sp;
    pthread_t thread;
    bool thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct pending *head, *tail; /* under mu */
    bool stop;                   /* under mu */
    bool drain_once;             /* under mu: at stop, try to deliver the spool once */
    bool reachable;              /* sender thread only: for logging state changes */
};

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    poll_sink_flush(arg);
}

/* 1 = delivered (pop it), 0 = retry later, -1 = rejected for good (drop it, logged). */
static int post_one(struct poll_sink *sk, const char *body, size_t len)
{
    char err[256];
    struct httpc_response resp = {0};
    if (httpc_post(sk->o.url, sk->o.token, body, len, sk->o.post_timeout_ms, &resp, err,
                   sizeof(err)) != 0) {
        if (sk->reachable)
            log_warn(NULL, "reconciler %s unreachable: %s; spooling samples", sk->o.url, err);
        sk->reachable = false;
        return 0;
    }
    int st = resp.status;
    int rc;
    if (st >= 200 && st < 300) {
        if (!sk->reachable)
            log_info(NULL, "reconciler %s reachable again; %zu batch(es) in the spool", sk->o.url,
                     spool_count(sk->sp));
        sk->reachable = true;
        rc = 1;
    } else if (st == 401 || st == 403 || st == 408 || st == 429 || st >= 500) {
        /* not the batch's fault: keep it and retry */
        if (sk->reachable)
            log_warn(NULL, "reconciler %s answered %d: %s; spooling samples", sk->o.url, st,
                     resp.body ? resp.body : "");
        sk->reachable = false;
        rc = 0;
    } else {
        log_error(NULL, "reconciler %s rejected a batch of %zu bytes with %d: %s; dropping it",
                  sk->o.url, len, st, resp.body ? resp.body : "");
        rc = -1;
    }
    httpc_response_free(&resp);
    return rc;
}

/* Moves the in-memory queue into the spool. Called with mu held. */
static void spool_pending(struct poll_sink *sk)
{
    while (sk->head) {
        struct pending *p = sk->head;
        sk->head = p->next;
        if (!sk->head)
            sk->tail = NULL;
        char err[256];
        if (spool_push(sk->sp, p->body, p->len, err, sizeof(err)) != 0)
            log_error(NULL, "spool %s: %s; a batch of %zu bytes is lost", sk->o.spool_dir, err,
                      p->len);
        free(p->body);
        free(p);
    }
}

/* Tries to post up to max spooled batches in order; stops at the first that must wait.
 * Returns true when the spool is empty. Called without mu. */
static bool deliver(struct poll_sink *sk, size_t max)
{
    for (size_t n = 0;; n++) {
        if (n == max)
            return spool_count(sk->sp) == 0;
        char *body = NULL;
        size_t len = 0;
        int r = spool_peek(sk->sp, &body, &len);
        if (r < 0) {
            log_error(NULL, "spool %s: cannot read the oldest entry", sk->o.spool_dir);
            return false;
        }
        if (r == 0)
            return true;
        int rc = post_one(sk, body, len);
        free(body);
        if (rc == 0)
            return false;
        if (spool_pop(sk->sp) != 0) {
            log_error(NULL, "spool %s: cannot remove a delivered entry", sk->o.spool_dir);
            return false;
        }
    }
}

static void *sender_main(void *arg)
{
    struct poll_sink *sk = arg;
    int backoff_ms = 0;
    pthread_mutex_lock(&sk->mu);
    for (;;) {
        spool_pending(sk);
        if (sk->stop)
            break;
        pthread_mutex_unlock(&sk->mu);
        bool empty = deliver(sk, SIZE_MAX);
        pthread_mutex_lock(&sk->mu);
        spool_pending(sk);
        if (sk->stop)
            break;
        if (empty) {
            backoff_ms = 0;
            if (!sk->head)
                pthread_cond_wait(&sk->cv, &sk->mu);
            continue;
        }
        /* reconciler down: wait, doubling from 0.5 s up to 30 s, unless told to stop */
        backoff_ms = backoff_ms ? backoff_ms * 2 : 500;
        if (backoff_ms > 30000)
            backoff_ms = 30000;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += backoff_ms / 1000;
        ts.tv_nsec += (long)(backoff_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        while (!sk->stop && pthread_cond_timedwait(&sk->cv, &sk->mu, &ts) != ETIMEDOUT)
            ;
    }
    /* stopping: try the spool once more when asked to, or when the reconciler was answering (so
     * a clean stop does not leave the last batch waiting for the next run) */
    bool drain = sk->drain_once, recent = sk->reachable;
    pthread_mutex_unlock(&sk->mu);
    if (drain || recent)
        deliver(sk, drain ? SIZE_MAX : 4); /* a clean stop stays prompt */
    return NULL;
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
    if (sk->o.post_timeout_ms <= 0)
        sk->o.post_timeout_ms = 10000;
    sk->reachable = true;
    pthread_mutex_init(&sk->mu, NULL);
    pthread_cond_init(&sk->cv, NULL);
    sk->flush_ev = event_new(base, -1, EV_PERSIST, on_flush, sk);
    if (!sk->flush_ev) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    struct timeval tv = {sk->o.flush_ms / 1000, (sk->o.flush_ms % 1000) * 1000};
    event_add(sk->flush_ev, &tv);
    if (!sk->o.out) {
        char serr[256];
        sk->sp = spool_open(sk->o.spool_dir, sk->o.spool_max_bytes, serr, sizeof(serr));
        if (!sk->sp) {
            snprintf(err, errlen, "%s", serr); /* names the directory */
            goto fail;
        }
        if (spool_count(sk->sp) > 0)
            log_info(NULL, "spool %s holds %zu batch(es) from before; sending them first",
                     sk->o.spool_dir, spool_count(sk->sp));
        if (pthread_create(&sk->thread, NULL, sender_main, sk) != 0) {
            snprintf(err, errlen, "cannot start the sender thread");
            goto fail;
        }
        sk->thread_started = true;
    }
    return sk;
fail:
    if (sk->flush_ev)
        event_free(sk->flush_ev);
    if (sk->sp)
        spool_close(sk->sp);
    pthread_mutex_destroy(&sk->mu);
    pthread_cond_destroy(&sk->cv);
    free(sk);
    return NULL;
}

void poll_sink_add(struct poll_sink *sk, const struct poll_sample *s)
{
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
        free(body);
        return;
    }
    struct pending *p = malloc(sizeof(*p));
    if (!p) {
        log_error(NULL, "out of memory: a batch was dropped");
        free(body);
        return;
    }
    p->body = body;
    p->len = len;
    p->next = NULL;
    pthread_mutex_lock(&sk->mu);
    if (sk->tail)
        sk->tail->next = p;
    else
        sk->head = p;
    sk->tail = p;
    pthread_cond_signal(&sk->cv);
    pthread_mutex_unlock(&sk->mu);
}

size_t poll_sink_close(struct poll_sink *sk, int drain)
{
    if (!sk)
        return 0;
    poll_sink_flush(sk);
    size_t left = 0;
    if (sk->thread_started) {
        pthread_mutex_lock(&sk->mu);
        sk->stop = true;
        sk->drain_once = drain != 0;
        pthread_cond_signal(&sk->cv);
        pthread_mutex_unlock(&sk->mu);
        pthread_join(sk->thread, NULL);
        left = spool_count(sk->sp);
        if (left)
            log_info(NULL, "%zu batch(es) stay in the spool %s for the next run", left,
                     sk->o.spool_dir);
    }
    if (sk->sp)
        spool_close(sk->sp);
    event_free(sk->flush_ev);
    poll_batch_free(&sk->batch);
    pthread_mutex_destroy(&sk->mu);
    pthread_cond_destroy(&sk->cv);
    free(sk);
    return left;
}
