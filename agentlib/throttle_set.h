/* The rules a host applies and the processes they cover: each rule gets a class slot in the
 * kernel (throttle_probe.h); every live process of the host (its network namespace when the
 * agent watches one) whose owner matches a rule's selector — and no allow-list entry — is mapped
 * to that rule's class. Processes are matched when the kernel announces them (first socket while
 * rules are active) and on every rescan (new rules, exec, pid reuse). */
#ifndef WL_THROTTLE_SET_H
#define WL_THROTTLE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "throttle_probe.h"

enum throttle_sel {
    THROTTLE_SEL_WORKFLOW = 0,
    THROTTLE_SEL_USER,
    THROTTLE_SEL_PROGRAM, /* comm, as the heatmap shows it */
    THROTTLE_SEL_CONTAINER,
};

struct throttle_selector {
    enum throttle_sel kind;
    char value[128];
};

struct throttle_rule {
    int64_t id;
    struct throttle_selector sel;
    uint64_t rate_bps; /* this host's share */
    enum throttle_mode mode;
    int64_t expires_at_us; /* wall clock */
    /* scoped: only traffic whose far end (egress: destination, ingress: source) is in one of
     * remote[0..n_remote) is limited (the rule's dst_sites; none listed: nothing is) */
    bool scoped;
    size_t n_remote;
    struct throttle_prefix remote[THROTTLE_MAX_PREFIXES];
};

/* What a rule did on this host since it was applied here. */
struct throttle_rule_stat {
    int64_t id;
    enum throttle_mode mode;
    uint64_t rate_bps;
    size_t processes; /* mapped to it now */
    struct throttle_counts c;
};

struct throttle_set;

/* netns_ino: only processes of this network namespace (0: all). */
struct throttle_set *throttle_set_new(struct throttle_probe *tp, const char *const *workflow_env,
                                      size_t n_env, uint32_t netns_ino, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void throttle_set_free(struct throttle_set *ts);

/* Makes rules (and the allow-list) the applied set: rules already applied keep their class and
 * counters, rules no longer listed or expired at now_us are removed, then processes are matched
 * again. At most THROTTLE_MAX_CLASSES rules (the rest are refused: returns how many were
 * applied). */
size_t throttle_set_apply(struct throttle_set *ts, const struct throttle_rule *rules, size_t n,
                          const struct throttle_selector *allow, size_t n_allow, int64_t now_us);
/* Sender side: makes ps the applied peer rules (each its own class slot, limiting the listed
 * connections of this host at ps's rate; rules gone, expired at now_us or without connections
 * are removed). Returns how many were applied. */
struct throttle_peer_set;
size_t throttle_set_peers(struct throttle_set *ts, const struct throttle_peer_set *ps,
                          int64_t now_us);
/* Removes every rule (fail open). */
void throttle_set_clear(struct throttle_set *ts);
/* Matches every live process again. */
void throttle_set_rescan(struct throttle_set *ts);
/* Matches the processes the kernel announced (call when throttle_probe_events_fd is readable). */
void throttle_set_on_events(struct throttle_set *ts);
/* Removes rules whose expires_at_us <= now_us; returns how many. */
size_t throttle_set_expire(struct throttle_set *ts, int64_t now_us);

size_t throttle_set_count(const struct throttle_set *ts);
/* Sender side: the connections limited now (in the kernel's peer set). */
size_t throttle_set_peer_sockets(const struct throttle_set *ts);
/* Per applied rule; returns how many were written (at most max). */
size_t throttle_set_stats(const struct throttle_set *ts, struct throttle_rule_stat *out,
                          size_t max);

/* "workflow", "user", "program", "container"; 0 or -1. */
int throttle_sel_parse(const char *s, enum throttle_sel *out) __attribute__((warn_unused_result));
const char *throttle_sel_name(enum throttle_sel k);

#endif
