/* The heatmap page: span navigation, totals, the grid SVG with its legend, and the open alerts
 * beside it. Served at GET /heatmap and written by `wanledger heatmap --format html`. */
#ifndef WL_HM_HEATMAP_HTML_H
#define WL_HM_HEATMAP_HTML_H

#include <event2/buffer.h>

#include "config.h"
#include "hm_fleet.h"
#include "hm_grid.h"

/* base: URL prefix of the pages ("" when served, "http://host:7070" in a file, NULL: no links
 * at all, for a file with no server to point at). */
void hm_heatmap_html(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg,
                     const char *base);
/* The same with the fleet view's filter (hm_fleet.h; NULL: none): more than
 * HM_FLEET_MATRIX_MAX_SITES sites or a filter show site groups and a pair list, not the matrix. */
void hm_heatmap_html_opts(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg,
                          const char *base, const struct hm_fleet_opts *fo);
/* The open-alerts list (<ul>), linked to the cell pages when base is not NULL. */
void hm_alerts_html(struct evbuffer *out, const struct hm_alert *a, size_t n, const char *base,
                    int64_t now_us);

#endif
