/* The sender side of the throttle rules an agent fetches (GET /v1/throttles with an agent
 * token): for host H, per live rule, H's TCP connections whose far end is a socket of the rule's
 * selector on another host, as both ends' agents reported them in their recent flow reports
 * (4-tuples matched end to end), and the rate H may send them at. A download's bytes are sent by
 * a process that is not the throttled one (a data server); the agent at H limits those
 * connections at the source, so the excess never crosses the WAN.
 *
 *   "peers": [{"id":N,"mode":"enforce"|"dry_run","rate_bps":N,"expires_in_s":N,
 *              "sockets":[{"local":"10.1.0.10:9000","remote":"10.2.0.10:41234"},...]},...]
 *
 * rate_bps: the sum of the receiving hosts' shares: rate_bps for each of them for a 'per_host'
 * rule; for a 'total' rule each one's share (thr_host_share), at most the rule's rate. */
#ifndef WL_THROTTLE_SENDERS_H
#define WL_THROTTLE_SENDERS_H

#include <libpq-fe.h>

/* Recent: flow records of the last THR_PEER_WINDOWS windows (the latest report's length). */
#define THR_PEER_WINDOWS 3
#define THR_PEER_MAX     4096 /* connections per answer (the agent holds up to 8192) */

struct cJSON;
/* Adds "peers" to o (an answer for host). 0, or -1 when the query failed (PQerrorMessage). */
int thr_peers_add(PGconn *db, const char *host, struct cJSON *o);

#endif
