/* The ingest worker pool (see workers.h). */
#include "workers.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "fluent.h"
#include "jsonw.h"
#include "log.h"
#include "quarantine.h"
#include "store.h"
#include "store_group.h"
#include "timeutil.h"

/* A queue of jobs, oldest first. */
struct wk_fifo {
    struct wk_job *head, *tail;
    size_t n;
};

static void fifo_push(struct wk_fifo *q, struct wk_job *j)
{
    j->next = NULL;
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    q->n++;
}

static struct wk_job *fifo_pop(struct wk_fifo *q)
{
    struct wk_job *j = q->head;
    q->head = j->next;
    if (!q->head)
        q->tail = NULL;
    q->n--;
    return j;
}

struct wk_pool {
    const struct cfg *cfg;
    struct metrics *metrics;
    struct event *done_ev;
    wk_done_fn done;
    void *done_arg;
    pthread_t threads[WK_THREADS];
    int n_threads;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct wk_fifo queue;    /* waiting to be parsed */
    struct wk_fifo ready;    /* parsed agent reports waiting to be written */
    int writing;             /* workers writing a group now */
    struct wk_job *finished; /* waiting for the event loop */
    size_t pending;          /* submitted, not yet handed back to the loop */
    bool stop;
};

void wk_job_free(struct wk_job *job)
{
    if (!job)
        return;
    free(job->body);
    free(job->reply);
    if (job->parsed)
        ingest_batch_free(&job->batch);
    chblock_free(&job->blk);
    free(job);
}

/* Replaces a msgpack body by its JSON array (fluent.h); -1 when it does not decode, with the job
 * answered 400. */
static int to_json(struct wk_job *j, struct evbuffer *out)
{
    struct evbuffer *js = evbuffer_new();
    char msg[200];
    long n = js ? fl_msgpack_to_json(j->body, j->len, js, msg, sizeof(msg)) : -1;
    if (!js)
        snprintf(msg, sizeof(msg), "out of memory");
    if (n < 0) {
        log_info(j->peer, "%s rejected (400): %s", j->path, msg);
        j->status = js ? 400 : 500;
        jw_error(out, msg, "$");
        j->reply = jw_take(out, NULL);
        evbuffer_free(out);
        if (js)
            evbuffer_free(js);
        return -1;
    }
    free(j->body);
    j->len = evbuffer_get_length(js);
    j->body = jw_take(js, NULL);
    evbuffer_free(js);
    if (!j->body) {
        j->status = 500;
        jw_error(out, "out of memory", "$");
        j->reply = jw_take(out, NULL);
        evbuffer_free(out);
        return -1;
    }
    return 0;
}

/* Decodes and validates a job's body into j->batch (j->parsed); -1 with status and reply set
 * when it is refused. Runs on a worker thread. */
static int parse_job(struct wk_pool *p, struct wk_job *j)
{
    struct evbuffer *out = evbuffer_new();
    struct ingest_error e;
    if (!out) {
        j->status = 500;
        return -1;
    }
    if (j->coding != BODY_IDENTITY) {
        struct body_error be;
        char *plain;
        size_t plain_len;
        if (body_decode(j->coding, j->body, j->len, j->max_body, &plain, &plain_len, &be) < 0) {
            log_info(j->peer, "%s rejected (%d): %s", j->path, be.status, be.msg);
            j->status = be.status;
            jw_error(out, be.msg, "$");
            j->reply = jw_take(out, NULL);
            evbuffer_free(out);
            return -1;
        }
        free(j->body);
        j->body = plain;
        j->len = plain_len;
    }
    if (j->msgpack && to_json(j, out) < 0)
        return -1;
    /* in place: j->body (len + 1 bytes, NUL-terminated, from server.c, body_decode or to_json)
     * is freed next */
    int rc = ingest_parse_inplace(p->cfg, j->kind, j->body, j->len, tm_now_us(), &j->batch, &e);
    free(j->body); /* the rows are in the batch now */
    j->body = NULL;
    if (rc < 0) {
        log_info(j->peer, "%s rejected (%d): %s at %s", j->path, e.status, e.msg, e.path);
        j->status = e.status;
        jw_error(out, e.msg, e.path);
        j->reply = jw_take(out, NULL);
    } else {
        j->parsed = true;
    }
    evbuffer_free(out);
    return rc;
}

/* Fills status and reply of a parsed job from its write (rc, res, err) and frees its batch. */
static void answer(struct wk_pool *p, struct wk_job *j, int rc, const struct store_result *res,
                   const char *err)
{
    struct evbuffer *out = evbuffer_new();
    const struct ingest_batch *b = &j->batch;
    if (!out) {
        j->status = 500;
    } else if (rc < 0) {
        log_error(j->peer, "%s not stored: %s", j->path, err);
        char msg[600];
        snprintf(msg, sizeof(msg), "not stored: %s", err);
        j->status = 503;
        jw_error(out, msg, "$");
    } else {
        metrics_rows(p->metrics, j->ep, res->received, res->stored);
        log_debug(j->peer, "%s: %zu rows, %zu new", j->path, res->received, res->stored);
        j->status = 200;
        if (j->kind == INGEST_TRANSFERS) {
            metrics_rejected(p->metrics, j->ep, b->n_rejects);
            if (b->n_rejects)
                log_info(j->peer,
                         "%s: %zu of %zu records rejected (kept in rejected_records),"
                         " first at %s: %s",
                         j->path, b->n_rejects, b->n_records, b->rejects[0].path,
                         b->rejects[0].msg);
            qr_reply(out, b, res);
        } else {
            struct jw w;
            jw_init(&w, out);
            jw_begin_object(&w);
            jw_kv_u64(&w, "received", res->received);
            jw_kv_u64(&w, "stored", res->stored);
            jw_kv_u64(&w, "duplicate", res->received - res->stored);
            jw_end(&w);
            evbuffer_add(out, "\n", 1);
        }
    }
    if (out) {
        j->reply = jw_take(out, NULL);
        evbuffer_free(out);
    }
    ingest_batch_free(&j->batch);
    j->parsed = false;
}

/* Commits one parsed job alone (counters, transfers, reports with NAS rows). */
static void write_one(struct wk_pool *p, struct store *st, struct wk_job *j)
{
    struct store_result res;
    char err[512];
    int rc = store_write(st, &j->batch, &res, err, sizeof(err));
    if (rc == 0)
        rc = qr_write(store_db(st), &j->batch, j->peer, err, sizeof(err));
    answer(p, j, rc, &res, err);
}

/* Commits parsed agent reports g[0..n) together (store_group.h) and answers each. */
static void write_group(struct wk_pool *p, struct store *st, struct wk_job **g, size_t n)
{
    struct sg_item it[SG_MAX_REPORTS];
    for (size_t i = 0; i < n; i++) {
        it[i] = (struct sg_item){.b = &g[i]->batch, .blk = g[i]->blk};
        memset(&g[i]->blk, 0, sizeof g[i]->blk); /* taken by store_write_group */
    }
    store_write_group(st, it, n);
    for (size_t i = 0; i < n; i++)
        answer(p, g[i], it[i].rc, &it[i].res, it[i].err);
}

/* Pops the oldest ready reports, up to SG_MAX_REPORTS and SG_MAX_ROWS flow records (at least
 * one). Called with the lock held. */
static size_t take_ready(struct wk_pool *p, struct wk_job **g)
{
    size_t n = 0, rows = 0;
    while (p->ready.head && n < SG_MAX_REPORTS &&
           (n == 0 || rows + p->ready.head->batch.n_rows <= SG_MAX_ROWS)) {
        struct wk_job *j = fifo_pop(&p->ready);
        rows += j->batch.n_rows;
        g[n++] = j;
    }
    return n;
}

/* Called with the lock held: j is answered, for the event loop. */
static void finished(struct wk_pool *p, struct wk_job *j)
{
    p->pending--;
    j->next = p->finished;
    p->finished = j;
    event_active(p->done_ev, EV_READ, 0);
}

static void *run(void *arg)
{
    struct wk_pool *p = arg;
    struct store *st = store_new(p->cfg);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !p->queue.head && !p->ready.head)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        /* write the ready reports when nobody else is writing them or nothing is left to
         * parse; otherwise parse the next job while the other worker's group is written */
        if (p->ready.head && (!p->queue.head || p->writing == 0)) {
            struct wk_job *g[SG_MAX_REPORTS];
            size_t n = take_ready(p, g);
            p->writing++;
            pthread_mutex_unlock(&p->mu);
            write_group(p, st, g, n);
            pthread_mutex_lock(&p->mu);
            p->writing--;
            for (size_t i = 0; i < n; i++)
                finished(p, g[i]);
            continue;
        }
        struct wk_job *j = fifo_pop(&p->queue);
        pthread_mutex_unlock(&p->mu);

        bool ready = false;
        if (!st)
            j->status = 500;
        else if (parse_job(p, j) == 0) {
            ready = store_groupable(&j->batch);
            if (ready) /* compressed here, in parallel, not by the group's writer */
                store_group_prepare(p->cfg, &j->batch, &j->blk);
            else
                write_one(p, st, j);
        }

        pthread_mutex_lock(&p->mu);
        if (ready) {
            fifo_push(&p->ready, j);
        } else {
            finished(p, j);
        }
    }
    pthread_mutex_unlock(&p->mu);
    store_close(st);
    return NULL;
}

/* On the event loop thread: hand every finished job to the server. */
static void on_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct wk_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    struct wk_job *list = p->finished;
    p->finished = NULL;
    pthread_mutex_unlock(&p->mu);
    /* finished is a stack: reverse it to answer in completion order */
    struct wk_job *rev = NULL;
    while (list) {
        struct wk_job *next = list->next;
        list->next = rev;
        rev = list;
        list = next;
    }
    while (rev) {
        struct wk_job *next = rev->next;
        p->done(rev, p->done_arg);
        rev = next;
    }
}

struct wk_pool *wk_start(struct event_base *base, const struct cfg *cfg, struct metrics *m,
                         wk_done_fn done, void *arg, char *err, size_t errlen)
{
    struct wk_pool *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->cfg = cfg;
    p->metrics = m;
    p->done = done;
    p->done_arg = arg;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->done_ev = event_new(base, -1, 0, on_done, p);
    if (!p->done_ev) {
        snprintf(err, errlen, "cannot create the completion event");
        wk_stop(p);
        return NULL;
    }
    for (int i = 0; i < WK_THREADS; i++) {
        int rc = pthread_create(&p->threads[i], NULL, run, p);
        if (rc != 0) {
            snprintf(err, errlen, "cannot start an ingest worker: error %d", rc);
            wk_stop(p);
            return NULL;
        }
        p->n_threads++;
    }
    return p;
}

int wk_submit(struct wk_pool *p, struct wk_job *job)
{
    pthread_mutex_lock(&p->mu);
    if (p->queue.n + p->ready.n >= WK_MAX_QUEUE) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    fifo_push(&p->queue, job);
    p->pending++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

size_t wk_pending(struct wk_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->pending;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void wk_stop(struct wk_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    struct wk_job *lists[3] = {p->queue.head, p->ready.head, p->finished};
    for (int k = 0; k < 3; k++)
        while (lists[k]) {
            struct wk_job *next = lists[k]->next;
            wk_job_free(lists[k]);
            lists[k] = next;
        }
    if (p->done_ev)
        event_free(p->done_ev);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
}
