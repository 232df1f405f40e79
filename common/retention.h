/* Retention for every table: raw partitions older than `retention.raw_days` (wl_prune), and the
 * result and bookkeeping tables by their own bounds (wl_prune_results, sql/005_resilience.sql):
 * results (heatmap_cells, attribution_rollup, link_windows, dependency_rollup) after results_days,
 * delivered resolved alerts after alerts_days, agent_gaps after gaps_days, clean window_state rows
 * and the sampled router flows (flow_samples and its batch keys and collector counters) with the
 * raw data; then the owners no result row uses any more (wl_prune_owners, sql/029), and the report
 * tails (agent_report_tail, sql/033) of agents with no report left.
 * Run by `wanledger prune` and by the leading reconciler once a day. */
#ifndef WL_RETENTION_H
#define WL_RETENTION_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define RETENTION_TABLES 13

struct retention_stats {
    int partitions_dropped;
    long long deleted[RETENTION_TABLES]; /* rows, in the order of retention_table_name */
};

const char *retention_table_name(int i);
/* The index of table name in retention_stats.deleted, or -1. */
int retention_table_index(const char *name);

/* Prunes everything older than its bound at now_us; raw_cutoff_us overrides the raw bound
 * (`prune --older-than`) when > 0. 0, or -1 with err. */
int retention_prune(PGconn *db, const struct cfg *cfg, int64_t now_us, int64_t raw_cutoff_us,
                    struct retention_stats *st, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
