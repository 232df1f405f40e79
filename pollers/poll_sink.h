/* Where samples go: batched on the event loop, then either printed as JSON lines (--stdout) or
 * handed to the one delivery path (common/deliver.h): the bounded on-disk spool, sent in order to
 * the reconciler's POST /v1/counters by a sender thread (so a slow or dead reconciler never stalls
 * polling), directly from memory when the spool cannot be written. */
#ifndef WL_POLL_SINK_H
#define WL_POLL_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "poll_sample.h"

struct event_base;
struct poll_sink;

struct poll_sink_opts {
    const char *poller; /* name in each batch */
    FILE *out;          /* --stdout: JSON lines here, nothing posted; else NULL */
    const char *spool_dir;
    uint64_t spool_max_bytes;
    const char *url;                     /* full URL of POST /v1/counters */
    const char *token;                   /* bearer token, may be NULL */
    int flush_ms;                        /* batch samples for this long (default 1000) */
    int post_timeout_ms;                 /* default 10000 */
    const struct cfg_delivery *delivery; /* compression and TLS; NULL: zstd, system CAs */
};

struct poll_sink *poll_sink_new(struct event_base *base, const struct poll_sink_opts *o, char *err,
                                size_t errlen) __attribute__((warn_unused_result));
/* fn(arg, sample) sees every sample added from now on (the flow collector learns ifIndexes). */
void poll_sink_set_tap(struct poll_sink *sk, void (*fn)(void *arg, const struct poll_sample *s),
                       void *arg);
/* Queues one sample (copied). */
void poll_sink_add(struct poll_sink *sk, const struct poll_sample *s);
/* Moves queued samples into the spool (or prints them) now. */
void poll_sink_flush(struct poll_sink *sk);
/* Flushes, then, when posting, tries to deliver the whole spool once (drain != 0) or just stops
 * the sender. Returns the number of batches left undelivered in the spool. Frees sk. */
size_t poll_sink_close(struct poll_sink *sk, int drain);
/* The delivery module's /metrics families (queue, sends by result, drops); nothing with --stdout.
 */
void poll_sink_metrics(struct poll_sink *sk, FILE *f);

#endif
