/* Retention for every table (see retention.h). */
#include "retention.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "pgc.h"
#include "timeutil.h"

static const char *const TABLES[RETENTION_TABLES] = {
    "heatmap_cells",       "attribution_rollup",   "link_windows",      "gap_alerts",
    "agent_gaps",          "window_state",         "dependency_rollup", "flow_samples",
    "flow_sample_batches", "flow_collector_stats", "nas_windows",       "owners",
    "agent_report_tail"};

const char *retention_table_name(int i)
{
    return i >= 0 && i < RETENTION_TABLES ? TABLES[i] : "?";
}

int retention_table_index(const char *name)
{
    for (int k = 0; k < RETENTION_TABLES; k++)
        if (strcmp(name, TABLES[k]) == 0)
            return k;
    return -1;
}

static int64_t days_ago(int64_t now_us, int days)
{
    return now_us - (int64_t)days * 86400 * TM_USEC_PER_SEC;
}

int retention_prune(PGconn *db, const struct cfg *cfg, int64_t now_us, int64_t raw_cutoff_us,
                    struct retention_stats *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof(*st));
    int64_t raw = raw_cutoff_us > 0 ? raw_cutoff_us : days_ago(now_us, cfg->retention_raw_days);
    if (db_prune(db, raw, &st->partitions_dropped, err, errlen) != 0)
        return -1;
    char a[TM_RFC3339_LEN], b[TM_RFC3339_LEN], c[TM_RFC3339_LEN], d[TM_RFC3339_LEN];
    const char *p[4] = {
        tm_format_rfc3339(days_ago(now_us, cfg->retention_results_days), a),
        tm_format_rfc3339(days_ago(now_us, cfg->retention_alerts_days), b),
        tm_format_rfc3339(days_ago(now_us, cfg->retention_gaps_days), c),
        tm_format_rfc3339(raw, d),
    };
    /* The result rows with their digests (sql/034), in one transaction that keeps the digests
     * itself: the windows it empties (all before the results' cutoff) lose theirs. Left to the
     * tables' triggers, its statements would forget every digest under result_digests' lock,
     * and every window the reconciler writes meanwhile would wait for this transaction. */
    char e[512], m[480];
    PGresult *r = NULL;
    if (pgc_exec(db, "BEGIN; SELECT set_config('wanledger.result_writer', 'on', true)", m,
                 sizeof(m)) != 0)
        goto failed_m;
    if (!(r = pgc_query(db, "result_digests",
                        "DELETE FROM result_digests WHERE window_start < $1::timestamptz", 1, p, e,
                        sizeof(e))))
        goto failed;
    PQclear(r);
    if (!(r = pgc_query(db, "results",
                        "SELECT table_name, deleted FROM wl_prune_results($1::timestamptz,"
                        " $2::timestamptz, $3::timestamptz, $4::timestamptz)",
                        4, p, e, sizeof(e))))
        goto failed;
    for (int i = 0; i < PQntuples(r); i++) {
        int k = retention_table_index(PQgetvalue(r, i, 0));
        if (k >= 0)
            st->deleted[k] = atoll(PQgetvalue(r, i, 1));
    }
    PQclear(r);
    if (pgc_exec(db, "COMMIT", m, sizeof(m)) != 0)
        goto failed_m;
    /* the NAS view (sql/011) is a result table: kept like the rollups */
    if (!(r = pgc_query(db, "nas_windows",
                        "DELETE FROM nas_windows WHERE window_start < $1::timestamptz", 1, p, e,
                        sizeof(e))))
        goto done;
    st->deleted[retention_table_index("nas_windows")] = atoll(PQcmdTuples(r));
    PQclear(r);
    /* after the result rows: the owners none of them uses any more (sql/029) */
    if (!(r = pgc_query(db, "owners", "SELECT wl_prune_owners($1::timestamptz)", 1, p, e,
                        sizeof(e))))
        goto done;
    st->deleted[retention_table_index("owners")] = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    /* after the raw partitions: the report tails (sql/033) of agents with no report stored any
     * more. Deleting a tail is always safe: the agent's next report looks its neighbours up in
     * flow_reports and makes a new one exact. A report stored meanwhile may lose its new tail
     * the same way. */
    if (!(r = pgc_query(db, "agent_report_tail",
                        "DELETE FROM agent_report_tail t WHERE NOT EXISTS (SELECT 1 FROM"
                        " flow_reports f WHERE f.agent_id = t.agent_id)",
                        0, NULL, e, sizeof(e))))
        goto done;
    st->deleted[retention_table_index("agent_report_tail")] = atoll(PQcmdTuples(r));
    PQclear(r);
    return 0;
failed_m:
    snprintf(e, sizeof(e), "results: %s", m);
failed: /* the results' transaction is left open (or aborted) by the statement that failed */
    PQclear(PQexec(db, "ROLLBACK"));
done:
    snprintf(err, errlen, "pruning %s", e);
    return -1;
}
