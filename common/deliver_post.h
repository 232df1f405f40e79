/* The one delivery policy of our clients (agent, poller, `ship`): how one body is posted
 * (compressed, over TLS where the URL says https), what an answer means, and how long to wait
 * before the next try. common/deliver.h builds the spool and sender thread on top; `ship`, whose
 * log files are its spool, uses this part directly.
 *
 *   2xx                          DELIVER_OK      the body is committed: forget it
 *   transport error, 5xx, 429, 408  DELIVER_RETRY  keep it, retry with capped exponential backoff
 *                                                and jitter, at least Retry-After when given
 *   400, 413, 422                DELIVER_REJECT  this body will never be accepted: keep it aside
 *                                                (the caller quarantines it, logs and counts it)
 *   any other 4xx (401, 403, 404 DELIVER_HOLD    a configuration problem (token, URL): keep the
 *   from a URL typo, 405, ...)                   data in order, retry with backoff, log once per
 *                                                state change
 *   415 while compressing        the body is resent once uncompressed and compression stays off
 *                                (logged once): a reconciler that cannot decode still gets data */
#ifndef WL_DELIVER_POST_H
#define WL_DELIVER_POST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "compress.h"
#include "httpc.h"

enum deliver_class { DELIVER_OK, DELIVER_RETRY, DELIVER_HOLD, DELIVER_REJECT };

/* Counters of one destination, rendered by deliver_counters_render. */
struct deliver_counters {
    uint64_t sends[4];   /* by enum deliver_class */
    uint64_t transport;  /* of sends[DELIVER_RETRY]: no HTTP answer at all */
    uint64_t raw_bytes;  /* bodies before compression (delivered ones) */
    uint64_t wire_bytes; /* the same bodies as sent */
    int last_status;     /* 0 = no answer */
    enum deliver_class state;
};

struct deliver_target {
    const char *name; /* "agent", "poller", "ship": log context */
    const char *url;
    const char *token;
    int timeout_ms; /* default 10000 */
    enum wl_compress compress;
    struct httpc_tls tls;
    int backoff_min_ms, backoff_max_ms; /* defaults 500, 30000 */
    /* kept by deliver_post_once */
    bool compress_refused; /* the server answered 415 to a compressed body */
    struct deliver_counters c;
};

struct deliver_result {
    enum deliver_class cls;
    int status;        /* 0 = transport error */
    int retry_after_s; /* -1 = none */
    char msg[512];     /* why, for logs: "answered 404: ..." or the transport error */
    char *body;        /* the answer's body (malloc'd, may be NULL): deliver_result_free */
};
void deliver_result_free(struct deliver_result *r);

/* Posts body once (compressed unless off or refused). Fills r and counts it in t->c; logs state
 * changes of t (reachable / retrying / held) once each. */
void deliver_post_once(struct deliver_target *t, const char *body, size_t len,
                       struct deliver_result *r);
/* The wait before attempt n+1 after n consecutive failures (n >= 1): min * 2^(n-1) capped at
 * max, with jitter in [d/2, d], and never less than Retry-After (itself capped at 600 s). */
int deliver_backoff_ms(const struct deliver_target *t, unsigned n, int retry_after_s);
/* Prometheus text (HELP and TYPE for every family) of a destination's counters. */
void deliver_counters_render(FILE *f, const struct deliver_counters *c);

#endif
