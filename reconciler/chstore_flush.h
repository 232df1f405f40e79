/* The ClickHouse outbox (docs/design.md "ClickHouse store"): a report committed with
 * flow_reports.ch_pending = true (store.c, when ClickHouse is configured) has its flows in
 * PostgreSQL and not yet confirmed in ClickHouse: as one compressed block in ch_outbox
 * (sql/017, chstore_block.h), or, written before sql/017, as flow_records rows. A background
 * thread ships them: the oldest blocks up to batch_rows flows (whole reports) concatenated into
 * one INSERT … FORMAT TabSeparated, and only after ClickHouse's 200 deletes those blocks and
 * clears their reports' ch_pending in the same transaction; pre-017 reports a window at a time,
 * read back with COPY … TO STDOUT and marked in the same REPEATABLE READ snapshot. A crash or
 * timeout between the two re-sends the block later, which the ReplacingMergeTree key makes
 * harmless (chstore.h); an outage only delays: nothing acknowledged waits anywhere but in
 * PostgreSQL, and ingest never waits for ClickHouse. One flusher at a time across reconcilers
 * (an advisory lock). */
#ifndef WL_CHSTORE_FLUSH_H
#define WL_CHSTORE_FLUSH_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

struct chflush;

struct chflush_batch {
    size_t reports, rows; /* shipped and marked by this call */
    bool more;            /* a full block went: ship again at once, more is likely waiting */
};

/* Ships one outbox block (at most cfg->clickhouse.batch_rows rows, at least one whole report)
 * and, when there was none or every 16th call, one block of pre-017 reports. 0 with b filled
 * (b->reports 0: nothing pending, or another process flushes), -1 with err (what failed is not
 * marked and is sent again later). */
int chflush_once(PGconn *db, const struct cfg *cfg, struct chflush_batch *b, char *err,
                 size_t errlen) __attribute__((warn_unused_result));
/* Ships blocks until the outbox is empty (`reconcile --once`, tests; the tables must exist:
 * chstore_ensure_schema). 0 or -1 with err. */
int chflush_drain(PGconn *db, const struct cfg *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* A thread that ships the blocks this process's ingest workers committed from memory
 * (chstore_queue.h: no read-back from PostgreSQL; their ch_outbox rows are locked FOR UPDATE
 * before the insert, so a block shipped meanwhile from the table is skipped, and deleted after
 * the 200), and ch_outbox's other blocks (after a restart, a full queue, another process's) with
 * chflush_once every CHFLUSH_PARTIAL_MS, at once again after a full batch. Queued blocks go as
 * soon as batch_rows are queued, or when nothing new came for CHFLUSH_QUIET_MS and the last
 * insert is CHFLUSH_MIN_GAP_MS ago, or when the oldest has waited CHFLUSH_PARTIAL_MS: a steady
 * stream of reports becomes a few large inserts a second rather than one per report (every
 * insert is a ClickHouse part merged later: few large inserts cost ClickHouse half the CPU of
 * many small ones, bench/clickhouse), and the last reports of a burst do not wait a second.
 * After a failure it backs off (0.5 s doubling to 10 s) and logs once per minute. NULL with
 * err. One per process. */
#define CHFLUSH_PARTIAL_MS 1000
#define CHFLUSH_QUIET_MS   100
#define CHFLUSH_MIN_GAP_MS 250
struct chflush *chflush_start(const struct cfg *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void chflush_stop(struct chflush *f);
/* A reconciliation deferred because its window's flows are not all in ClickHouse yet. */
void chflush_note_deferred(void);
/* Prometheus lines: outbox depth from db (reports, flows, windows; of them the ch_outbox blocks,
 * their rows and bytes stored and raw), and this process's counters (rows inserted, failed
 * inserts, deferred reconciliations). */
void chflush_metrics(PGconn *db, struct evbuffer *out);

#endif
