/* GET /api/v1/unrecorded?src=&dst=&from=&to=[&device=] (reader role): the host pairs behind a
 * site pair's unexplained bytes, from the routers' sampled flows matched against the agents
 * (heatmap/hm_unrec.h), as JSON rows {src_addr, dst_addr, proto, dst_port, estimated_bytes,
 * low_bytes, high_bytes, samples, recorded_by, recorded_bytes, status, service_port, windows},
 * largest estimate first, at most 100. */
#ifndef WL_UNREC_H
#define WL_UNREC_H

#include <event2/buffer.h>
#include <libpq-fe.h>

#include "config.h"

/* JSON to out; returns the HTTP status (200, 400 naming the parameter, 500). */
int unrec_api(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out);

#endif
