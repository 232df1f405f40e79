/* The ClickHouse store of raw flow records (docs/design.md "ClickHouse store"), configured by
 * $.analytics.clickhouse (common/cfg_analytics.c). PostgreSQL stays the store ingest commits to
 * and acknowledges from: a report's flows are committed as one compressed block in its outbox
 * (store.c, chstore_block.h, sql/017) and reach ClickHouse later, from the outbox flusher
 * (chstore_flush.c); the reconciler sums a window's connections there (recon_db_ch.c) once
 * every report of the window has arrived.
 *
 * Tables (ClickHouse 18.16 subset, also valid on current releases), columns from flow_row.h:
 *   DB.flow_records          ReplacingMergeTree, PARTITION BY toYYYYMMDD(window_start),
 *                            ORDER BY (window_start, agent_id, seq, idx): a row inserted twice
 *                            (an INSERT retried after a timeout, a replay after a crash) is
 *                            one row for every query that reads with FINAL — all of ours do.
 *   with "cluster": DB.flow_records_local is that table on every shard and DB.flow_records a
 *   Distributed table over the cluster, sharded by cityHash64(agent_id, seq) so both copies of
 *   a row land on one shard (where FINAL collapses them). Retention drops whole day partitions
 *   (ALTER TABLE … DROP PARTITION), no TTL (18.16 has none). */
#ifndef WL_CHSTORE_H
#define WL_CHSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "httpc.h"

/* Runs one statement over the HTTP interface: common/chhttp.h's chhttp_exec (POST body = sql,
 * then for INSERT … FORMAT a newline and data[0..len); url_params "k=v&k2=v2" or NULL). 0 on
 * HTTP 200 (resp holds the answer; free it with httpc_response_free), -1 with err
 * ("clickhouse: …" and the server's first message line) otherwise; resp is then empty. */
int chstore_exec(const struct cfg_clickhouse *ch, const char *sql, const char *data, size_t len,
                 const char *url_params, struct httpc_response *resp, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Creates the database and tables when missing (on the configured node; with a cluster, on
 * that node too — run the same on every shard, see README). 0 or -1 with err. */
int chstore_ensure_schema(const struct cfg_clickhouse *ch, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Retention without TTL: drops the day partitions (toYYYYMMDD) older than keep_days before
 * now_us from the table that holds the rows (the local one: on the configured node). *dropped
 * gets their number. 0 or -1 with err. */
int chstore_prune(const struct cfg_clickhouse *ch, int keep_days, int64_t now_us, int *dropped,
                  char *err, size_t errlen) __attribute__((warn_unused_result));
/* The table every read and write goes through: "DB.flow_records" (static buffer per thread). */
const char *chstore_table(const struct cfg_clickhouse *ch);

#endif
