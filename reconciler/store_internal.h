/* What store.c shares with store_group.c (the grouped commit of agent reports): the store itself
 * and the pieces of the one-report path the group reuses. Not for other modules. */
#ifndef WL_STORE_INTERNAL_H
#define WL_STORE_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chstore_queue.h"
#include "config.h"
#include "pgc.h"

struct store {
    const struct cfg *cfg;
    PGconn *db;
    bool staged;          /* the session's temporary staging tables exist */
    struct chq_held held; /* the outbox blocks for the flusher, queued after COMMIT */
    struct pgc_prep prep; /* the ingest statements prepared on db (store.c, store_group.c) */
};

/* A report's flow_reports row, ON CONFLICT DO NOTHING RETURNING 1: $1..$12 the row
 * (ingest_batch.report), $13 whether ClickHouse is configured (ch_pending for a report with
 * flows). */
extern const char STORE_SQL_REPORT[];
/* Its prepared statement's name (pgc_pipeline_prep: one name, one sql), for both paths. */
#define STORE_SQL_REPORT_NAME "wl_report"

/* Marks as recon_db_mark_done expects: a fresh clock_timestamp() on every mark; the windows are
 * the rows of a CTE w (ws), $1 the window length. */
#define MARK_WINDOWS                                                                               \
    " INSERT INTO window_state (window_start, window_seconds, dirty, last_data_at)"                \
    " SELECT ws, $1::int, true, clock_timestamp() FROM w"                                          \
    " ON CONFLICT (window_start) DO UPDATE SET dirty = true, last_data_at = clock_timestamp()"

/* "WHAT: msg" without the server's trailing newline. */
void store_set_err(char *err, size_t errlen, const char *what, const char *msg);
/* "COPY flow_packed_pYYYYMMDD (the flow_packed columns) FROM STDIN (FORMAT binary)" for the day
 * of the window. */
void store_copy_target_sql(int64_t window_start_us, char *out, size_t len);
struct flow_pack;
struct ingest_batch;
/* Appends b's flows to p as packed rows (flow_pack.h), after the binary COPY header when header
 * and before the trailer when trailer. 0, or -1 with err ("flow_records: flow record 3: …"). */
int store_pack_flows(struct flow_pack *p, const struct ingest_batch *b, bool header, bool trailer,
                     char *err, size_t errlen);
/* With ClickHouse, a report with flows: r, its flow_reports row ($1..$12, ingest_batch.report;
 * ON CONFLICT DO NOTHING, so r is empty for a resend), and o, its flows as one ch_outbox row
 * (sql/017_ch_outbox.sql; $13..$16 as store_outbox_params sets them, the block binary), written
 * only with r. store.c's SQL_REPORT_OUTBOX adds the window's mark, store_group.c's SQL_ROW_OUTBOX
 * leaves it to the group. */
#define STORE_SQL_ROW_OUTBOX_CTES                                                                  \
    "WITH r AS (INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds,"      \
    " dropped_events, sampling_k, sampling_threshold, flows_seen, n_flows, spool_dropped_reports," \
    " local_sites, ch_pending) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,"              \
    " $12::text[], true) ON CONFLICT DO NOTHING RETURNING 1),"                                     \
    " o AS (INSERT INTO ch_outbox (agent_id, seq, window_start, n_rows, raw_bytes, coding, block," \
    " format) SELECT $1, $2, $4, $13::int, $14::int, $15, $16::bytea, 'native' FROM r RETURNING "  \
    "id)"
struct chblock;
/* A report's outbox row parameters after its INGEST_REPORT_PARAMS (sql/017_ch_outbox.sql: n_rows,
 * raw_bytes, coding, and the block as a binary parameter) into p, lens and fmts at
 * INGEST_REPORT_PARAMS..+3, the numbers' text in nrows and raw; blk is built from b's COPY text
 * unless it holds a block already. 0, or -1 with err when the block cannot be built. */
int store_outbox_params(const struct ingest_batch *b, struct chblock *blk, char nrows[24],
                        char raw[24], const char **p, int *lens, int *fmts, char *err,
                        size_t errlen);
/* Makes sure the day partitions of days[0..n) (sorted, distinct; days since the epoch) exist,
 * in their own transactions (a rollback of the caller's must not undo them). 0 or -1 with err. */
int store_ensure_days(struct store *st, const int64_t *days, size_t n, char *err, size_t errlen);

#endif
