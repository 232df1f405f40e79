/* The read API of `wanledger reconcile` (DESIGN.md "HTTP API"): GET /api/v1/cells?from=&to=
 * and GET /api/v1/top?src=&dst=&from=&to=, JSON from PostgreSQL. */
#ifndef WL_API_H
#define WL_API_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stdint.h>

#include "config.h"

/* Default and longest span a request may cover. */
#define API_DEFAULT_SPAN_S 3600
#define API_MAX_SPAN_S     (7 * 86400)

/* query: raw query string (NULL when none). Writes JSON to out and returns the HTTP status: 200,
 * 400 ({"error","path"} naming the parameter) or 500. */
int api_cells(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out);
int api_top(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out);

struct evkeyvalq;
/* The raw query string (NULL: none) parsed into q (the caller clears it with
 * evhttp_clear_headers): 0, or 400 with the JSON error in out. */
int api_query(const char *query, struct evkeyvalq *q, struct evbuffer *out);
/* The src and dst parameters of q, both configured site names: 0, or 400 with the JSON error
 * (naming the parameter) in out. */
int api_site_pair(const struct evkeyvalq *q, const struct cfg *cfg, const char **src,
                  const char **dst, struct evbuffer *out);

/* A time given as RFC 3339, epoch seconds, or a duration before now_us ("90m", "2h", "7d").
 * 0 or -1. */
int api_parse_time(const char *s, int64_t now_us, int64_t *us) __attribute__((warn_unused_result));

/* from_s/to_s (either NULL: its default) as a range: to defaults to default_to_us, from to an
 * hour before to; from <= to, at most API_MAX_SPAN_S, every step overflow-checked. 0, or -1 with
 * msg and the parameter's name in path. */
int api_range(const char *from_s, const char *to_s, int64_t now_us, int64_t default_to_us,
              int64_t *from, int64_t *to, const char **msg, const char **path)
    __attribute__((warn_unused_result));

#endif
