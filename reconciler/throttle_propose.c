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

/* Proposals for one alert (row i of ar); returns how many rules were created, -1 on error. */
static int propose_one(PGconn *db, const struct cfg *cfg, PGresult *ar, int i, char *err,
                       size_t errlen)
{
    const char *src = PQgetvalue(ar, i, 1), *dst = PQgetvalue(ar, i, 2);
    const char *last = PQgetvalue(ar, i, 3);
    const char *p[] = {last, src, dst};
    PGresult *lr = PQexecParams(db,
                                "SELECT circuit, capacity_bps, coalesce(observed_bytes, 0) FROM "
                                "link_windows WHERE window_start = $1::timestamptz AND src_site "
                                "= $2 AND dst_site = $3 ORDER BY utilization DESC NULLS LAST "
                                "LIMIT 1",
                                3, NULL, p, NULL, NULL, 0);
    PGresult *wr = PQexecParams(
        db,
        "SELECT workflow, sum(bytes)::float8 FROM attribution_rollup WHERE window_start = "
        "$1::timestamptz AND src_site = $2 AND dst_site = $3 AND workflow <> '' AND NOT EXISTS "
        "(SELECT 1 FROM throttle_allow WHERE selector_kind = 'workflow' AND selector_value = "
        "workflow) GROUP BY workflow ORDER BY 2 DESC, 1 LIMIT 8",
        3, NULL, p, NULL, NULL, 0);
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
    for (int k = 0; k < n; k++) {
        rates[k] = atof(PQgetvalue(wr, k, 1)) * 8 / w;
        top += rates[k];
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
        db, "SELECT a.id, a.src_site, a.dst_site, a.last_window FROM gap_alerts a WHERE a.kind "
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
