/* Delivery of flow-sample batches to the reconciler's POST /v1/flowsamples: each batch is
 * pushed into a bounded on-disk spool (common/spool.h, fsync'd) and a sender thread posts the
 * spool in order, keeping a batch on connection errors, 5xx, 401/403/408/429 (retry 0.5 s
 * doubling to 30 s) and dropping it with an error log on other 4xx. Batches carry an id, so a
 * resend after a lost answer is not counted twice by the reconciler. */
#ifndef WL_FLOW_SEND_H
#define WL_FLOW_SEND_H

#include <stddef.h>
#include <stdint.h>

struct flow_send;

struct flow_send_stats {
    uint64_t posted, refused, spool_dropped;
    size_t spooled;
};

/* url: full URL of POST /v1/flowsamples; token may be NULL. NULL with err filled. */
struct flow_send *flow_send_new(const char *spool_dir, uint64_t max_bytes, const char *url,
                                const char *token, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Spools one batch (copied) and wakes the sender. 0 or -1 (err filled: the batch is lost and
 * the caller logs it). */
int flow_send_push(struct flow_send *fs, const char *body, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void flow_send_stats(struct flow_send *fs, struct flow_send_stats *out);
/* Stops the sender; with drain, first tries for up to drain_ms to post what is spooled. Returns
 * the number of batches left in the spool. Frees fs. */
size_t flow_send_close(struct flow_send *fs, int drain_ms);

#endif
