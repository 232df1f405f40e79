/* One statement to ClickHouse over its HTTP interface ($.analytics.clickhouse, cfg_analytics.c),
 * for every module that talks to it: the raw-flow store and its flusher (reconciler/chstore.c)
 * and the heatmap pages that read raw flows in ClickHouse mode (heatmap/hm_chflows.c). */
#ifndef WL_CHHTTP_H
#define WL_CHHTTP_H

#include <stddef.h>

#include "config.h"
#include "httpc.h"

/* POST body = sql; or with data (an INSERT … FORMAT), sql in the URL (?query=, percent-encoded)
 * and data[0..len) alone as the body, not copied. url_params: settings
 * "k=v&k2=v2" or NULL. 0 on HTTP 200 (resp holds the answer; free it with httpc_response_free),
 * -1 with err ("clickhouse: …" and the server's first message line) otherwise; resp is then
 * empty. */
int chhttp_exec(const struct cfg_clickhouse *ch, const char *sql, const char *data, size_t len,
                const char *url_params, struct httpc_response *resp, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* A query whose answer is handed to sink(ctx, piece, len) as it arrives (httpc_req.sink), not
 * kept: for answers too large to hold twice. 0 when the whole answer arrived with HTTP 200, -1
 * with err otherwise (an error status with the server's first message line, a truncated answer,
 * or sink's non-zero return: err then says the receiver stopped it). */
int chhttp_stream(const struct cfg_clickhouse *ch, const char *sql, const char *url_params,
                  int (*sink)(void *ctx, const char *data, size_t len), void *ctx, char *err,
                  size_t errlen) __attribute__((warn_unused_result));

#endif
