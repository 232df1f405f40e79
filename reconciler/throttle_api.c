/* The throttle rules API (see throttle_api.h). */
#include "throttle_api.h"
#include "throttle_senders.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"

static const char *const SEL_KINDS[] = {"workflow", "user", "program", "container", NULL};

static int error(struct evbuffer *out, int status, const char *msg, const char *where)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "error", msg);
    cJSON_AddStringToObject(o, "path", where);
    char *s = cJSON_PrintUnformatted(o);
    if (s)
        evbuffer_add_printf(out, "%s\n", s);
    free(s);
    cJSON_Delete(o);
    return status;
}

static int db_error(struct evbuffer *out, PGresult *r)
{
    int st = error(out, 500, r ? PQresultErrorMessage(r) : "database unreachable", "");
    PQclear(r);
    return st;
}

static int send_json(struct evbuffer *out, int status, cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!s)
        return error(out, 500, "out of memory", "");
    evbuffer_add_printf(out, "%s\n", s);
    free(s);
    return status;
}

static PGresult *q(PGconn *db, const char *sql, int n, const char *const *p)
{
    return PQexecParams(db, sql, n, NULL, p, NULL, NULL, 0);
}

static bool ok(PGresult *r)
{
    ExecStatusType s = PQresultStatus(r);
    return s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
}

/* The value of NAME in a query string ("a=1&b=2"), unescaped minimally (no %XX needed for the
 * names the API takes: host names, numbers). */
static bool query_get(const char *query, const char *name, char *out, size_t outlen)
{
    size_t nl = strlen(name);
    for (const char *p = query; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len > nl && strncmp(p, name, nl) == 0 && p[nl] == '=') {
            snprintf(out, outlen, "%.*s", (int)(len - nl - 1), p + nl + 1);
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

bool thr_api_owns(const char *path)
{
    return strncmp(path, "/v1/throttles", 13) == 0 && (path[13] == '\0' || path[13] == '/');
}

/* Records the expiry of rules that expired since the last look (once per rule). */
static void note_expiries(PGconn *db)
{
    PGresult *r =
        PQexec(db, "INSERT INTO throttle_audit (rule_id, event, actor, detail, passed_bytes, "
                   "delayed_bytes, dropped_bytes) "
                   "SELECT r.id, 'expiry', 'reconciler', 'expired at ' || " TS(
                       "r.expires_at") ", "
                                       "(SELECT coalesce(sum(passed_bytes), 0) FROM "
                                       "throttle_host_stats h WHERE h.rule_id = "
                                       "r.id), (SELECT coalesce(sum(delayed_bytes), 0) FROM "
                                       "throttle_host_stats h WHERE "
                                       "h.rule_id = r.id), (SELECT coalesce(sum(dropped_bytes), 0) "
                                       "FROM throttle_host_stats "
                                       "h WHERE h.rule_id = r.id) "
                                       "FROM throttle_rules r WHERE r.revoked_at IS NULL AND "
                                       "r.expires_at <= now() "
                                       "AND NOT EXISTS (SELECT 1 FROM throttle_audit a WHERE "
                                       "a.rule_id = r.id AND a.event = "
                                       "'expiry') ON CONFLICT DO NOTHING");
    PQclear(r);
}

static bool kill_switch_on(PGconn *db)
{
    PGresult *r = PQexec(db, "SELECT kill_switch FROM throttle_settings");
    bool on = ok(r) && PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return on;
}

/* Creations, approvals and revocations in the last minute. */
static long changes_last_minute(PGconn *db)
{
    PGresult *r = PQexec(db, "SELECT count(*) FROM throttle_audit WHERE at > now() - interval "
                             "'1 minute' AND event IN ('creation', 'proposal', 'approval', "
                             "'revocation', 'kill_switch')");
    long n = ok(r) ? atol(PQgetvalue(r, 0, 0)) : THR_MAX_CHANGES_PER_MIN;
    PQclear(r);
    return n;
}

static int audit(PGconn *db, const char *id, const char *event, const char *host, const char *actor,
                 const char *detail)
{
    const char *p[] = {id, event, host, actor, detail ? detail : ""};
    PGresult *r =
        q(db,
          "INSERT INTO throttle_audit (rule_id, event, host, actor, detail, passed_bytes, "
          "delayed_bytes, dropped_bytes) SELECT $1::bigint, $2, $3, $4, $5, "
          "sum(passed_bytes), sum(delayed_bytes), sum(dropped_bytes) FROM "
          "throttle_host_stats WHERE rule_id = $1::bigint",
          5, p);
    int rc = ok(r) ? 0 : -1;
    PQclear(r);
    return rc;
}

static const char *str_member(const cJSON *o, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A JSON list of strings as a PostgreSQL array literal ({"a","b"}); NULL when absent. */
static int text_array(const cJSON *a, char *out, size_t outlen, bool *present)
{
    *present = a != NULL;
    if (!a)
        return 0;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) == 0)
        return -1;
    size_t n = (size_t)snprintf(out, outlen, "{");
    const cJSON *it;
    cJSON_ArrayForEach(it, a)
    {
        if (!cJSON_IsString(it) || !it->valuestring[0] || strpbrk(it->valuestring, "\"\\{},"))
            return -1;
        n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, "%s\"%s\"", n > 1 ? "," : "",
                              it->valuestring);
    }
    n += (size_t)snprintf(out + n, n < outlen ? outlen - n : 0, "}");
    return n < outlen ? 0 : -1;
}

/* Refusals that protect the network from the tool: allow-listed selector (422), kill switch
 * and live-rule cap (409), change rate (429). 0 when the rule may be created. */
static int safety_checks(PGconn *db, const char *kind, const char *value, struct evbuffer *out)
{
    const char *kp[] = {kind, value};
    PGresult *r = q(db,
                    "SELECT reason FROM throttle_allow WHERE selector_kind = $1 AND "
                    "selector_value = $2",
                    2, kp);
    if (!ok(r))
        return db_error(out, r);
    if (PQntuples(r) > 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "%s %s is allow-listed (%s): it is never throttled", kind, value,
                 PQgetvalue(r, 0, 0));
        PQclear(r);
        return error(out, 422, msg, "$.selector");
    }
    PQclear(r);
    if (kill_switch_on(db)) {
        return error(out, 409, "the throttle kill switch is on: no rule can be created", "$");
    }
    r = PQexec(db, "SELECT count(*) FROM throttle_rules WHERE revoked_at IS NULL AND "
                   "expires_at > now()");
    if (ok(r) && atol(PQgetvalue(r, 0, 0)) >= THR_MAX_LIVE) {
        PQclear(r);
        return error(out, 409, "too many live rules (at most 32): revoke one first", "$");
    }
    PQclear(r);
    if (changes_last_minute(db) >= THR_MAX_CHANGES_PER_MIN) {
        return error(out, 429, "too many rule changes in the last minute (at most 30): retry later",
                     "$");
    }
    return 0;
}

/* A rule as POST /v1/throttles gives it (create's checks passed). */
struct new_rule {
    int kind;
    const char *value, *mode, *reason, *by, *rscope, *site;
    char rate[32], ttl[32], hosts[2048], dsts[1024];
    bool has_hosts, has_dsts, propose;
};

static bool whole(const cJSON *v, double min, double max)
{
    return cJSON_IsNumber(v) && v->valuedouble >= min && v->valuedouble <= max &&
           v->valuedouble == floor(v->valuedouble);
}

/* The selector, rate and ttl, mode and reason of body j into nr; 0, or the error's status. */
static int parse_what(const cJSON *j, struct new_rule *nr, struct evbuffer *out)
{
    const cJSON *sel = cJSON_GetObjectItemCaseSensitive(j, "selector");
    const cJSON *kv = cJSON_IsObject(sel) ? sel->child : NULL;
    nr->kind = -1;
    for (int i = 0; kv && !kv->next && SEL_KINDS[i]; i++)
        if (strcmp(kv->string, SEL_KINDS[i]) == 0)
            nr->kind = i;
    if (nr->kind < 0 || !cJSON_IsString(kv) || !kv->valuestring[0])
        return error(out, 400,
                     "expected one of {\"workflow\"|\"user\"|\"program\"|\"container\": NAME}",
                     "$.selector");
    nr->value = kv->valuestring;
    const cJSON *rv = cJSON_GetObjectItemCaseSensitive(j, "rate_bps");
    const cJSON *tv = cJSON_GetObjectItemCaseSensitive(j, "ttl_seconds");
    if (!whole(rv, 1, 1e15))
        return error(out, 400, "expected an integer 1-1e15 (bits per second)", "$.rate_bps");
    if (!whole(tv, 1, THR_MAX_TTL_S))
        return error(out, 400, "expected seconds 1-604800 (every rule expires within 7 days)",
                     "$.ttl_seconds");
    snprintf(nr->rate, sizeof(nr->rate), "%.0f", rv->valuedouble);
    snprintf(nr->ttl, sizeof(nr->ttl), "%.0f", tv->valuedouble);
    nr->mode = str_member(j, "mode");
    if (!nr->mode)
        nr->mode = "enforce";
    if (strcmp(nr->mode, "enforce") != 0 && strcmp(nr->mode, "dry_run") != 0)
        return error(out, 400, "expected \"enforce\" or \"dry_run\"", "$.mode");
    nr->reason = str_member(j, "reason");
    if (!nr->reason || !nr->reason[0])
        return error(out, 400, "every rule needs a reason", "$.reason");
    nr->by = str_member(j, "created_by");
    if (!nr->by || !nr->by[0])
        nr->by = "operator";
    nr->rscope = str_member(j, "rate_scope");
    if (!nr->rscope)
        nr->rscope = "per_host";
    if (strcmp(nr->rscope, "per_host") != 0 && strcmp(nr->rscope, "total") != 0)
        return error(out, 400, "expected \"per_host\" or \"total\"", "$.rate_scope");
    nr->propose = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "propose"));
    if (nr->propose)
        nr->mode = "dry_run";
    return 0;
}

/* The scope (hosts, site, destination sites) and the canary host; 0, or the error's status. */
static int parse_scope(const cJSON *j, struct new_rule *nr, struct evbuffer *out)
{
    const cJSON *scope = cJSON_GetObjectItemCaseSensitive(j, "scope");
    if ((scope && !cJSON_IsObject(scope)) ||
        text_array(cJSON_GetObjectItemCaseSensitive(scope, "hosts"), nr->hosts, sizeof(nr->hosts),
                   &nr->has_hosts) != 0 ||
        text_array(cJSON_GetObjectItemCaseSensitive(scope, "dst_sites"), nr->dsts, sizeof(nr->dsts),
                   &nr->has_dsts) != 0)
        return error(out, 400, "expected {\"hosts\":[names],\"site\":NAME,\"dst_sites\":[names]}",
                     "$.scope");
    const cJSON *site = cJSON_GetObjectItemCaseSensitive(scope, "site");
    if (site && (!cJSON_IsString(site) || !site->valuestring[0]))
        return error(out, 400, "expected a site name", "$.scope.site");
    nr->site = site ? site->valuestring : NULL;
    /* canary: one host first; POST /v1/throttles/ID/widen lifts the host scope later */
    const char *canary = str_member(j, "canary_host");
    if (canary) {
        if (nr->has_hosts || !canary[0] || strpbrk(canary, "\"\\{},"))
            return error(out, 400, "expected one host name (and no scope.hosts)", "$.canary_host");
        snprintf(nr->hosts, sizeof(nr->hosts), "{\"%s\"}", canary);
        nr->has_hosts = true;
    }
    return 0;
}

/* Writes the rule and its audit entry; answers 201 {"id","expires_at","mode","status"}. */
static int insert_rule(PGconn *db, const struct new_rule *nr, struct evbuffer *out)
{
    const char *kind = SEL_KINDS[nr->kind], *status = nr->propose ? "proposed" : "active";
    const char *p[] = {kind,
                       nr->value,
                       nr->has_hosts ? nr->hosts : NULL,
                       nr->site,
                       nr->has_dsts ? nr->dsts : NULL,
                       nr->rate,
                       nr->rscope,
                       nr->mode,
                       status,
                       nr->reason,
                       nr->by,
                       nr->ttl};
    PGresult *r =
        q(db,
          "INSERT INTO throttle_rules (selector_kind, selector_value, scope_hosts, scope_site, "
          "dst_sites, rate_bps, rate_scope, mode, status, reason, created_by, expires_at) VALUES "
          "($1, $2, $3::text[], $4, $5::text[], $6::bigint, $7, $8, $9, $10, $11, "
          "now() + make_interval(secs => $12::bigint)) RETURNING id, " TS("expires_at"),
          12, p);
    if (!ok(r) || PQntuples(r) != 1)
        return db_error(out, r);
    char id[32], exp[40], detail[512];
    snprintf(id, sizeof(id), "%s", PQgetvalue(r, 0, 0));
    snprintf(exp, sizeof(exp), "%s", PQgetvalue(r, 0, 1));
    PQclear(r);
    snprintf(detail, sizeof(detail), "%s %s at %s bit/s (%s), %s, until %s: %s", kind, nr->value,
             nr->rate, nr->rscope, nr->mode, exp, nr->reason);
    audit(db, id, nr->propose ? "proposal" : "creation", NULL, nr->by, detail);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", atof(id));
    cJSON_AddStringToObject(o, "expires_at", exp);
    cJSON_AddStringToObject(o, "mode", nr->mode);
    cJSON_AddStringToObject(o, "status", status);
    return send_json(out, 201, o);
}

static int create(PGconn *db, const char *body, struct evbuffer *out)
{
    cJSON *j = cJSON_Parse(body);
    struct new_rule nr;
    memset(&nr, 0, sizeof(nr));
    int st = cJSON_IsObject(j) ? 0 : error(out, 400, "expected a JSON object", "$");
    if (st == 0)
        st = parse_what(j, &nr, out);
    if (st == 0)
        st = parse_scope(j, &nr, out);
    if (st == 0)
        st = safety_checks(db, SEL_KINDS[nr.kind], nr.value, out);
    if (st == 0)
        st = insert_rule(db, &nr, out);
    cJSON_Delete(j);
    return st;
}

/* A 'total' rule's share for host: its share of the selector's bytes in the latest window
 * attribution_rollup has for it; without bytes there, an even split over the hosts that applied
 * the rule (at least this one). */
double thr_host_share(PGconn *db, const char *kind, const char *value, const char *host,
                      double rate, double hosts)
{
    const char *col = strcmp(kind, "workflow") == 0  ? "workflow"
                      : strcmp(kind, "user") == 0    ? "user_name"
                      : strcmp(kind, "program") == 0 ? "program"
                                                     : NULL;
    double share = 0;
    if (col) {
        /* the latest window by the packed rows' primary key, newest first, stopping at the
         * first that has one of the selector's owners (sql/022): max(window_start) through the
         * attribution_rollup view would unnest every stored window */
        char sql[1024];
        snprintf(sql, sizeof(sql),
                 "WITH ids AS (SELECT array_agg(id) AS a FROM owners WHERE %s = $1), "
                 "w AS (SELECT p.window_start FROM attribution_packed p, ids WHERE p.owner_ids && "
                 "ids.a ORDER BY p.window_start DESC LIMIT 1), "
                 "s AS (SELECT host, sum(bytes)::float8 AS b FROM attribution_rollup WHERE %s = "
                 "$1 AND window_start = (SELECT window_start FROM w) GROUP BY host) "
                 "SELECT coalesce((SELECT b FROM s WHERE host = $2), 0) / nullif((SELECT sum(b) "
                 "FROM s), 0)",
                 col, col);
        const char *p[] = {value, host};
        PGresult *r = q(db, sql, 2, p);
        if (ok(r) && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
            share = atof(PQgetvalue(r, 0, 0));
        PQclear(r);
    }
    double v = floor(share > 0 ? rate * share : rate / (hosts > 1 ? hosts : 1));
    return v > 0 ? v : 1;
}

/* A rule's destination sites as the prefixes the agent matches the far end against. */
static void add_prefixes(cJSON *e, const char *csv)
{
    cJSON *a = cJSON_AddArrayToObject(e, "remote_prefixes");
    for (const char *s = csv; a && s && *s;) {
        const char *c = strchr(s, ',');
        size_t n = c ? (size_t)(c - s) : strlen(s);
        char one[64];
        if (n > 0 && n < sizeof(one)) {
            snprintf(one, sizeof(one), "%.*s", (int)n, s);
            cJSON_AddItemToArray(a, cJSON_CreateString(one));
        }
        s = c ? c + 1 : NULL;
    }
}

/* The rules an agent applies on host, at site (NULL: the agent did not say; site-scoped rules
 * then do not apply to it). A rule with dst_sites carries their prefixes (sites table):
 * the agent limits only the traffic whose far end is in one of them. */
static int list_for_host(PGconn *db, const char *host, const char *site, struct evbuffer *out)
{
    const char *p[] = {host, site};
    PGresult *r =
        q(db,
          "SELECT id, selector_kind, selector_value, rate_bps, mode, "
          "GREATEST(0, floor(extract(epoch FROM expires_at - now())))::bigint, rate_scope, "
          "(SELECT count(DISTINCT h.host) FROM throttle_host_stats h WHERE h.rule_id = r.id), "
          "dst_sites IS NOT NULL, coalesce((SELECT string_agg(x, ',') FROM sites s, "
          "unnest(s.prefixes) x WHERE s.name = ANY (r.dst_sites)), '') "
          "FROM throttle_rules r WHERE revoked_at IS NULL AND expires_at > now() "
          "AND (scope_hosts IS NULL OR $1 = ANY (scope_hosts)) "
          "AND (scope_site IS NULL OR scope_site = $2) ORDER BY id",
          2, p);
    if (!ok(r))
        return db_error(out, r);
    cJSON *o = cJSON_CreateObject();
    cJSON *rules = cJSON_AddArrayToObject(o, "rules");
    for (int i = 0; i < PQntuples(r); i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(rules, e);
        cJSON_AddNumberToObject(e, "id", atof(PQgetvalue(r, i, 0)));
        cJSON *s = cJSON_AddObjectToObject(e, "selector");
        cJSON_AddStringToObject(s, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2));
        double rate = atof(PQgetvalue(r, i, 3));
        cJSON_AddNumberToObject(e, "rate_bps", rate);
        if (strcmp(PQgetvalue(r, i, 6), "total") == 0)
            cJSON_AddNumberToObject(e, "host_rate_bps",
                                    thr_host_share(db, PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
                                                   host, rate, atof(PQgetvalue(r, i, 7))));
        cJSON_AddStringToObject(e, "mode", PQgetvalue(r, i, 4));
        cJSON_AddNumberToObject(e, "expires_in_s", atof(PQgetvalue(r, i, 5)));
        if (PQgetvalue(r, i, 8)[0] == 't')
            add_prefixes(e, PQgetvalue(r, i, 9));
    }
    PQclear(r);
    cJSON *allow = cJSON_AddArrayToObject(o, "allow");
    r = PQexec(db, "SELECT selector_kind, selector_value FROM throttle_allow ORDER BY 1, 2");
    for (int i = 0; ok(r) && i < PQntuples(r); i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1));
        cJSON_AddItemToArray(allow, e);
    }
    PQclear(r);
    cJSON_AddBoolToObject(o, "kill_switch", kill_switch_on(db));
    if (thr_peers_add(db, host, o) != 0) {
        cJSON_Delete(o);
        return error(out, 500, PQerrorMessage(db), "peers");
    }
    return send_json(out, 200, o);
}

static int list_all(PGconn *db, const char *query, struct evbuffer *out)
{
    char v[16];
    bool proposals = query_get(query, "proposals", v, sizeof(v)) && strcmp(v, "0") != 0;
    bool all = query_get(query, "all", v, sizeof(v)) && strcmp(v, "0") != 0;
    char sql[2048];
    snprintf(sql, sizeof(sql),
             "SELECT r.id, selector_kind, selector_value, rate_bps, rate_scope, r.mode, status, "
             "reason, created_by, coalesce(approved_by, ''), " TS("created_at") ", " TS(
                 "expires_at") ", coalesce(" TS("revoked_at") ", ''), "
                                                              "CASE WHEN revoked_at IS NOT NULL "
                                                              "THEN 'revoked' WHEN expires_at "
                                                              "<= now() THEN 'expired' ELSE 'live' "
                                                              "END, count(h.host), "
                                                              "coalesce(sum(h.passed_bytes), 0), "
                                                              "coalesce(sum(h.delayed_bytes), "
                                                              "0), coalesce(sum(h.dropped_bytes), "
                                                              "0), coalesce(scope_site, ''), "
                                                              "coalesce(array_to_string(scope_"
                                                              "hosts, ','), '') "
                                                              "FROM throttle_rules r LEFT JOIN "
                                                              "throttle_host_stats h ON "
                                                              "h.rule_id = r.id %s GROUP BY r.id "
                                                              "ORDER BY r.id",
             proposals ? "WHERE status = 'proposed' AND revoked_at IS NULL AND expires_at > now()"
             : all     ? ""
                       : "WHERE revoked_at IS NULL AND expires_at > now()");
    PGresult *r = PQexec(db, sql);
    if (!ok(r))
        return db_error(out, r);
    static const char *const names[] = {
        "id",           "kind",          "value",         "rate_bps",   "rate_scope",
        "mode",         "status",        "reason",        "created_by", "approved_by",
        "created_at",   "expires_at",    "revoked_at",    "state",      "hosts",
        "passed_bytes", "delayed_bytes", "dropped_bytes", "site",       "scope_hosts"};
    cJSON *o = cJSON_CreateObject();
    cJSON *rules = cJSON_AddArrayToObject(o, "rules");
    for (int i = 0; i < PQntuples(r); i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(rules, e);
        for (int c = 0; c < (int)(sizeof(names) / sizeof(names[0])); c++) {
            const char *val = PQgetvalue(r, i, c);
            if (c == 1) {
                cJSON *s = cJSON_AddObjectToObject(e, "selector");
                cJSON_AddStringToObject(s, val, PQgetvalue(r, i, 2));
            } else if (c == 2) {
                continue;
            } else if (c == 0 || c == 3 || (c >= 14 && c <= 17)) {
                cJSON_AddNumberToObject(e, names[c], atof(val));
            } else {
                cJSON_AddStringToObject(e, names[c], val);
            }
        }
    }
    PQclear(r);
    cJSON_AddBoolToObject(o, "kill_switch", kill_switch_on(db));
    return send_json(out, 200, o);
}

/* POST /v1/throttles/ID/widen: a canary rule applies to every host in its scope. */
static int widen(PGconn *db, const char *id, const char *by, struct evbuffer *out)
{
    if (changes_last_minute(db) >= THR_MAX_CHANGES_PER_MIN)
        return error(out, 429, "too many rule changes in the last minute: retry later", "$");
    const char *p[] = {id};
    PGresult *r = q(db,
                    "UPDATE throttle_rules SET scope_hosts = NULL WHERE id = $1::bigint AND "
                    "revoked_at IS NULL AND expires_at > now() AND scope_hosts IS NOT NULL "
                    "RETURNING id",
                    1, p);
    if (!ok(r))
        return db_error(out, r);
    int n = PQntuples(r);
    PQclear(r);
    if (n != 1)
        return error(out, 404, "no live rule with a host scope", "id");
    audit(db, id, "approval", NULL, by, "widened from its canary host to every host");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", atof(id));
    cJSON_AddStringToObject(o, "state", "widened");
    return send_json(out, 200, o);
}

/* DELETE /v1/throttles/ID and POST /v1/throttles/ID/approve. */
static int change(PGconn *db, const char *id, bool approve, const char *by, struct evbuffer *out)
{
    if (approve && kill_switch_on(db))
        return error(out, 409, "the throttle kill switch is on: no rule can be approved", "$");
    if (changes_last_minute(db) >= THR_MAX_CHANGES_PER_MIN)
        return error(out, 429, "too many rule changes in the last minute: retry later", "$");
    const char *p[] = {id, by};
    PGresult *r = q(db,
                    approve ? "UPDATE throttle_rules SET status = 'active', mode = 'enforce', "
                              "approved_by = $2, approved_at = now() WHERE id = $1::bigint AND "
                              "revoked_at IS NULL AND expires_at > now() AND mode = 'dry_run' "
                              "RETURNING id"
                            : "UPDATE throttle_rules SET revoked_at = now(), revoked_by = $2 "
                              "WHERE id = $1::bigint AND revoked_at IS NULL AND expires_at > "
                              "now() RETURNING id",
                    2, p);
    if (!ok(r))
        return db_error(out, r);
    int n = PQntuples(r);
    PQclear(r);
    if (n != 1) {
        char msg[160];
        snprintf(msg, sizeof(msg), "no live %srule %s", approve ? "dry-run " : "", id);
        return error(out, 404, msg, "id");
    }
    audit(db, id, approve ? "approval" : "revocation", NULL, by, NULL);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", atof(id));
    cJSON_AddStringToObject(o, "state", approve ? "enforce" : "revoked");
    return send_json(out, 200, o);
}

static int num(const cJSON *o, const char *name, char *buf, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9.2e18)
        return -1;
    snprintf(buf, len, "%.0f", v->valuedouble);
    return 0;
}

static int report(PGconn *db, const char *bound, const char *body, struct evbuffer *out)
{
    cJSON *j = cJSON_Parse(body);
    const char *host = str_member(j, "host");
    const cJSON *rules = cJSON_GetObjectItemCaseSensitive(j, "rules");
    int st;
    if (!host || !host[0] || !cJSON_IsArray(rules)) {
        st = error(out, 400, "expected {\"host\":NAME,\"rules\":[...]}", "$");
        goto done;
    }
    if (bound && strcmp(host, bound) != 0) {
        st = error(out, 403, "this agent token is bound to another host", "$.host");
        goto done;
    }
    const char *agent_id = str_member(j, "agent_id");
    int i = 0, applied = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, rules)
    {
        char where[40], f[8][32];
        static const char *const k[] = {"id",
                                        "processes",
                                        "passed_bytes",
                                        "delayed_bytes",
                                        "dropped_bytes",
                                        "passed_packets",
                                        "delayed_packets",
                                        "dropped_packets"};
        snprintf(where, sizeof(where), "$.rules[%d]", i++);
        for (int c = 0; c < 8; c++)
            if (num(e, k[c], f[c], sizeof(f[c])) != 0) {
                char msg[80];
                snprintf(msg, sizeof(msg), "expected a non-negative integer %s", k[c]);
                st = error(out, 400, msg, where);
                goto done;
            }
        const char *mode = str_member(e, "mode");
        const char *p[] = {
            f[0], host, agent_id ? agent_id : "", mode ? mode : "", f[1], f[2], f[3], f[4], f[5],
            f[6], f[7]};
        PGresult *r =
            q(db,
              "INSERT INTO throttle_host_stats AS s (rule_id, host, agent_id, mode, processes, "
              "passed_bytes, delayed_bytes, dropped_bytes, passed_packets, delayed_packets, "
              "dropped_packets) SELECT $1::bigint, $2, $3, $4, $5::bigint, $6::bigint, $7::bigint, "
              "$8::bigint, $9::bigint, $10::bigint, $11::bigint WHERE EXISTS (SELECT 1 FROM "
              "throttle_rules WHERE id = $1::bigint) ON CONFLICT (rule_id, host) DO UPDATE SET "
              "agent_id = EXCLUDED.agent_id, mode = EXCLUDED.mode, processes = EXCLUDED.processes, "
              "passed_bytes = EXCLUDED.passed_bytes, delayed_bytes = EXCLUDED.delayed_bytes, "
              "dropped_bytes = EXCLUDED.dropped_bytes, passed_packets = EXCLUDED.passed_packets, "
              "delayed_packets = EXCLUDED.delayed_packets, dropped_packets = "
              "EXCLUDED.dropped_packets, last_seen = now() RETURNING (xmax = 0)",
              11, p);
        if (!ok(r)) {
            st = db_error(out, r);
            goto done;
        }
        bool first = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
        applied += PQntuples(r);
        PQclear(r);
        if (first) {
            char detail[96];
            snprintf(detail, sizeof(detail), "%s, %s processes", mode ? mode : "?", f[1]);
            audit(db, f[0], "application", host, agent_id, detail);
        }
    }
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "accepted", applied);
    st = send_json(out, 200, o);
done:
    cJSON_Delete(j);
    return st;
}

static int kill_switch(PGconn *db, const char *body, struct evbuffer *out)
{
    cJSON *j = cJSON_Parse(body);
    const cJSON *on = cJSON_GetObjectItemCaseSensitive(j, "on");
    const char *by = str_member(j, "by");
    int st;
    if (!cJSON_IsBool(on)) {
        st = error(out, 400, "expected {\"on\": true|false}", "$.on");
    } else {
        const char *p[] = {cJSON_IsTrue(on) ? "true" : "false", by ? by : "operator"};
        PGresult *r = q(db,
                        "UPDATE throttle_settings SET kill_switch = $1::boolean, changed_at = "
                        "now(), changed_by = $2",
                        2, p);
        if (!ok(r)) {
            st = db_error(out, r);
        } else {
            PQclear(r);
            const char *ap[] = {p[1], cJSON_IsTrue(on) ? "on" : "off"};
            PQclear(q(db,
                      "INSERT INTO throttle_audit (event, actor, detail) VALUES ('kill_switch', "
                      "$1, $2)",
                      2, ap));
            cJSON *o = cJSON_CreateObject();
            cJSON_AddBoolToObject(o, "kill_switch", cJSON_IsTrue(on));
            st = send_json(out, 200, o);
        }
    }
    cJSON_Delete(j);
    return st;
}

/* GET /v1/throttles with an agent token: the rules of its host (its bound host, if any). */
static int agent_view(PGconn *db, const char *bound, const char *query, struct evbuffer *out)
{
    char host[256], site[256];
    bool has_host = query_get(query, "host", host, sizeof(host)) && host[0];
    if (bound && !has_host)
        snprintf(host, sizeof(host), "%s", bound);
    else if (!has_host)
        return error(out, 400, "an agent asks for its host's rules: ?host=NAME", "host");
    if (bound && strcmp(host, bound) != 0)
        return error(out, 403, "this agent token is bound to another host", "host");
    bool has_site = query_get(query, "site", site, sizeof(site)) && site[0];
    return list_for_host(db, host, has_site ? site : NULL, out);
}

int thr_api_handle(PGconn *db, const char *role, const char *bound_host, const char *method,
                   const char *path, const char *query, const char *body, size_t len,
                   struct evbuffer *out)
{
    (void)len;
    bool op = strcmp(role, "operator") == 0, agent = strcmp(role, "agent") == 0;
    const char *rest = path + 13; /* after /v1/throttles */
    char by[128] = "operator";
    if (query_get(query, "by", by, sizeof(by)) && !by[0])
        snprintf(by, sizeof(by), "operator");
    if (!db)
        return error(out, 503, "database unreachable", "");
    note_expiries(db);
    if (strcmp(rest, "") == 0 || strcmp(rest, "/") == 0) {
        if (strcmp(method, "POST") == 0)
            return op ? create(db, body ? body : "", out)
                      : error(out, 403, "creating a rule needs an operator token", "Authorization");
        if (strcmp(method, "GET") != 0)
            return error(out, 405, "method not allowed here", path);
        if (agent)
            return agent_view(db, bound_host, query, out);
        if (op || strcmp(role, "reader") == 0)
            return list_all(db, query, out);
        return error(out, 403, "listing rules needs an operator, reader or agent token",
                     "Authorization");
    }
    if (strcmp(rest, "/report") == 0) {
        if (strcmp(method, "POST") != 0)
            return error(out, 405, "method not allowed here", path);
        return agent ? report(db, bound_host, body ? body : "", out)
                     : error(out, 403, "reports come from agent tokens", "Authorization");
    }
    if (strcmp(rest, "/kill_switch") == 0) {
        if (strcmp(method, "POST") != 0)
            return error(out, 405, "method not allowed here", path);
        return op ? kill_switch(db, body ? body : "", out)
                  : error(out, 403, "the kill switch needs an operator token", "Authorization");
    }
    /* /ID or /ID/approve */
    char id[24];
    const char *p = rest + 1;
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n >= sizeof(id))
        return error(out, 404, "no such endpoint", path);
    snprintf(id, sizeof(id), "%.*s", (int)n, p);
    bool approve = strcmp(p + n, "/approve") == 0;
    bool revoke_post = strcmp(p + n, "/revoke") == 0; /* for clients without DELETE */
    if (strcmp(p + n, "/widen") == 0) {
        if (strcmp(method, "POST") != 0)
            return error(out, 405, "method not allowed here", path);
        return op ? widen(db, id, by, out)
                  : error(out, 403, "changing a rule needs an operator token", "Authorization");
    }
    if (!approve && !revoke_post && p[n] != '\0')
        return error(out, 404, "no such endpoint", path);
    if (strcmp(method, approve || revoke_post ? "POST" : "DELETE") != 0)
        return error(out, 405, "method not allowed here", path);
    if (!op)
        return error(out, 403, "changing a rule needs an operator token", "Authorization");
    return change(db, id, approve, by, out);
}
