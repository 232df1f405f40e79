/* The pages `wanledger reconcile` serves, rendered from PostgreSQL. The reconciler's HTTP server
 * routes GET /heatmap and GET /heatmap/cell here after its own authentication. */
#ifndef WL_HM_PAGES_H
#define WL_HM_PAGES_H

#include <event2/buffer.h>
#include <libpq-fe.h>

#include "config.h"

/* query: the raw query string after '?' (NULL when none). Writes the body to out, sets
 * *content_type (static string) and returns the HTTP status: 200, 400 (bad parameter; body is
 * {"error","path"} JSON and *content_type "application/json"), 404, or 500. */
int hm_page_heatmap(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                    const char **content_type);
int hm_page_cell(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                 const char **content_type);

#endif
