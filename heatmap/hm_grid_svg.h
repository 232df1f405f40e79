/* The heatmap grid as SVG: one <g class="cell"> per site pair with data-src, data-dst,
 * data-status and data-coverage, the status letter and pattern, coverage, observed and
 * unattributed volume, a 24-hour strip, and a legend. Used inline by the page and standalone by
 * `wanledger heatmap --format svg`. */
#ifndef WL_HM_GRID_SVG_H
#define WL_HM_GRID_SVG_H

#include <event2/buffer.h>
#include <stdbool.h>

#include "config.h"
#include "hm_grid.h"

struct hm_svg_opts {
    const char *cell_href; /* base of the drill-down link ("/heatmap/cell"); NULL: no links */
    bool standalone;       /* XML declaration and a caption line: a file of its own */
    const struct cfg *cfg; /* thresholds for the legend; may be NULL */
};

void hm_grid_svg(struct evbuffer *out, const struct hm_grid *g, const struct hm_svg_opts *o);
/* <defs> with the status patterns (ids as in hm_status_info()->pattern). */
void hm_svg_defs(struct evbuffer *out);
/* A small inline <svg> swatch of a status: its fill, pattern and letter. */
void hm_svg_swatch(struct evbuffer *out, enum cell_status s, int w, int h);
/* What the grid shows, for titles: "window 2026-11-29 18:53 UTC (60 s)". */
const char *hm_grid_caption(const struct hm_grid *g, char *buf, size_t len);

#endif
