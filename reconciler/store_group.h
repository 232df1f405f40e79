/* Grouped commit of agent reports (docs/design.md "Grouped commit of agent reports"): when several
 * parsed /v1/attributions reports wait, one ingest worker writes them in ONE transaction — their
 * flow_reports rows (ON CONFLICT DO NOTHING decides which are fresh; a resend inside the group or
 * of a stored report adds nothing), ONE COPY per day partition of the fresh reports' flows (or,
 * with ClickHouse, one outbox row each), ONE window mark for all their windows (sorted: the same
 * lock order everywhere), the seq gaps per fresh report, ONE COMMIT — instead of one transaction
 * and one COPY each: at 1,000 flows a report the cost is per COPY and per transaction
 * (BENCHMARKS.md). Every report stays all-or-nothing: when the group's transaction fails (any
 * error: a constraint, a deadlock, a lost connection) it is rolled back and every report is
 * written again alone (store_write), so only the one that fails on its own fails. Nothing is
 * answered before its COMMIT: the caller replies after store_write_group returned. */
#ifndef WL_STORE_GROUP_H
#define WL_STORE_GROUP_H

#include <event2/buffer.h>
#include <stdbool.h>
#include <stddef.h>

#include "chstore_block.h"
#include "ingest.h"
#include "store.h"

/* Bounds of one group, so that a group's transaction stays short (the workers take what is
 * already queued, up to these; they never wait for more). */
#define SG_MAX_REPORTS 16
#define SG_MAX_ROWS    32768

struct sg_item {
    const struct ingest_batch *b; /* in */
    /* in, optional (zeroed when none): b's ClickHouse block, built by store_group_prepare where
     * b was parsed, so that the group's writer does not compress every member's flows itself;
     * taken and freed by store_write_group */
    struct chblock blk;
    struct store_result res; /* out, as store_write fills it */
    int rc;                  /* out: 0 stored (or a resend), -1 not stored (err) */
    char err[512];
};

/* Whether b may be written in a group: an agent report without NAS rows (nasin.h: those add to
 * shared nas_windows rows, whose lock order across several reports the group does not control;
 * they are rare and stay on the one-report path). */
bool store_groupable(const struct ingest_batch *b);

/* With ClickHouse configured, builds b's outbox block (chstore_block.h) into *blk for
 * sg_item.blk; leaves it empty otherwise, for a report without flows, or out of memory (the
 * writer then builds it). */
void store_group_prepare(const struct cfg *cfg, const struct ingest_batch *b, struct chblock *blk);

/* Writes it[0..n) (each store_groupable) and fills every item's res, rc and err exactly as
 * store_write would for it alone in this order. Reports of an agent already in the group with
 * another seq are written alone after the group (the seq-gap bookkeeping of a report must not see
 * a later report of its agent that is not committed yet); exact resends (same agent_id, seq and
 * window) stay in the group and store nothing. n == 1 is store_write. */
void store_write_group(struct store *st, struct sg_item *it, size_t n);

/* Prometheus lines: wanledger_ingest_commit_reports (histogram of reports per ingest
 * transaction of agent reports) and wanledger_ingest_group_fallbacks_total (groups rolled back
 * and written again one report at a time). */
void store_group_metrics(struct evbuffer *out);

#endif
