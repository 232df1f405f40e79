/* Delivery of flow-sample batches to the reconciler's POST /v1/flowsamples through the one
 * delivery path of agent, poller and ship (common/deliver.h): spooled first (fsync'd) or sent
 * from memory when the spool cannot be written, by a sender thread, in order, compressed, with
 * the common retry policy (no answer/5xx/429/408 retried with backoff and Retry-After; other
 * 4xx held in order; 400/413/422 set aside in SPOOL/rejected/). Batches carry an id, so a
 * resend after a lost answer is not counted twice by the reconciler. */
#ifndef WL_FLOW_SEND_H
#define WL_FLOW_SEND_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"

struct flow_send;

struct flow_send_stats {
    uint64_t posted, refused, spool_dropped;
    size_t spooled;
};

/* url: full URL of POST /v1/flowsamples; token may be NULL; dv: compression and TLS ($.delivery),
 * NULL for the defaults. NULL with err filled. */
struct flow_send *flow_send_new(const char *spool_dir, uint64_t max_bytes, const char *url,
                                const char *token, const struct cfg_delivery *dv, char *err,
                                size_t errlen) __attribute__((warn_unused_result));
/* Queues one batch (copied) and wakes the sender; never blocks on disk or network. 0 or -1
 * (out of memory, err filled: the batch is lost and the caller logs it). */
int flow_send_push(struct flow_send *fs, const char *body, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void flow_send_stats(struct flow_send *fs, struct flow_send_stats *out);
/* The delivery module's /metrics families. */
void flow_send_metrics(struct flow_send *fs, FILE *f);
/* Stops the sender; with drain, first tries for up to drain_ms to post what is spooled. Returns
 * the number of batches left in the spool. Frees fs. */
size_t flow_send_close(struct flow_send *fs, int drain_ms);

#endif
