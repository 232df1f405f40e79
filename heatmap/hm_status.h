/* How the seven cell statuses (common/cell_status.h: the one definition, with the rule) look:
 * names, colours, the letter and fill pattern that make them readable without colour; and the
 * rule that gives an aggregate of several windows a status. */
#ifndef WL_HM_STATUS_H
#define WL_HM_STATUS_H

#include <stdint.h>

#include "cell_status.h"
#include "config.h"
#include "hm_fmt.h"

struct hm_status_info {
    const char *name;    /* as stored in heatmap_cells.status: "ok", "no_counter" */
    const char *label;   /* for people: "no counter" */
    char letter;         /* one ASCII letter shown in every cell and in the legend */
    const char *fill;    /* cell colour (CSS hex) */
    const char *ink;     /* text colour readable on fill */
    const char *pattern; /* SVG pattern id drawn over fill, "" for none */
    const char *ansi;    /* SGR parameters for a terminal cell: "30;42" */
};

const struct hm_status_info *hm_status_info(enum cell_status s);
/* Status from its stored name; CELL_NONE when unknown (cell_status_parse). */
enum cell_status hm_status_parse(const char *name);
/* One sentence explaining the status, with the configured thresholds; written to buf. */
const char *hm_status_meaning(enum cell_status s, const struct cfg *cfg, char *buf, size_t len);

/* Sums of heatmap_cells rows for one pair over a span. */
/* Sums over windows: the byte sums and seconds are those of the windows that are not incomplete
 * (sql/026, wl_known); n_windows and n_status count every window. */
struct hm_totals {
    int64_t observed; /* observed_bytes (octets on the wire) */
    int64_t payload;  /* observed_payload_bytes */
    int64_t attributed;
    int64_t socket, nfs, service;
    int64_t unattributed;
    int64_t seconds; /* sum of window_seconds (of the known windows) */
    int n_windows;
    int n_status[CELL_N_STATUS];
};

/* The status of an aggregate: the stored status when it is one window; else no_counter when every
 * window was, incomplete when more than 10% of the windows were or when no window with a counter
 * is complete, and otherwise the cell rule (cell_status_of) on the sums, which are those of the
 * complete windows (idle threshold: min_gap_bytes per complete window with a counter). cfg may be
 * NULL (defaults). */
enum cell_status hm_status_of_totals(const struct hm_totals *t, enum cell_status single,
                                     const struct cfg *cfg);
/* Adds b's sums and status counts to a (two spans, or two pairs of a group). */
void hm_totals_add(struct hm_totals *a, const struct hm_totals *b);
/* The windows the sums are of: n_windows less the incomplete ones. */
int hm_totals_known(const struct hm_totals *t);
/* One of t's byte sums formatted (hm_fmt_bytes), or "unknown" when every window of t is
 * incomplete: the sums leave those out, so their 0 would be invented. */
char *hm_totals_bytes(const struct hm_totals *t, int64_t bytes, char buf[HM_FMT_LEN]);
/* attributed / payload, or NAN when payload <= 0. */
double hm_totals_coverage(const struct hm_totals *t);

#endif
