/* The cell page's throttle panel (see hm_throttle.h). */
#include "hm_throttle.h"

#include <stdlib.h>

#include "hm_esc.h"
#include "hm_fmt.h"

int hm_throttle_panel(struct evbuffer *out, PGconn *db, const char *src, const char *dst)
{
    const char *p[] = {src, dst};
    PGresult *r = PQexecParams(
        db,
        "SELECT r.id, r.selector_kind, r.selector_value, r.rate_bps, r.mode, r.status, CASE WHEN "
        "r.revoked_at IS NOT NULL THEN 'revoked' WHEN r.expires_at <= now() THEN 'expired' ELSE "
        "'live' END, (SELECT count(*) FROM throttle_host_stats h WHERE h.rule_id = r.id), "
        "(SELECT coalesce(sum(passed_bytes), 0) FROM throttle_host_stats h WHERE h.rule_id = "
        "r.id), (SELECT coalesce(sum(delayed_bytes), 0) FROM throttle_host_stats h WHERE "
        "h.rule_id = r.id), (SELECT coalesce(sum(dropped_bytes), 0) FROM throttle_host_stats h "
        "WHERE h.rule_id = r.id), r.reason FROM throttle_rules r WHERE (r.alert_src = $1 AND "
        "r.alert_dst = $2 AND r.created_at > now() - interval '7 days') OR (r.revoked_at IS NULL "
        "AND r.expires_at > now() AND r.selector_kind = 'workflow' AND r.selector_value IN "
        "(SELECT workflow FROM attribution_rollup WHERE src_site = $1 AND dst_site = $2 AND "
        "window_start > now() - interval '1 day')) ORDER BY r.id DESC LIMIT 20",
        2, NULL, p, NULL, NULL, 0);
    evbuffer_add_printf(out, "<div class=\"panel throttles\" style=\"margin-top:14px\"><h2>"
                             "Throttle rules</h2>");
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        evbuffer_add_printf(out, "<p class=\"muted\">throttle rules could not be read</p></div>");
        PQclear(r);
        return -1;
    }
    evbuffer_add_printf(out, "<table><tr><th>id</th><th>selector</th><th class=\"num\">rate"
                             "</th><th>mode</th><th>state</th><th class=\"num\">hosts</th><th "
                             "class=\"num\">passed</th><th class=\"num\">delayed</th><th "
                             "class=\"num\">dropped</th><th>reason</th></tr>");
    for (int i = 0; i < PQntuples(r); i++) {
        char a[HM_FMT_LEN], b[HM_FMT_LEN], c[HM_FMT_LEN], d[HM_FMT_LEN];
        evbuffer_add_printf(out, "<tr><td>%s</td><td>", PQgetvalue(r, i, 0));
        hm_esc_html(out, PQgetvalue(r, i, 1));
        evbuffer_add_printf(out, " ");
        hm_esc_html(out, PQgetvalue(r, i, 2));
        evbuffer_add_printf(out,
                            "</td><td class=\"num\">%s</td><td>%s%s</td><td>%s</td><td "
                            "class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s"
                            "</td><td class=\"num\">%s</td><td>",
                            hm_fmt_bps(atof(PQgetvalue(r, i, 3)), a), PQgetvalue(r, i, 4),
                            PQgetvalue(r, i, 5)[0] == 'p' ? " (proposal)" : "", PQgetvalue(r, i, 6),
                            PQgetvalue(r, i, 7), hm_fmt_bytes(atoll(PQgetvalue(r, i, 8)), b),
                            hm_fmt_bytes(atoll(PQgetvalue(r, i, 9)), c),
                            hm_fmt_bytes(atoll(PQgetvalue(r, i, 10)), d));
        hm_esc_html(out, PQgetvalue(r, i, 11));
        evbuffer_add_printf(out, "</td></tr>");
    }
    if (PQntuples(r) == 0)
        evbuffer_add_printf(out, "<tr><td colspan=\"10\" class=\"muted\">no rule</td></tr>");
    evbuffer_add_printf(out,
                        "</table><p class=\"muted\">Agents limit the processes a rule's selector "
                        "names. NFS traffic is sent by the kernel's RPC client, not by a process: "
                        "no rule limits it; act at the NFS server or export instead. Approve a "
                        "proposal with <code>wanledger throttle approve ID</code>.</p></div>");
    PQclear(r);
    return 0;
}
