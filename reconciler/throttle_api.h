/* The throttle rules API (issue 12; the rules live in sql/007_throttles.sql):
 *   POST   /v1/throttles              operator: a rule -> 201 {"id":N}
 *   GET    /v1/throttles              operator, reader: every rule with its hosts' counters
 *                                     (?proposals=1: only proposals waiting for approval);
 *                                     agent (?host=H[&site=S]): the live rules for that host
 *                                     (and site), the allow-list and the kill switch, as the
 *                                     agent applies them, and "peers": the host's
 *                                     connections towards throttled sockets elsewhere
 *                                     (throttle_senders.h)
 *   DELETE /v1/throttles/ID           operator: revokes
 *   POST   /v1/throttles/ID/revoke    operator: the same as DELETE
 *   POST   /v1/throttles/ID/approve   operator: a proposal (dry_run) becomes enforced
 *   POST   /v1/throttles/ID/widen     operator: a canary rule ("canary_host") goes to every host
 *   POST   /v1/throttles/kill_switch  operator: {"on":true|false}
 *   POST   /v1/throttles/report       agent: per rule passed/delayed/dropped on a host
 * Safety: at most THR_MAX_LIVE live rules, at most THR_MAX_CHANGES_PER_MIN creations,
 * approvals and revocations a minute, ttl at most 7 days, no rule on an allow-listed selector. */
#ifndef WL_THROTTLE_API_H
#define WL_THROTTLE_API_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#define THR_MAX_LIVE            32
#define THR_MAX_CHANGES_PER_MIN 30
#define THR_MAX_TTL_S           (7 * 86400)

/* True for the paths this module answers. */
bool thr_api_owns(const char *path);

/* role: the bearer token's role name ("operator", "reader", "agent", ...); bound_host: the host
 * an agent token is bound to (NULL: any host): such a token gets that host's rules only (?host=
 * may be left out) and reports for it only (403 otherwise). method: "GET", "POST", "DELETE".
 * Writes JSON to out; returns the HTTP status. */
int thr_api_handle(PGconn *db, const char *role, const char *bound_host, const char *method,
                   const char *path, const char *query, const char *body, size_t len,
                   struct evbuffer *out);

/* A 'total' rule's share for host: its share of the selector's bytes in the latest window
 * attribution_rollup has for it; without bytes there, rate / hosts (at least 1 bit/s). */
double thr_host_share(PGconn *db, const char *kind, const char *value, const char *host,
                      double rate, double hosts);

#endif
