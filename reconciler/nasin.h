/* The NAS detail of an agent report's NFS flows (docs/design.md "NAS view"): validated with the
 * rest of the report (ingest.c calls nasin_flow for each NFS flow it accepted) and written to
 * nas_windows (sql/011) by nasin_store in the report's own transaction, after its flow_reports
 * row proved new — so a resent report adds nothing, like its flows. */
#ifndef WL_NASIN_H
#define WL_NASIN_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "ingest.h"
#include "jsonv.h"

struct nas_batch;

/* The members of one NFS flow one_flow has already validated. */
struct nasin_flow_args {
    const char *ws_text; /* the report's window start, RFC 3339 */
    const char *host;
    const char *server; /* address text as received (no port) */
    long port;
    const char *export_path, *op, *workflow, *user, *program; /* NULL: absent */
    const char *ns, *pod, *container_name; /* the owner's Kubernetes identity; NULL: absent */
    uint64_t bytes, ops;
};

/* Checks flow f's own NAS members — "errors" (a count) and "latency_us" ({"count", "buckets":
 * [[lower, count], ...]}, llhist_json.h: each lower a bucket's lower bound, increasing, counts
 * summing to "count") — and appends the row to *nb (allocated on first use). 0, or -1 with e filled
 * (422 and the member's path, or 500). */
int nasin_flow(struct nas_batch **nb, const struct jv *f, long idx, const struct nasin_flow_args *a,
               struct ingest_error *e) __attribute__((warn_unused_result));
size_t nasin_rows(const struct nas_batch *nb);
void nasin_free(struct nas_batch *nb);
/* Adds the batch's rows to nas_windows inside the caller's transaction. 0, or -1 with err. */
int nasin_store(PGconn *db, const struct nas_batch *nb, int window_seconds, char *err,
                size_t errlen) __attribute__((warn_unused_result));

#endif
