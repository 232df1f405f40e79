/* Who used a site pair over a time range (`wanledger top`, GET /api/v1/top): bytes per source,
 * workflow, user, program and Kubernetes namespace/pod/container ("" outside pods;
 * sql/015_kube_owner.sql) from attribution_rollup, against the observed payload of
 * heatmap_cells, and what stays unattributed. */
#ifndef WL_TOP_H
#define WL_TOP_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stdint.h>
#include <stdio.h>

struct top_row {
    char *source, *workflow, *user, *program;
    char *ns, *pod, *container; /* "" outside pods */
    uint64_t bytes;
};

struct top_result {
    char *src, *dst;
    int64_t from_us, to_us; /* [from, to) of window starts */
    int window_seconds;
    uint64_t windows;                /* heatmap cells of the pair in the range */
    uint64_t incomplete_windows;     /* of those, incomplete: left out of every figure below */
    uint64_t observed_payload_bytes; /* sum over the complete cells */
    uint64_t attributed_bytes;
    uint64_t unattributed_bytes; /* sum of the cells' positive gaps */
    uint64_t other_bytes;        /* attributed bytes of the rows beyond the limit */
    size_t n_rows;
    struct top_row *rows; /* bytes descending */
};

/* Fills r for the pair src -> dst and window starts in [from_us, to_us), at most limit rows.
 * 0, or -1 with err filled. */
int top_query(PGconn *db, const char *src, const char *dst, int64_t from_us, int64_t to_us,
              int window_seconds, size_t limit, struct top_result *r, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void top_result_free(struct top_result *r);
/* Share of bytes in the pair's traffic: of the observed payload when there is one, else of what
 * was attributed. 0 when both are 0. */
double top_share(const struct top_result *r, uint64_t bytes);
void top_print(FILE *f, const struct top_result *r);
void top_json(struct evbuffer *out, const struct top_result *r);

#endif
