/* The peer sockets of a host's throttle answer (see throttle_senders.h). */
#include "throttle_senders.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "hostport.h"
#include "throttle_api.h"

/* One row per (rule, connection of $1, receiving host). m: the host's own recent TCP sockets;
 * p: the far end of each, reported by another host's agent in the same recent windows, owned by
 * the rule's selector (and neither end allow-listed); the rule's scope (hosts, site) applies to
 * the receiving host, its destination sites to this host's address. Both sides read only the
 * recent windows (flow_records_window, 002): a bounded range scan, no per-row index on the
 * ingest's hottest table (003). */
static const char PEERS_SQL[] =
    "WITH w AS (SELECT now() - make_interval(secs => $2::int * coalesce((SELECT window_seconds "
    "FROM flow_reports ORDER BY window_start DESC LIMIT 1), 60)) AS since), "
    "live AS (SELECT id, selector_kind AS k, selector_value AS v, rate_bps, rate_scope, mode, "
    "scope_hosts, scope_site, dst_sites, GREATEST(0, floor(extract(epoch FROM expires_at - "
    "now())))::bigint AS ttl, (SELECT count(DISTINCT h.host) FROM throttle_host_stats h WHERE "
    "h.rule_id = r.id) AS applied FROM throttle_rules r WHERE revoked_at IS NULL AND expires_at "
    "> now()), "
    "m AS (SELECT DISTINCT local_addr, local_port, remote_addr, remote_port, workflow, "
    "user_name, program, container FROM flow_records, w WHERE host = $1 AND source = 'socket' "
    "AND proto = 'tcp' AND window_start >= w.since), "
    "p AS (SELECT DISTINCT host, local_addr, local_port, remote_addr, remote_port, workflow, "
    "user_name, program, container FROM flow_records, w WHERE host <> $1 AND source = 'socket' "
    "AND proto = 'tcp' AND window_start >= w.since AND EXISTS (SELECT 1 FROM live WHERE live.v "
    "IN (workflow, user_name, program, container))) "
    "SELECT DISTINCT l.id, l.mode, l.rate_bps, l.rate_scope, l.k, l.v, l.ttl, l.applied, p.host, "
    "host(m.local_addr), m.local_port, host(m.remote_addr), m.remote_port "
    "FROM m JOIN p ON p.local_addr = m.remote_addr AND p.local_port = m.remote_port AND "
    "p.remote_addr = m.local_addr AND p.remote_port = m.local_port "
    "JOIN live l ON l.v = CASE l.k WHEN 'workflow' THEN p.workflow WHEN 'user' THEN p.user_name "
    "WHEN 'program' THEN p.program ELSE p.container END "
    "WHERE (l.scope_hosts IS NULL OR p.host = ANY (l.scope_hosts)) "
    "AND (l.scope_site IS NULL OR EXISTS (SELECT 1 FROM sites s, unnest(s.prefixes) x WHERE "
    "s.name = l.scope_site AND p.local_addr <<= x::inet)) "
    "AND (l.dst_sites IS NULL OR EXISTS (SELECT 1 FROM sites s, unnest(s.prefixes) x WHERE "
    "s.name = ANY (l.dst_sites) AND m.local_addr <<= x::inet)) "
    "AND NOT EXISTS (SELECT 1 FROM throttle_allow a WHERE a.selector_value = CASE "
    "a.selector_kind WHEN 'workflow' THEN p.workflow WHEN 'user' THEN p.user_name WHEN "
    "'program' THEN p.program ELSE p.container END OR a.selector_value = CASE a.selector_kind "
    "WHEN 'workflow' THEN m.workflow WHEN 'user' THEN m.user_name WHEN 'program' THEN "
    "m.program ELSE m.container END) "
    "ORDER BY l.id, p.host LIMIT $3::int";

/* The rate of rule row i's sender side: the receiving hosts' shares (rows of one rule are
 * consecutive, ordered by receiving host). */
static double rule_rate(PGconn *db, PGresult *r, int first, int end)
{
    double rate = atof(PQgetvalue(r, first, 2)), sum = 0;
    bool total = strcmp(PQgetvalue(r, first, 3), "total") == 0;
    for (int i = first; i < end; i++) {
        if (i > first && strcmp(PQgetvalue(r, i, 8), PQgetvalue(r, i - 1, 8)) == 0)
            continue; /* the same receiving host */
        sum += total ? thr_host_share(db, PQgetvalue(r, i, 4), PQgetvalue(r, i, 5),
                                      PQgetvalue(r, i, 8), rate, atof(PQgetvalue(r, i, 7)))
                     : rate;
    }
    if (total && sum > rate)
        sum = rate;
    return floor(sum > 1 ? sum : 1);
}

static cJSON *endpoint(const char *addr, const char *port)
{
    char buf[HOSTPORT_HOST_MAX + 8];
    return cJSON_CreateString(hostport_format(addr, (unsigned)atoi(port), buf, sizeof(buf)));
}

int thr_peers_add(PGconn *db, const char *host, cJSON *o)
{
    char windows[16], max[16];
    snprintf(windows, sizeof(windows), "%d", THR_PEER_WINDOWS);
    snprintf(max, sizeof(max), "%d", THR_PEER_MAX);
    const char *p[] = {host, windows, max};
    PGresult *r = PQexecParams(db, PEERS_SQL, 3, NULL, p, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        PQclear(r);
        return -1;
    }
    cJSON *arr = cJSON_AddArrayToObject(o, "peers");
    int n = PQntuples(r);
    for (int i = 0; arr && i < n;) {
        int end = i + 1;
        while (end < n && strcmp(PQgetvalue(r, end, 0), PQgetvalue(r, i, 0)) == 0)
            end++;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, e);
        cJSON_AddNumberToObject(e, "id", atof(PQgetvalue(r, i, 0)));
        cJSON_AddStringToObject(e, "mode", PQgetvalue(r, i, 1));
        cJSON_AddNumberToObject(e, "rate_bps", rule_rate(db, r, i, end));
        cJSON_AddNumberToObject(e, "expires_in_s", atof(PQgetvalue(r, i, 6)));
        cJSON *socks = cJSON_AddArrayToObject(e, "sockets");
        for (int k = i; socks && k < end; k++) {
            if (k > i && strcmp(PQgetvalue(r, k, 9), PQgetvalue(r, k - 1, 9)) == 0 &&
                strcmp(PQgetvalue(r, k, 10), PQgetvalue(r, k - 1, 10)) == 0 &&
                strcmp(PQgetvalue(r, k, 11), PQgetvalue(r, k - 1, 11)) == 0 &&
                strcmp(PQgetvalue(r, k, 12), PQgetvalue(r, k - 1, 12)) == 0)
                continue;
            cJSON *s = cJSON_CreateObject();
            cJSON_AddItemToArray(socks, s);
            cJSON_AddItemToObject(s, "local", endpoint(PQgetvalue(r, k, 9), PQgetvalue(r, k, 10)));
            cJSON_AddItemToObject(s, "remote",
                                  endpoint(PQgetvalue(r, k, 11), PQgetvalue(r, k, 12)));
        }
        i = end;
    }
    PQclear(r);
    return 0;
}
