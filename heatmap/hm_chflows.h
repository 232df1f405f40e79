/* The heatmap's raw-flow reads in ClickHouse mode (docs/design.md "ClickHouse store"): with
 * analytics.clickhouse configured the flow records live in ClickHouse, not in PostgreSQL's
 * flow_records, so the pages that compare them with the routers' sampled flows (hm_unrec.c: the
 * unrecorded-traffic panel and API; hm_report.c: "Hosts behind unexplained bytes") ask
 * ClickHouse for the per-connection sums they need and hand them to their PostgreSQL query as a
 * CTE named flow_records, which shadows the table: the query text is the same on both paths. */
#ifndef WL_HM_CHFLOWS_H
#define WL_HM_CHFLOWS_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

/* "flow_records AS (...), " for the front of a WITH list: the rows of the JSON array in
 * parameter $n (hm_chflows_json), with the columns the heatmap reads — window_start, source,
 * proto, local_addr, local_port, remote_addr, remote_port, tx_bytes, rx_bytes (sums per
 * connection side and window, which the queries sum again). */
#define HM_CHFLOWS_CTE(n)                                                                          \
    "flow_records AS (SELECT ws AS window_start, source, proto, local_addr, local_port,"           \
    " remote_addr, remote_port, tx AS tx_bytes, rx AS rx_bytes FROM json_to_recordset($" #n        \
    "::json) AS t(ws timestamptz, source text, proto text, local_addr inet, local_port int,"       \
    " remote_addr inet, remote_port int, tx bigint, rx bigint)), "

/* The flows of [from_us, to_us) whose local or remote address is one that addr_sql (run on db
 * with params[0..n)) lists as text, summed in ClickHouse per window, source, proto and both
 * endpoints, as a JSON array for HM_CHFLOWS_CTE (malloc'd; "[]" when addr_sql lists none).
 * NULL with err ("clickhouse: …", or the PostgreSQL error). */
char *hm_chflows_json(PGconn *db, const struct cfg_clickhouse *ch, const char *addr_sql, int n,
                      const char *const *params, int64_t from_us, int64_t to_us, char *err,
                      size_t errlen) __attribute__((warn_unused_result));

#endif
