/* Asynchronous SNMP polling of every configured device on one libevent loop (net-snmp's
 * single-session API: each device's socket and retry timer are libevent events, so a slow or dead
 * device never delays the others, and the gNMI listener, signals and batching share the loop). */
#ifndef WL_SNMP_POLLER_H
#define WL_SNMP_POLLER_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "poll_sink.h"

struct event_base;
struct snmp_poller;

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
void snmp_poller_free(struct snmp_poller *p);

#endif
