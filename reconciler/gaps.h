/* Seq gaps per agent (sql/005_resilience.sql): every newly stored agent report records its spool
 * drop counter and lets PostgreSQL recompute the missing seqs around it, plus the span the agent
 * says it lost; the rows feed the cell page and /metrics. */
#ifndef WL_GAPS_H
#define WL_GAPS_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "ingest.h"
#include "pgc.h"

/* The statement recording a report's gaps, run inside the report's transaction after its
 * flow_reports row was inserted: store.c sends it in one pipeline with the COMMIT (pgc_pipeline).
 * Fills *st, whose params live in *g (which must outlive the statement); its first_value is the
 * number of gap rows recorded. */
struct gaps_params {
    char wsec[16], spool[24], from[40], to[40];
    const char *p[9];
};
void gaps_stmt(const struct ingest_batch *b, int window_seconds, struct gaps_params *g,
               struct pgc_stmt *st);

/* Appends the gap gauges kept in PostgreSQL (every reconciler shows the same numbers):
 * wanledger_agent_gaps{reason}, wanledger_agent_gap_reports_missing,
 * wanledger_agent_gap_spool_dropped_reports, wanledger_agent_gap_seconds{reason}. */
void gaps_render_metrics(PGconn *db, struct evbuffer *out);

#endif
