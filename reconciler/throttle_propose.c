/* Saturation alert -> throttle proposals (see throttle_propose.h). */
#include "throttle_propose.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define TOP_N  8
#define MARGIN 0.95 /* aim a little under the threshold */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double thr_maxmin_level(const double *rates, size_t n, double budget, double floor)
{
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += rates[i];
    if (n == 0 || sum <= budget)
        return -1;
    double *s = malloc(n * sizeof(*s));
    if (!s)
        return floor;
    memcpy(s, rates, n * sizeof(*s));
    qsort(s, n, sizeof(*s), cmp_double);
    double left = budget > 0 ? budget : 0, level = floor;
    for (size_t i = 0; i < n; i++) {
        double share = left / (double)(n - i);
        if (s[i] > share) {
            level = share;
            break;
        }
        left -= s[i];
    }
    free(s);
    return level > floor ? level : floor;
}

static bool ok(PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    return s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
}

static bool auto_enforced(const struct cfg *cfg, const char *wf)
{
    for (size_t i = 0; i < cfg->throttle.n_auto_enforce; i++)
        if (strcmp(cfg->throttle.auto_enforce[i], wf) == 0)
            return true;
    return false;
}

void thr_propose_note(PGconn *db, const char *src, const char *dst, const char *since, char *buf,
                      size_t len)
{
    const char *p[] = {src, dst, since};
    PGresult *r = PQexecParams(db,
                               "SELECT id, selector_kind, selector_value, rate_bps, mode, status, "
                               "coalesce(approved_by, ''), revoked_at IS NOT NULL FROM "
                               "throttle_rules WHERE alert_src = $1 AND alert_dst = $2 AND "
                               "created_at >= $3::timestamptz ORDER BY id LIMIT 4",
                               3, NULL, p, NULL, NULL, 0);
    size_t n = strlen(buf);
    for (int i = 0; ok(r) && i < PQntuples(r) && n + 1 < len; i++) {
        const char *st = PQgetvalue(r, i, 5), *by = PQgetvalue(r, i, 6);
        char how[160];
        if (PQgetvalue(r, i, 7)[0] == 't')
            snprintf(how, sizeof(how), "revoked");
        else if (strcmp(st, "proposed") == 0)
            snprintf(how, sizeof(how), "%s proposal: wanledger throttle approve %s",
                     PQgetvalue(r, i, 4), PQgetvalue(r, i, 0));
        else
            snprintf(how, sizeof(how), "%s, approved by %s", PQgetvalue(r, i, 4),
                     by[0] ? by : "its creator");
        n += (size_t)snprintf(buf + n, len - n, " Throttle rule %s: %s %s at %.1f Mbit/s (%s).",
                              PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
                              atof(PQgetvalue(r, i, 3)) / 1e6, how);
        if (n >= len)
            n = len - 1;
    }
    PQclear(r);
}

/* Appends the alert's rules to its summary at once (the next saturated window's summary names
 * them too: recon_db_alerts.c calls thr_propose_note). */
static void note_alert(PGconn *db, const char *id, const char *src, const char *dst,
                       const char *first_window)
{
    char note[768] = "";
    thr_propose_note(db, src, dst, first_window, note, sizeof(note));
    const char *p[] = {id, note};
    PQclear(PQexecParams(db,
                         "UPDATE gap_alerts SET summary = coalesce(summary, '') || $2 WHERE id = "
                         "$1::bigint AND position('Throttle rule' IN coalesce(summary, '')) = 0",
                         2, NULL, p, NULL, NULL, 0));
}

/* Proposals for one alert (row i of ar); returns how many rules were created, -1 on error. */
static int propose_one(PGconn *db, const struct cfg *cfg, PGresult *ar, int i, char *err,
                       size_t errlen)
{
    const char *src = PQgetvalue(ar, i, 1), *dst = PQgetvalue(ar, i, 2);
    const char *last = PQgetvalue(ar, i, 3);
    char before[32];
    snprintf(before, sizeof(before), "%d", cfg->window_seconds);
    const char *p[] = {last, src, dst, PQgetvalue(ar, i, 4), before};
    PGresult *lr = PQexecParams(db,
                                "SELECT circuit, capacity_bps, coalesce(observed_bytes, 0) FROM "
                                "link_windows WHERE window_start = $1::timestamptz AND src_site "
                                "= $2 AND dst_site = $3 ORDER BY utilization DESC NULLS LAST "
                                "LIMIT 1",
                                3, NULL, p, NULL, NULL, 0);
    PGresult *wr = PQexecParams(
        db,
        "SELECT workflow, coalesce(sum(bytes) FILTER (WHERE window_start = $1::timestamptz), "
        "0)::float8 AS now, greatest(coalesce(sum(bytes) FILTER (WHERE window_start = "
        "$1::timestamptz), 0), coalesce(sum(bytes) FILTER (WHERE window_start = $4::timestamptz "
        "- make_interval(secs => $5::int)), 0))::float8 AS demand FROM attribution_rollup WHERE "
        "window_start IN ($1::timestamptz, $4::timestamptz - make_interval(secs => $5::int)) AND "
        "src_site = $2 AND dst_site = $3 AND workflow <> '' AND NOT EXISTS (SELECT 1 FROM "
        "throttle_allow WHERE selector_kind = 'workflow' AND selector_value = workflow) AND NOT "
        "EXISTS (SELECT 1 FROM throttle_rules t WHERE t.selector_kind = 'workflow' AND "
        "t.selector_value = workflow AND t.revoked_at IS NULL AND t.expires_at > now()) GROUP BY "
        "workflow HAVING sum(bytes) FILTER (WHERE window_start = $1::timestamptz) > 0 ORDER BY "
        "2 DESC, 1 LIMIT 8",
        5, NULL, p, NULL, NULL, 0);
    int created = -1;
    if (!ok(lr) || !ok(wr)) {
        snprintf(err, errlen, "reading the saturated window: %s",
                 PQresultErrorMessage(ok(lr) ? wr : lr));
        goto done;
    }
    created = 0;
    if (PQntuples(lr) != 1 || PQntuples(wr) == 0)
        goto done;
    double w = cfg->window_seconds;
    double cap = atof(PQgetvalue(lr, 0, 1));
    double total = atof(PQgetvalue(lr, 0, 2)) * 8 / w;
    double rates[TOP_N], top = 0;
    int n = PQntuples(wr) < TOP_N ? PQntuples(wr) : TOP_N;
    /* demand: the larger of a workflow's rate in the saturated window and in the window before
     * the saturation began (on a full link the others are squeezed below what they ask for) */
    for (int k = 0; k < n; k++) {
        rates[k] = atof(PQgetvalue(wr, k, 2)) * 8 / w;
        top += atof(PQgetvalue(wr, k, 1)) * 8 / w;
    }
    double other = total > top ? total - top : 0;
    double budget = MARGIN * cfg->saturation * cap - other;
    double level = thr_maxmin_level(rates, (size_t)n, budget, (double)cfg->throttle.floor_bps);
    if (level < 0)
        goto done;
    for (int k = 0; k < n; k++) {
        if (rates[k] <= level)
            continue;
        const char *wf = PQgetvalue(wr, k, 0);
        bool enforce = auto_enforced(cfg, wf);
        char rate[32], ttl[16], reason[512];
        snprintf(rate, sizeof(rate), "%.0f", floor(level));
        snprintf(ttl, sizeof(ttl), "%d", cfg->throttle.proposal_ttl_seconds);
        snprintf(reason, sizeof(reason),
                 "saturation %s->%s on %s (%.0f%% of %.0f Mbit/s): %s sent %.1f Mbit/s; max-min "
                 "share %.1f Mbit/s brings the link under %.0f%%",
                 src, dst, PQgetvalue(lr, 0, 0), cap > 0 ? 100 * total / cap : 0, cap / 1e6, wf,
                 rates[k] / 1e6, level / 1e6, 100 * cfg->saturation);
        const char *ip[] = {wf,
                            rate,
                            enforce ? "enforce" : "dry_run",
                            enforce ? "active" : "proposed",
                            reason,
                            src,
                            dst,
                            ttl,
                            enforce ? "config (auto_enforce_workflows)" : NULL};
        PGresult *r = PQexecParams(
            db,
            "WITH n AS (INSERT INTO throttle_rules (selector_kind, selector_value, rate_bps, "
            "rate_scope, mode, status, reason, created_by, alert_src, alert_dst, expires_at, "
            "approved_by, approved_at) VALUES ('workflow', $1, $2::bigint, 'total', $3, $4, $5, "
            "'reconciler', $6, $7, now() + make_interval(secs => $8::bigint), $9::text, CASE WHEN "
            "$9::text "
            "IS NULL THEN NULL ELSE now() END) RETURNING id, reason) "
            "INSERT INTO throttle_audit (rule_id, event, actor, detail) SELECT id, "
            "'proposal', 'reconciler', reason FROM n RETURNING rule_id",
            9, NULL, ip, NULL, NULL, 0);
        if (!ok(r)) {
            snprintf(err, errlen, "proposing a rule for %s: %s", wf, PQresultErrorMessage(r));
            PQclear(r);
            created = -1;
            goto done;
        }
        if (enforce && PQntuples(r) == 1) {
            const char *ap[] = {PQgetvalue(r, 0, 0)};
            PQclear(PQexecParams(db,
                                 "INSERT INTO throttle_audit (rule_id, event, actor, detail) "
                                 "VALUES ($1::bigint, 'approval', 'config', "
                                 "'auto_enforce_workflows')",
                                 1, NULL, ap, NULL, NULL, 0));
        }
        PQclear(r);
        log_info("throttle", "%s %s at %s bit/s: %s", enforce ? "enforcing" : "proposing", wf, rate,
                 reason);
        created++;
    }
    if (created > 0)
        note_alert(db, PQgetvalue(ar, i, 0), src, dst, PQgetvalue(ar, i, 4));
done:
    PQclear(lr);
    PQclear(wr);
    return created;
}

/* Rules from an alert that did not help: still saturated, the workflow's share small. */
static int revoke_wrong_targets(PGconn *db, const struct cfg *cfg, char *err, size_t errlen)
{
    char span[32], share[32];
    snprintf(span, sizeof(span), "%d", cfg->throttle.wrong_target_windows * cfg->window_seconds);
    snprintf(share, sizeof(share), "%.6f", cfg->throttle.wrong_target_share);
    const char *p[] = {span, share};
    PGresult *r = PQexecParams(
        db,
        "WITH w AS (UPDATE throttle_rules r SET revoked_at = now(), revoked_by = 'reconciler' "
        "WHERE revoked_at IS NULL AND expires_at > now() AND mode = 'enforce' AND alert_src IS "
        "NOT NULL AND coalesce(approved_at, created_at) < now() - make_interval(secs => "
        "$1::int) AND EXISTS (SELECT 1 FROM gap_alerts a WHERE a.kind = 'saturation' AND "
        "a.state = 'open' AND a.src_site = r.alert_src AND a.dst_site = r.alert_dst AND "
        "a.last_window >= coalesce(r.approved_at, r.created_at) + make_interval(secs => "
        "$1::int)) AND coalesce((SELECT sum(bytes) FILTER (WHERE workflow = r.selector_value)::"
        "float8 / nullif(sum(bytes), 0) FROM attribution_rollup u WHERE u.src_site = "
        "r.alert_src AND u.dst_site = r.alert_dst AND u.window_start >= now() - "
        "make_interval(secs => $1::int)), 0) < $2::float8 RETURNING id) "
        "INSERT INTO throttle_audit (rule_id, event, actor, detail) SELECT id, 'revocation', "
        "'reconciler', 'wrong target: the link stayed saturated and the workflow''s share was "
        "small' FROM w RETURNING rule_id",
        2, NULL, p, NULL, NULL, 0);
    if (!ok(r)) {
        snprintf(err, errlen, "wrong-target check: %s", PQresultErrorMessage(r));
        PQclear(r);
        return -1;
    }
    for (int i = 0; i < PQntuples(r); i++)
        log_warn("throttle", "rule %s revoked: wrong target", PQgetvalue(r, i, 0));
    PQclear(r);
    return 0;
}

int thr_propose_run(PGconn *db, const struct cfg *cfg, char *err, size_t errlen)
{
    if (!cfg->throttle.proposals)
        return 0;
    PGresult *ar = PQexec(
        db, "SELECT a.id, a.src_site, a.dst_site, a.last_window, a.first_window FROM gap_alerts a "
            "WHERE a.kind "
            "= 'saturation' AND a.state = 'open' AND a.last_window IS NOT NULL AND NOT EXISTS "
            "(SELECT 1 FROM throttle_rules r WHERE r.alert_src = a.src_site AND r.alert_dst = "
            "a.dst_site AND r.created_at >= a.opened_at) AND NOT (SELECT kill_switch FROM "
            "throttle_settings) ORDER BY a.id");
    if (!ok(ar)) {
        snprintf(err, errlen, "listing saturation alerts: %s", PQresultErrorMessage(ar));
        PQclear(ar);
        return -1;
    }
    int total = 0;
    for (int i = 0; i < PQntuples(ar); i++) {
        int n = propose_one(db, cfg, ar, i, err, errlen);
        if (n < 0) {
            PQclear(ar);
            return -1;
        }
        total += n;
    }
    PQclear(ar);
    if (revoke_wrong_targets(db, cfg, err, errlen) != 0)
        return -1;
    return total;
}
