/* Seq gaps per agent (sql/005_resilience.sql): every newly stored agent report records its spool
 * drop counter and lets PostgreSQL recompute the missing seqs around it, plus the span the agent
 * says it lost; the rows feed the cell page and /metrics. */
#ifndef WL_GAPS_H
#define WL_GAPS_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stddef.h>

#include "ingest.h"

/* Inside the report's transaction, after its flow_reports row was inserted. *inserted gets the
 * number of gap rows recorded. 0, or -1 with err. */
int gaps_record(PGconn *db, const struct ingest_batch *b, int window_seconds, long *inserted,
                char *err, size_t errlen) __attribute__((warn_unused_result));

/* Appends the gap gauges kept in PostgreSQL (every reconciler shows the same numbers):
 * wanledger_agent_gaps{reason}, wanledger_agent_gap_reports_missing,
 * wanledger_agent_gap_spool_dropped_reports, wanledger_agent_gap_seconds{reason}. */
void gaps_render_metrics(PGconn *db, struct evbuffer *out);

#endif
