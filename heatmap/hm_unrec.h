/* Host pairs behind unexplained bytes: the routers' sampled flows of a site pair
 * (flow_samples, one exporter per pair and window: the one with the most samples, so a flow
 * crossing two exporting routers counts once) matched per window against what agents reported
 * for the same (source, destination, protocol, destination port):
 *   recorded_by "none"  neither end's agent reported it (hosts without an agent);
 *               "src"/"dst"/"both" an agent did; such a pair is listed only when the agents'
 *               bytes (payload, as IP bytes: / ratio_without_packets) fall below the flow
 *               estimate's lower bound (a mis-attributed or dropped flow: "under_reported").
 * Each row carries the estimate with its 95% interval (hm_unrec_interval) and whether the port is a
 * service/NFS port. Read by GET /api/v1/unrecorded (reconciler/unrec.c), the cell page, the gap
 * alert's summary and the weekly report. */
#ifndef WL_HM_UNREC_H
#define WL_HM_UNREC_H

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "hm_status.h"

#define HM_UNREC_PANEL_ROWS 10

struct hm_unrec_row {
    char src_addr[INET6_ADDRSTRLEN], dst_addr[INET6_ADDRSTRLEN];
    int proto, dst_port;
    double estimated_bytes, low_bytes, high_bytes;
    uint64_t samples;
    char recorded_by[8];   /* "none", "src", "dst", "both" */
    double recorded_bytes; /* the agents' bytes as IP bytes */
    bool service_port;
    int windows; /* windows the pair appeared in */
};

/* The 95% interval of an estimate x with variance v (pollers/README.md "Flow samples"):
 * n = x^2/v effective samples, Wilson-Hilferty bounds of a Poisson count n scaled by x/n;
 * v == 0 (unsampled) gives [x, x]. */
void hm_unrec_interval(double x, double v, double *lo, double *hi);

/* Unexplained pairs of src_site -> dst_site over windows starting in [from_us, to_us), largest
 * estimate first, at most limit; device (NULL = every exporter) keeps one exporter's view.
 * *rows malloc'd (free()). 0 or -1 with err. */
int hm_unrec_query(PGconn *db, const struct cfg *cfg, const char *src_site, const char *dst_site,
                   const char *device, int64_t from_us, int64_t to_us, size_t limit,
                   struct hm_unrec_row **rows, size_t *n, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* "10.1.0.5 -> 10.2.0.7 tcp/2049 ~1.2 GB [1.1-1.3 GB], no agent" for an alert summary; empty
 * when the pair has no sampled flows. */
void hm_unrec_describe(const struct hm_unrec_row *r, char *out, size_t len);

/* The cell page's panel: the top unexplained pairs of src -> dst in [from_us, to_us) (those no
 * agent recorded first, then the under-reported ones, each largest first) with
 * estimate, interval, samples, who recorded them and their share of the cell's gap (t). Writes
 * nothing when the pair has no sampled flows. 0 or -1 with err. */
int hm_unrec_panel(struct evbuffer *out, PGconn *db, const struct cfg *cfg, const char *src,
                   const char *dst, int64_t from_us, int64_t to_us, const struct hm_totals *t,
                   char *err, size_t errlen) __attribute__((warn_unused_result));

/* Appends "; top unexplained pair (sampled flows): DESCRIPTION, 97.3 % of the gap" to summary
 * (len bytes in all) when src -> dst has one in [from_us, to_us) (the largest no agent recorded,
 * else the largest under-reported one); else leaves it unchanged (also
 * on errors). Both the pair's bytes and the gap are taken over the windows of the range that have
 * a cell and sampled flows (the flows of the newest window may still be on their way); the share
 * scales the flows' IP bytes to payload by the cells' payload/observed, as the cell page does. */
void hm_unrec_note(PGconn *db, const struct cfg *cfg, const char *src, const char *dst,
                   int64_t from_us, int64_t to_us, char *summary, size_t len);

#endif
