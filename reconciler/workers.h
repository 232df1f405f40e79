/* Ingest workers: POST bodies are validated and committed by a small pool of threads, each with
 * its own PostgreSQL connection, so one request's JSON is parsed while another's COPY runs in the
 * database; the event loop thread only receives requests and sends the answers. A finished job is
 * handed back to the event loop (event_active, thread-safe after evthread_use_pthreads), which
 * replies: evhttp stays single-threaded.
 * Agent reports are committed in groups (store_group.h): a worker parses one job at a time and
 * puts a parsed report on the pool's ready list; a worker writes the ready reports (up to
 * SG_MAX_REPORTS / SG_MAX_ROWS) in one transaction when no other worker is writing or nothing is
 * left to parse — so while one worker's group is in the database the other parses the next
 * reports, and nothing waits for a group to fill: at low load a report is written alone, as soon
 * as it is parsed. Every job of a group is answered after the group's COMMIT. */
#ifndef WL_WORKERS_H
#define WL_WORKERS_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "body.h"
#include "chstore_block.h"
#include "config.h"
#include "ingest.h"
#include "metrics.h"

#define WK_THREADS   2  /* one per core of the reference machine */
#define WK_MAX_QUEUE 32 /* jobs waiting (to be parsed or written) beyond this: 503 */

struct wk_job {
    struct evhttp_request *req; /* touched only on the event loop thread */
    enum ingest_kind kind;
    enum metrics_endpoint ep;
    const char *path;
    int64_t t0_ns;
    char peer[64];
    char *body; /* owned by the job; as received, still encoded with coding */
    size_t len;
    enum body_coding coding; /* Content-Encoding, decoded by the worker (body.h) */
    bool msgpack;            /* transfers in Fluent Bit's msgpack format (fluent.h) */
    size_t max_body;         /* the endpoint's body limit, which bounds the decoded size too */
    /* the outcome, filled by a worker */
    int status;
    char *reply; /* JSON body, malloc'd */
    bool parsed; /* batch holds the parsed body (an agent report waiting on the ready list) */
    struct ingest_batch batch;
    struct chblock blk; /* with ClickHouse: the report's outbox block, built where parsed */
    struct wk_job *next;
};

/* Called on the event loop thread for every finished job; it replies and frees the job with
 * wk_job_free. */
typedef void (*wk_done_fn)(struct wk_job *job, void *arg);

struct wk_pool;

/* Starts WK_THREADS workers (each connects with cfg->database) and the completion event on base.
 * Needs evthread_use_pthreads() before base was created. NULL with err filled. */
struct wk_pool *wk_start(struct event_base *base, const struct cfg *cfg, struct metrics *m,
                         wk_done_fn done, void *arg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Queues a job (ownership passes to the pool). -1 when the queue is full (the caller keeps it). */
int wk_submit(struct wk_pool *p, struct wk_job *job) __attribute__((warn_unused_result));
/* Finishes the jobs being worked on, joins the threads, and frees every job not yet answered
 * without answering it (the clients see the connection close and resend). */
void wk_stop(struct wk_pool *p);
/* Bodies received and not yet answered: waiting to be parsed, parsed and waiting to be written,
 * and being worked on (for /metrics). */
size_t wk_pending(struct wk_pool *p);
void wk_job_free(struct wk_job *job);

#endif
