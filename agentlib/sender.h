/* Delivery of window reports: every report enters the bounded on-disk spool first and leaves it
 * only when the reconciler answered 2xx, oldest first, so reports arrive in seq order and a
 * reconciler outage or an agent restart loses nothing (common/spool.h, common/httpc.h). */
#ifndef WL_SENDER_H
#define WL_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct sender_opts {
    const char *url;       /* full URL of POST /v1/attributions; NULL with out set */
    const char *token;     /* bearer token or NULL */
    const char *spool_dir; /* required with url */
    uint64_t spool_max_bytes;
    int timeout_ms;
    FILE *out; /* --stdout: one JSON line per report, no spool */
};

struct sender_stats {
    uint64_t sent;     /* reports the reconciler accepted (or lines written) */
    uint64_t rejected; /* reports the reconciler refused as invalid (4xx), dropped */
    uint64_t failures; /* delivery attempts that failed (connection, 5xx) */
    size_t spooled;    /* reports waiting now */
    uint64_t spool_dropped;
    int last_status;
};

struct sender;

struct sender *sender_new(const struct sender_opts *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void sender_free(struct sender *s);

/* Queues one report and tries to deliver everything queued. Returns 0 when the report is safely
 * queued or delivered, -1 when it could not even be queued (err filled). A delivery failure is
 * not an error here: the report waits; err then says why it waits (empty otherwise). */
int sender_submit(struct sender *s, const char *body, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Tries to deliver what the spool holds (on a timer between windows). Returns how many were
 * delivered; err says why delivery stopped, empty when the spool is empty. */
size_t sender_flush(struct sender *s, char *err, size_t errlen);
void sender_stats(const struct sender *s, struct sender_stats *st);

#endif
