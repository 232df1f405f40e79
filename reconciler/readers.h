/* Readers: the requests that read (pages, APIs, /metrics, /healthz, throttle rules, sampled
 * flows) run on a small pool of threads, each with its own PostgreSQL connection, never on the
 * event loop. A page that takes seconds (a week of 500 sites, a table locked by a migration, a
 * ClickHouse that does not answer) then delays only itself: the loop goes on receiving and
 * answering agent reports. The server copies what a job needs out of the request on the loop;
 * rd_run_fn fills status, content type and body on a reader; rd_done_fn replies on the loop
 * (event_active, thread-safe after evthread_use_pthreads). */
#ifndef WL_READERS_H
#define WL_READERS_H

#include <event2/buffer.h>
#include <event2/http.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define RD_THREADS   2  /* one per core of the reference machine */
#define RD_MAX_QUEUE 64 /* jobs waiting beyond this: 503 */

struct rd_job {
    struct evhttp_request *req; /* touched only on the event loop thread */
    int64_t t0_ns;
    int handler, ep;     /* the server's route: opaque to the pool */
    char *query;         /* URI query, or NULL */
    char *body;          /* request body (NUL-terminated), or NULL */
    size_t len;          /* body length */
    char *path, *coding; /* copied from the request; either may be NULL */
    /* borrowed: static strings or the configuration's (which outlives the server); NULL or set */
    const char *method, *role, *agent_host;
    /* the outcome, filled on a reader */
    int status;
    const char *ct;       /* a static string */
    struct evbuffer *out; /* the answer's body */
    void *data;           /* any other outcome (a PGresult, say), freed by data_free */
    void (*data_free)(void *data);
    struct rd_job *next;
};

/* db: the reader's connection, NULL when the database is unreachable. */
typedef void (*rd_run_fn)(PGconn *db, struct rd_job *job, void *arg);
/* On the event loop thread, for every finished job: replies and frees it with rd_job_free. */
typedef void (*rd_done_fn)(struct rd_job *job, void *arg);

struct rd_pool;

/* Starts n_threads readers (connected lazily with cfg->database) and the completion event on
 * base. One thread runs the jobs in the order they were submitted. NULL with err filled. */
struct rd_pool *rd_start(struct event_base *base, const struct cfg *cfg, int n_threads,
                         rd_run_fn run, rd_done_fn done, void *arg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* A new job with an empty answer buffer (NULL when out of memory). */
struct rd_job *rd_job_new(void);
/* Queues a job (ownership passes to the pool). -1 when the queue is full (the caller keeps it). */
int rd_submit(struct rd_pool *p, struct rd_job *job) __attribute__((warn_unused_result));
/* Lets the readers finish the jobs they hold, joins them, frees every job not yet answered
 * without answering it (evhttp_free then closes those connections). */
void rd_stop(struct rd_pool *p);
/* Reads waiting for a reader and reads a reader is working on (for /metrics). */
void rd_depth(struct rd_pool *p, size_t *queued, size_t *running);
void rd_job_free(struct rd_job *job);

#endif
