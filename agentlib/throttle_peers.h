/* Sender side of a rule (downloads): the reconciler's "peers" for this host — per rule, the
 * connections of this host whose far end is a socket of the rule's selector on another host (it
 * matched both ends in the flow reports), and the rate this host may send them at. The agent
 * limits those connections at their source (throttle_set_peers), before the bytes cross the WAN. */
#ifndef WL_THROTTLE_PEERS_H
#define WL_THROTTLE_PEERS_H

#include <stddef.h>
#include <stdint.h>

#include "throttle_probe.h"

#define THROTTLE_MAX_PEER_RULES 64

struct throttle_peer_rule {
    int64_t id;
    enum throttle_mode mode;
    uint64_t rate_bps;     /* what this host may send to the rule's sockets elsewhere */
    int64_t expires_at_us; /* wall clock */
    size_t first, n;       /* its connections: sock[first .. first + n) */
};

struct throttle_peer_set {
    struct throttle_peer_rule rule[THROTTLE_MAX_PEER_RULES];
    size_t n;
    struct throttle_peer sock[THROTTLE_MAX_PEERS]; /* cls is set by throttle_set_peers */
    size_t n_sock;
};

/* Parses [{"id":N,"mode":"enforce"|"dry_run","rate_bps":N,"expires_in_s":N,"sockets":[
 * {"local":"10.1.0.10:9000","remote":"10.2.0.10:41234"},...]},...] (NULL: none). 0, or -1 with
 * err naming the JSON path; out is then empty. */
struct cJSON;
int throttle_peers_parse(const struct cJSON *peers, int64_t now_us, struct throttle_peer_set *out,
                         char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
