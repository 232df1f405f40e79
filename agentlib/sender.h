/* Delivery of window reports: the agent's side of the one delivery path (common/deliver.h):
 * every report goes to the bounded on-disk spool first (or, when the spool cannot be written,
 * waits in a bounded memory queue) and a sender thread posts them in seq order, compressed,
 * under the common retry policy, so the window timer never waits on the network. --stdout
 * writes one JSON line per report instead. */
#ifndef WL_SENDER_H
#define WL_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "deliver.h"

struct sender_opts {
    const char *url;       /* full URL of POST /v1/attributions; NULL with out set */
    const char *token;     /* bearer token or NULL */
    const char *spool_dir; /* required with url */
    uint64_t spool_max_bytes;
    int timeout_ms;
    enum wl_compress compress;
    struct httpc_tls tls;
    FILE *out; /* --stdout: one JSON line per report, no spool */
};

struct sender_stats {
    uint64_t sent;     /* reports the reconciler accepted (or lines written) */
    uint64_t rejected; /* reports the reconciler refused as invalid (400/413/422), quarantined */
    uint64_t failures; /* delivery attempts that failed (transport, 5xx, held 4xx) */
    size_t spooled;    /* reports waiting now (spool and memory) */
    uint64_t spool_dropped;
    int last_status;
};

struct sender;

struct sender *sender_new(const struct sender_opts *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Stops the sender thread after trying for a few seconds to deliver what waits. */
void sender_free(struct sender *s);

/* Queues one report (never blocks on the network). Returns 0, or -1 when it could not be
 * queued (err filled). */
int sender_submit(struct sender *s, const char *body, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void sender_stats(const struct sender *s, struct sender_stats *st);
/* The delivery module's /metrics families (nothing in --stdout mode). */
void sender_metrics(const struct sender *s, FILE *f);

#endif
