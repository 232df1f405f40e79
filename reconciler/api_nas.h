/* The NAS view over HTTP (docs/design.md "NAS view"): GET /api/v1/nas?server=&export=&from=&to=
 * (JSON), the /heatmap/nas page with the same parameters and `wanledger nas`. The read side is
 * heatmap/hm_nas.h. */
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
/* `wanledger nas [--server A] [--export P] [--from T] [--to T] [--json]`: 0, 1, 2 (usage). */
int api_nas_cmd(const struct cfg *cfg, int argc, char **argv);

#endif
