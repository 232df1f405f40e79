/* The NAS view's read side (docs/design.md "NAS view"): per NAS instance (NFS server address,
 * port, export) over the windows starting in [from, to), from nas_windows (sql/011): ops, bytes,
 * errors, IOPS, throughput and latency quantiles with their sample count, computed from the
 * log-linear buckets (common/llhist.h) merged here, rows streamed from two ordered queries
 * (merging 10^4 arrays in SQL took ~0.1 ms each) — per window, per operation and per owner (host,
 * workflow, user, program, Kubernetes namespace/pod/container). GET /api/v1/nas and the
 * /heatmap/nas page (reconciler/api_nas.c) print it. */
#ifndef WL_HM_NAS_H
#define WL_HM_NAS_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "llhist.h"

#define HM_NAS_MAX_OWNERS 100 /* owners listed per instance (the busiest by ops) */

struct hm_nas_query {
    const char *server;      /* NULL: every server; else its address (canonical text) */
    const char *export_path; /* NULL: every export */
    int64_t from_us, to_us;  /* window starts in [from, to) */
};

/* Latency quantiles (microseconds): the upper bound of the bucket holding rank ceil(q * count)
 * (llhist_quantile: at most 1/16 above the true value, 1 us below 16 us); UINT64_MAX for the
 * overflow bucket (>= 2^24 us); all 0 when count is 0. */
struct hm_nas_lat {
    uint64_t count, p50, p99, p999, max;
};

/* ops, bytes, errors (out of detail_ops, the ops whose detail the agent kept) and latency. */
struct hm_nas_figures {
    uint64_t ops, bytes, errors, detail_ops;
    struct hm_nas_lat lat;
};

struct hm_nas_owner {
    const char *host, *workflow, *user, *program, *namespace_, *pod, *container;
    struct hm_nas_figures f;
};

struct hm_nas_window {
    int64_t start_us;
    struct hm_nas_figures f;
};

struct hm_nas_instance {
    const char *server, *export_path;
    int port;
    struct hm_nas_figures total, read, write;
    struct llhist hist, read_hist, write_hist; /* the span's merged buckets */
    struct hm_nas_window *windows;             /* newest first */
    size_t n_windows, cap_windows;
    struct hm_nas_owner *owners; /* by ops, descending; at most HM_NAS_MAX_OWNERS */
    size_t n_owners, n_owners_all, cap_owners;
};

struct hm_nas_result {
    struct hm_nas_query q;
    int window_seconds;
    int64_t span_seconds; /* window starts in [from, to) times window_seconds: IOPS = ops / span */
    struct hm_nas_instance *inst; /* by ops over the span, descending; owns every string */
    size_t n_inst, cap_inst;
};

int hm_nas_run(PGconn *db, const struct cfg *cfg, const struct hm_nas_query *q,
               struct hm_nas_result *r, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void hm_nas_result_free(struct hm_nas_result *r);
/* Parses a PostgreSQL bigint[] text ("{0,3,1}") into h (element k = bucket k). -1 when it is not
 * one, or has more than LLHIST_SLOTS elements. */
int hm_nas_parse_buckets(const char *text, struct llhist *h);
void hm_nas_json(struct evbuffer *out, const struct hm_nas_result *r);
/* `wanledger nas`: the same as text for a terminal. */
void hm_nas_print(struct evbuffer *out, const struct hm_nas_result *r);
/* "which pods and workflows load this filer right now": instances, then per instance its owners
 * with the latency they see, its operations and its windows. */
void hm_nas_page(struct evbuffer *out, const struct hm_nas_result *r);

#endif
