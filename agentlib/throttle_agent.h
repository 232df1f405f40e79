/* The agent's throttle loop: every second it expires rules on its own clock; every interval it
 * fetches this host's rules (GET /v1/throttles with the agent token), applies them in the
 * kernel and reports what each rule passed, delayed and dropped (POST /v1/throttles/report).
 * After fail_open_s without an answer from the reconciler it removes every rule. */
#ifndef WL_THROTTLE_AGENT_H
#define WL_THROTTLE_AGENT_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

struct throttle_agent_opts {
    const char *base_url; /* reconciler base URL ("http://127.0.0.1:7070") */
    const char *token;
    const char *host;
    const char *site; /* NULL: rules scoped to a site do not apply here */
    const char *agent_id;
    const char *cgroup_dir; /* cgroup v2 directory the programs attach to (the root) */
    uint32_t netns_ino;     /* only processes of this network namespace (0: all) */
    const char *netns_path; /* that namespace (its TCP sockets get receive-window clamps) */
    const char *const *workflow_env;
    size_t n_workflow_env;
    int interval_s;
    int fail_open_s;
};

struct throttle_agent;

/* NULL with err when the kernel part cannot be loaded (the agent then runs without it). */
struct throttle_agent *throttle_agent_start(struct event_base *base,
                                            const struct throttle_agent_opts *o, char *err,
                                            size_t errlen) __attribute__((warn_unused_result));
/* From the agent's settings (--throttle, --throttle-interval, --throttle-fail-open, --cgroup,
 * --netns, --workflow-env, --reconciler, token, host): NULL when off, without a reconciler, or
 * when the kernel part cannot be loaded (logged: the agent then counts without throttling). */
struct agent_opts;
struct throttle_agent *throttle_agent_from_opts(struct event_base *base, const struct agent_opts *o,
                                                const char *agent_id, uint32_t netns_ino);
/* Removes every rule and detaches. */
void throttle_agent_stop(struct throttle_agent *ta);
/* Prometheus text for /metrics (malloc'd; NULL when out of memory). */
char *throttle_agent_metrics(const struct throttle_agent *ta);

#endif
