/* The drill-down page of one site pair (GET /heatmap/cell?src=&dst=&window= or &from=&to=):
 * observed vs attributed per source over time, the top workflows, users, programs and hosts,
 * the unattributed remainder, the circuits and counters behind the observed figure, and the
 * pair's alerts. */
#ifndef WL_HM_CELL_H
#define WL_HM_CELL_H

#include <event2/buffer.h>
#include <libpq-fe.h>

#include "config.h"
#include "hm_span.h"

/* Renders into out and returns the HTTP status: 200, 404 (the pair has no rows in the span;
 * err explains) or 500 (database error in err). base as in hm_heatmap_html(). */
int hm_cell_html(struct evbuffer *out, PGconn *db, const struct cfg *cfg, const char *src,
                 const char *dst, const struct hm_span *span, const char *base, char *err,
                 size_t errlen);

#endif
