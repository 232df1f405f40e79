/* Recording seq gaps per agent (see gaps.h). */
#include "gaps.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"

static const char SQL_GAPS[] = "SELECT wl_record_report($1, $2::bigint, $3::timestamptz,"
                               " $4::int, $5::bigint, $6::timestamptz, $7::timestamptz, $8,"
                               " $9::text[])";

void gaps_stmt(const struct ingest_batch *b, int window_seconds, struct gaps_params *g,
               struct pgc_stmt *st)
{
    snprintf(g->wsec, sizeof(g->wsec), "%d", window_seconds);
    snprintf(g->spool, sizeof(g->spool), "%" PRIu64, b->spool_dropped_reports);
    bool lost = b->lost_to_us > 0 && b->lost_reason;
    _Static_assert(sizeof(g->from) >= TM_RFC3339_LEN, "an RFC 3339 time fits");
    const char *params[9] = {
        b->report[0], /* agent_id */
        b->report[1], /* seq */
        b->report[3], /* window_start */
        g->wsec,
        g->spool,
        lost ? tm_format_rfc3339(b->lost_from_us, g->from) : NULL,
        lost ? tm_format_rfc3339(b->lost_to_us, g->to) : NULL,
        lost ? b->lost_reason : NULL,
        b->local_sites, /* sql/028 */
    };
    memcpy(g->p, params, sizeof params);
    *st = (struct pgc_stmt){
        .what = "agent_gaps", .sql = SQL_GAPS, .name = "wl_gaps", .nparams = 9, .params = g->p};
}

void gaps_render_metrics(PGconn *db, struct evbuffer *out)
{
    /* seconds: the union of each agent's spans per reason (a span told twice, or two that
     * overlap, count once), summed over agents */
    PGresult *r = PQexec(
        db, "WITH s AS (SELECT reason, agent_id, lost_from, lost_to, max(lost_to) OVER (PARTITION"
            " BY reason, agent_id ORDER BY lost_from, lost_to ROWS BETWEEN UNBOUNDED PRECEDING"
            " AND 1 PRECEDING) AS before FROM agent_gaps),"
            " i AS (SELECT reason, agent_id, lost_from, lost_to, count(*) FILTER (WHERE before"
            " IS NULL OR lost_from > before) OVER (PARTITION BY reason, agent_id ORDER BY"
            " lost_from, lost_to) AS island FROM s),"
            " u AS (SELECT reason, sum(hi - lo) AS span FROM (SELECT reason, min(lost_from) AS"
            " lo, max(lost_to) AS hi FROM i GROUP BY reason, agent_id, island) x GROUP BY"
            " reason)"
            " SELECT g.reason, count(*), coalesce(sum(seq_to - seq_from + 1), 0),"
            " sum(spool_dropped_reports), extract(epoch FROM min(u.span))::bigint"
            " FROM agent_gaps g JOIN u ON u.reason = g.reason GROUP BY g.reason"
            " ORDER BY g.reason");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        PQclear(r);
        return;
    }
    long long missing = 0, dropped = 0;
    evbuffer_add_printf(out, "# HELP wanledger_agent_gaps Agent seq gaps recorded (agent_gaps), "
                             "by reason.\n# TYPE wanledger_agent_gaps gauge\n");
    for (int i = 0; i < PQntuples(r); i++) {
        evbuffer_add_printf(out, "wanledger_agent_gaps{reason=\"%s\"} %s\n", PQgetvalue(r, i, 0),
                            PQgetvalue(r, i, 1));
        missing += atoll(PQgetvalue(r, i, 2));
        dropped += atoll(PQgetvalue(r, i, 3));
    }
    evbuffer_add_printf(out,
                        "# HELP wanledger_agent_gap_seconds Time without agent data in the "
                        "recorded gaps, by reason.\n# TYPE wanledger_agent_gap_seconds gauge\n");
    for (int i = 0; i < PQntuples(r); i++)
        evbuffer_add_printf(out, "wanledger_agent_gap_seconds{reason=\"%s\"} %s\n",
                            PQgetvalue(r, i, 0), PQgetvalue(r, i, 4));
    evbuffer_add_printf(
        out,
        "# HELP wanledger_agent_gap_reports_missing Agent reports (seqs) that never "
        "arrived.\n# TYPE wanledger_agent_gap_reports_missing gauge\n"
        "wanledger_agent_gap_reports_missing %lld\n"
        "# HELP wanledger_agent_gap_spool_dropped_reports Of those, reports the "
        "agents' bounded spools dropped (their own count).\n"
        "# TYPE wanledger_agent_gap_spool_dropped_reports gauge\n"
        "wanledger_agent_gap_spool_dropped_reports %lld\n",
        missing, dropped);
    PQclear(r);
}
