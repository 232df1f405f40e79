/* The site x site grid read from PostgreSQL: one aggregate per (source site, destination site)
 * for the chosen span, a strip of hourly statuses per pair, and the open alerts. Every renderer
 * (HTML page, standalone SVG, terminal) draws from this one structure. */
#ifndef WL_HM_GRID_H
#define WL_HM_GRID_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "hm_span.h"
#include "hm_status.h"

#define HM_STRIP_HOURS 24

struct hm_pair {
    struct hm_totals t;
    enum cell_status status; /* CELL_NONE: no row in the span */
    double coverage;         /* NAN when unknown */
    int n_open_alerts;
    signed char strip[HM_STRIP_HOURS]; /* status per hour, oldest first; CELL_NONE = no rows */
    float strip_coverage[HM_STRIP_HOURS];
};

struct hm_alert {
    int64_t id;
    char kind[16];
    char state[16];
    char *src, *dst, *summary, *circuit;
    int64_t opened_us, resolved_us; /* resolved_us 0 while open */
    int64_t first_window_us, last_window_us;
    int64_t peak_unattributed;
    double peak_ratio; /* NAN when unknown */
};

struct hm_grid {
    size_t n_sites;
    char **sites;          /* configuration order, then any other site found in the data */
    struct hm_pair *pairs; /* n_sites * n_sites, [src * n_sites + dst] */
    struct hm_span span;   /* as resolved: LATEST becomes WINDOW when data exists */
    bool latest;           /* asked for the latest window (the view follows new data) */
    bool has_data;
    int window_seconds;      /* of the (first) window shown */
    int64_t from_us, to_us;  /* the windows summed: [from, to) */
    bool has_prev, has_next; /* single window: neighbours that have rows */
    int64_t prev_us, next_us;
    int64_t strip_from_us; /* start of the strip's first hour */
    struct hm_totals all;  /* every pair together */
    size_t n_alerts;
    struct hm_alert *alerts; /* open alerts, oldest first */
    int64_t generated_us;
};

/* Reads the grid for span. cfg gives the site order and thresholds (may be NULL). 0 or -1. */
int hm_grid_load(PGconn *db, const struct cfg *cfg, const struct hm_span *span,
                 struct hm_grid **out, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void hm_grid_free(struct hm_grid *g);
struct hm_pair *hm_grid_pair(const struct hm_grid *g, size_t src, size_t dst);

/* Reads alerts (any state) of one pair, or every open alert when src is NULL; newest first for a
 * pair. Shared with the cell page. 0 or -1. */
int hm_alerts_load(PGconn *db, const char *src, const char *dst, struct hm_alert **out, size_t *n,
                   char *err, size_t errlen) __attribute__((warn_unused_result));
void hm_alerts_free(struct hm_alert *a, size_t n);

/* Fills t from the columns of a row written by HM_GRID_SUMS_SQL, starting at col. */
void hm_totals_from_row(const PGresult *r, int row, int col, struct hm_totals *t);
/* The aggregate columns hm_totals_from_row reads (16 columns). The byte sums and the seconds
 * leave out the incomplete windows (sql/026, wl_known); the window and status counts count
 * every window. */
#define HM_KNOWN_SUM(col) "coalesce(sum(" col ") FILTER (WHERE wl_known(status)),0)::bigint"
/* clang-format off */
#define HM_GRID_SUMS_SQL                                                                           \
    HM_KNOWN_SUM("observed_bytes") ", " HM_KNOWN_SUM("observed_payload_bytes") ", "                \
    HM_KNOWN_SUM("attributed_bytes") ", " HM_KNOWN_SUM("socket_bytes") ", "                        \
    HM_KNOWN_SUM("nfs_bytes") ", " HM_KNOWN_SUM("service_bytes") ", "                              \
    HM_KNOWN_SUM("unattributed_bytes") ", " HM_KNOWN_SUM("window_seconds") ", "                     \
    "count(*), count(*) FILTER (WHERE status='ok'), count(*) FILTER (WHERE status='warn'), "       \
    "count(*) FILTER (WHERE status='red'), count(*) FILTER (WHERE status='over'), "                \
    "count(*) FILTER (WHERE status='idle'), count(*) FILTER (WHERE status='incomplete'), "         \
    "count(*) FILTER (WHERE status='no_counter')"
/* clang-format on */
#define HM_GRID_SUMS_NCOL 16

#endif
