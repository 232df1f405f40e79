/* The dependency map over HTTP and the command line (docs/design.md "Dependency map"):
 * GET /api/v1/deps?workflow=|program=|user=&from=&to=&move_to= (JSON), the /heatmap/deps page
 * with the same parameters, and `wanledger deps`. The read side itself is heatmap/hm_deps.h. */
#ifndef WL_API_DEPS_H
#define WL_API_DEPS_H

#include <event2/buffer.h>
#include <libpq-fe.h>

#include "config.h"

/* Return the HTTP status (200, 400 with {"error","path"}, 500); *content_type is set. */
int api_deps(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
             const char **content_type);
int api_deps_page(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                  const char **content_type);
/* `wanledger deps ...`: 0, 1 (failure), 2 (usage). */
int api_deps_cmd(const struct cfg *cfg, int argc, char **argv);

#endif
