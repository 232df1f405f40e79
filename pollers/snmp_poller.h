/* Asynchronous SNMP polling of every configured device on one libevent loop (net-snmp's
 * single-session API: each device's socket and retry timer are libevent events, so a slow or dead
 * device never delays the others, and the gNMI listener, signals and batching share the loop). */
#ifndef WL_SNMP_POLLER_H
#define WL_SNMP_POLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "poll_sink.h"

struct event_base;
struct snmp_poller;

/* Why a poll failed, for /metrics (label "reason"). */
enum snmp_fail_reason {
    SNMP_FAIL_TIMEOUT,      /* no response after every try */
    SNMP_FAIL_TRANSPORT,    /* send failed, connection closed, session could not be reopened */
    SNMP_FAIL_AUTH,         /* SNMPv3 user, password, protocol or engine ID discovery */
    SNMP_FAIL_AGENT_ERROR,  /* the agent answered an error (or without sysUpTime) */
    SNMP_FAIL_NO_INTERFACE, /* none of the configured interfaces found */
    SNMP_N_FAIL
};

#define SNMP_N_DURATION_BUCKETS 10
/* Upper bounds (seconds) of the poll-duration histogram buckets. */
extern const double snmp_duration_buckets[SNMP_N_DURATION_BUCKETS];

/* Per-device counters since start (read on the loop thread). */
struct snmp_dev_stats {
    int64_t last_success_us; /* wall clock of the last successful poll, 0 = none */
    uint64_t polls_ok;
    uint64_t failures[SNMP_N_FAIL];
    uint64_t samples;         /* emitted */
    uint64_t invalid_samples; /* of which marked invalid (ifOperStatus not up) */
    uint64_t reopens;         /* sessions reopened after transport errors */
    uint64_t wrap_ambiguous;  /* 32-bit counters that can wrap more than once per interval */
    uint64_t duration_le[SNMP_N_DURATION_BUCKETS]; /* successful polls <= bucket bound */
    double duration_sum_s;
};

struct snmp_poller_opts {
    bool once;               /* poll every device once, then call done() */
    void (*done)(void *arg); /* once mode: all devices finished (ok or failed) */
    void *done_arg;
    int max_varbinds; /* varbinds per GET to start with (halved on tooBig); default 100 */
    int pipeline;     /* GETs in flight per device; default 4 */
};

/* Opens a session per SNMP device of cfg (only those named in only[], when n_only > 0).
 * Returns NULL with err filled when a device cannot be set up (its name in the message). */
struct snmp_poller *snmp_poller_new(struct event_base *base, const struct cfg *cfg,
                                    struct poll_sink *sink, const struct snmp_poller_opts *o,
                                    char **only, size_t n_only, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Once mode: number of devices whose poll failed. */
size_t snmp_poller_failures(const struct snmp_poller *p);
size_t snmp_poller_devices(const struct snmp_poller *p);
/* Device i (0 <= i < snmp_poller_devices) and its counters. */
const char *snmp_poller_device_name(const struct snmp_poller *p, size_t i);
const struct snmp_dev_stats *snmp_poller_device_stats(const struct snmp_poller *p, size_t i);
void snmp_poller_free(struct snmp_poller *p);

#endif
