/* The reader pool (see readers.h). */
#include "readers.h"

#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"
#include "store.h"

struct rd_pool {
    const struct cfg *cfg;
    rd_run_fn run;
    rd_done_fn done;
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct rd_job *head, *tail; /* waiting, oldest first */
    size_t n_waiting, n_running;
    struct rd_job *finished; /* a stack, reversed on the loop */
    struct event *done_ev;
    pthread_t *threads;
    PGcancel **cancel; /* of the query each reader is running, for rd_stop */
    int n_threads;     /* started */
    bool stop;
};

struct rd_job *rd_job_new(void)
{
    struct rd_job *j = calloc(1, sizeof(*j));
    if (j && !(j->out = evbuffer_new())) {
        free(j);
        return NULL;
    }
    return j;
}

void rd_job_free(struct rd_job *j)
{
    if (!j)
        return;
    if (j->out)
        evbuffer_free(j->out);
    free(j->query);
    free(j->body);
    free(j->path);
    free(j->coding);
    if (j->data_free)
        j->data_free(j->data);
    free(j);
}

struct reader_arg {
    struct rd_pool *p;
    int i;
};

static void *reader(void *arg)
{
    struct rd_pool *p = ((struct reader_arg *)arg)->p;
    int me = ((struct reader_arg *)arg)->i;
    free(arg);
    struct store *st = store_new(p->cfg);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !p->head)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        struct rd_job *j = p->head;
        p->head = j->next;
        if (!p->head)
            p->tail = NULL;
        p->n_waiting--;
        p->n_running++;
        pthread_mutex_unlock(&p->mu);
        PGconn *db = st ? store_db(st) : NULL;
        PGcancel *c = db ? PQgetCancel(db) : NULL;
        pthread_mutex_lock(&p->mu);
        p->cancel[me] = c;
        bool stopping = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (!stopping)
            p->run(db, j, p->arg);
        pthread_mutex_lock(&p->mu);
        p->cancel[me] = NULL;
        p->n_running--;
        if (c)
            PQfreeCancel(c);
        j->next = p->finished;
        p->finished = j;
        event_active(p->done_ev, EV_READ, 0);
    }
    pthread_mutex_unlock(&p->mu);
    store_close(st);
    return NULL;
}

/* On the event loop thread: every finished job to the server, in completion order. */
static void on_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct rd_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    struct rd_job *list = p->finished, *rev = NULL;
    p->finished = NULL;
    pthread_mutex_unlock(&p->mu);
    while (list) {
        struct rd_job *next = list->next;
        list->next = rev;
        rev = list;
        list = next;
    }
    while (rev) {
        struct rd_job *next = rev->next;
        p->done(rev, p->arg);
        rev = next;
    }
}

struct rd_pool *rd_start(struct event_base *base, const struct cfg *cfg, int n_threads,
                         rd_run_fn run, rd_done_fn done, void *arg, char *err, size_t errlen)
{
    struct rd_pool *p = calloc(1, sizeof(*p));
    if (p) {
        p->threads = calloc((size_t)n_threads, sizeof(*p->threads));
        p->cancel = calloc((size_t)n_threads, sizeof(*p->cancel));
    }
    if (!p || !p->threads || !p->cancel) {
        if (p) {
            free(p->threads);
            free(p->cancel);
        }
        free(p);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->cfg = cfg;
    p->run = run;
    p->done = done;
    p->arg = arg;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->done_ev = event_new(base, -1, 0, on_done, p);
    if (!p->done_ev) {
        snprintf(err, errlen, "cannot create the readers' completion event");
        rd_stop(p);
        return NULL;
    }
    for (int i = 0; i < n_threads; i++) {
        struct reader_arg *ra = malloc(sizeof *ra);
        int rc = ra ? 0 : -1;
        if (ra) {
            *ra = (struct reader_arg){p, i};
            rc = pthread_create(&p->threads[i], NULL, reader, ra);
            if (rc != 0)
                free(ra);
        }
        if (rc != 0) {
            snprintf(err, errlen, "cannot start a reader thread: error %d", rc);
            rd_stop(p);
            return NULL;
        }
        p->n_threads++;
    }
    return p;
}

int rd_submit(struct rd_pool *p, struct rd_job *job)
{
    pthread_mutex_lock(&p->mu);
    if (p->n_waiting >= RD_MAX_QUEUE) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    job->next = NULL;
    if (p->tail)
        p->tail->next = job;
    else
        p->head = job;
    p->tail = job;
    p->n_waiting++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void rd_depth(struct rd_pool *p, size_t *queued, size_t *running)
{
    pthread_mutex_lock(&p->mu);
    *queued = p->n_waiting;
    *running = p->n_running;
    pthread_mutex_unlock(&p->mu);
}

void rd_stop(struct rd_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    /* a read waiting in the database (a lock, a long page) is cancelled, not waited for */
    for (int i = 0; i < p->n_threads; i++) {
        char e[256];
        if (p->cancel[i] && !PQcancel(p->cancel[i], e, sizeof e))
            log_warn("readers", "cannot cancel a read at shutdown: %s", e);
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->n_threads; i++)
        pthread_join(p->threads[i], NULL);
    for (struct rd_job *l = p->head, *n; l; l = n) {
        n = l->next;
        rd_job_free(l);
    }
    for (struct rd_job *l = p->finished, *n; l; l = n) {
        n = l->next;
        rd_job_free(l);
    }
    if (p->done_ev)
        event_free(p->done_ev);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p->threads);
    free(p->cancel);
    free(p);
}
