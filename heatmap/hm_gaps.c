/* Agent seq gaps on the cell page (see hm_gaps.h). */
#include "hm_gaps.h"

#include <stdio.h>
#include <string.h>

#include "hm_esc.h"
#include "hm_fmt.h"
#include "hm_sql.h"

#define HM_GAPS_LIMIT "20"

int hm_gaps_html(struct evbuffer *out, PGconn *db, const char *src, const char *dst,
                 int64_t from_us, int64_t to_us, char *err, size_t errlen)
{
    char a[24], b[24];
    const char *p[4] = {src, dst, hm_sql_i64_text(from_us, a), hm_sql_i64_text(to_us, b)};
    PGresult *r = pgc_query(
        db, "reading agent gaps",
        "SELECT host, agent_id, reason, seq_from, seq_to, " HM_SQL_US("lost_from") ", " HM_SQL_US(
            "lost_to") ", spool_dropped_reports, count(*) OVER ()"
                       " FROM agent_gaps WHERE sites && ARRAY[$1, $2]::text[]"
                       " AND lost_from < " HM_SQL_TS(4) " AND lost_to > " HM_SQL_TS(
                           3) " ORDER BY lost_from DESC, id DESC LIMIT " HM_GAPS_LIMIT,
        4, p, err, errlen);
    if (!r)
        return -1;
    int n = PQntuples(r);
    if (n == 0) {
        PQclear(r);
        return 0;
    }
    long long total = hm_sql_i64(r, 0, 8);
    evbuffer_add_printf(out,
                        "<div class=\"agent-gaps\" data-agent-gaps=\"%lld\"><p>Agent data is "
                        "missing in %s: attributed bytes may be short.</p><ul>",
                        total, to_us - from_us > 0 ? "these windows" : "this window");
    for (int i = 0; i < n; i++) {
        char f[HM_FMT_LEN], t[HM_FMT_LEN];
        evbuffer_add_printf(out, "<li>");
        hm_esc_html(out, hm_sql_str(r, i, 0));
        evbuffer_add_printf(out, " (agent ");
        hm_esc_html(out, hm_sql_str(r, i, 1));
        evbuffer_add_printf(out, "): ");
        if (!hm_sql_null(r, i, 3)) {
            long long s0 = hm_sql_i64(r, i, 3), s1 = hm_sql_i64(r, i, 4);
            if (s0 == s1)
                evbuffer_add_printf(out, "report seq %lld never arrived", s0);
            else
                evbuffer_add_printf(out, "reports seq %lld–%lld never arrived", s0, s1);
            long long dropped = hm_sql_i64(r, i, 7);
            if (dropped > 0)
                evbuffer_add_printf(out, " (%lld dropped by its full spool)", dropped);
        } else if (strcmp(hm_sql_str(r, i, 2), "late_drain") == 0) {
            /* agentlib/README.md "Late ticks" */
            evbuffer_add_printf(out, "drained late (the agent was stalled): its counts here "
                                     "could not be placed in their windows (late_drain)");
        } else {
            evbuffer_add_printf(out, "lost its counts (");
            hm_esc_html(out, hm_sql_str(r, i, 2));
            evbuffer_add_printf(out, ")");
        }
        evbuffer_add_printf(out, ", %s – %s</li>", hm_fmt_rfc3339(hm_sql_i64(r, i, 5), f),
                            hm_fmt_rfc3339(hm_sql_i64(r, i, 6), t));
    }
    if (total > n)
        evbuffer_add_printf(out, "<li>and %lld more</li>", total - n);
    evbuffer_add_printf(out, "</ul></div>");
    PQclear(r);
    return 0;
}
