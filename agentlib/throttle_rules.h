/* The rules the reconciler hands an agent (GET /v1/throttles with an agent token) and the
 * counters the agent reports back (POST /v1/throttles/report). */
#ifndef WL_THROTTLE_RULES_H
#define WL_THROTTLE_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "throttle_peers.h"
#include "throttle_set.h"

#define THROTTLE_MAX_RULES 256
#define THROTTLE_MAX_ALLOW 64

struct throttle_rules {
    struct throttle_rule rule[THROTTLE_MAX_RULES];
    size_t n;
    struct throttle_selector allow[THROTTLE_MAX_ALLOW];
    size_t n_allow;
    bool kill_switch;               /* set: apply nothing */
    struct throttle_peer_set peers; /* sender side: this host's connections to throttled sockets */
};

/* Parses {"rules":[{"id":N,"selector":{"workflow":"W"},"mode":"enforce"|"dry_run",
 * "rate_bps":N,"host_rate_bps":N,"expires_in_s":N,"remote_prefixes":["10.1.0.0/16"]},...],"allow":[{"program":"P"},...],
 * "kill_switch":false,"peers":[...]} (peers: throttle_peers.h). A rule's expiry is now_us +
 * expires_in_s on this host's clock (immune to clock skew); host_rate_bps, when present, is this
 * host's share; remote_prefixes, when present, scope the rule to traffic whose far end is in them.
 * 0, or -1 with err naming the JSON path; out is then empty. */
int throttle_rules_parse(const char *json, int64_t now_us, struct throttle_rules *out, char *err,
                         size_t errlen) __attribute__((warn_unused_result));

/* The report body for the applied rules' counters; malloc'd, NULL when out of memory. */
char *throttle_rules_report(const char *host, const char *agent_id,
                            const struct throttle_rule_stat *st, size_t n);

/* One selector as {"KIND":"VALUE"} into out; 0 or -1 (err says where). */
struct cJSON;
int throttle_selector_parse(const struct cJSON *obj, struct throttle_selector *out,
                            const char *where, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* A rule object's "mode", "enforce" or "dry_run", into out; 0 or -1 (err names WHERE.mode). */
int throttle_mode_parse(const struct cJSON *obj, enum throttle_mode *out, const char *where,
                        char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
