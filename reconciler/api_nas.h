/* The NAS view over HTTP (docs/design.md "NAS view"): GET /api/v1/nas?server=&export=&from=&to=
 * (JSON) and the /heatmap/nas page with the same parameters. The read side is heatmap/hm_nas.h. */
#ifndef WL_API_NAS_H
#define WL_API_NAS_H

#include <event2/buffer.h>
#include <libpq-fe.h>

#include "config.h"

/* Return the HTTP status (200, 400 with {"error","path"}, 500); *content_type is set. */
int api_nas(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
            const char **content_type);
int api_nas_page(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                 const char **content_type);

#endif
