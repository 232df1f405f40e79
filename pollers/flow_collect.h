/* The flow collector of `wanledger poll`: one UDP socket per device with a "flows" section
 * (IPFIX, NetFlow v9 or sFlow v5 on its "listen" address), decoded on the poll loop into the
 * per-window aggregator; every second the windows that closed more than `close_delay_s` ago
 * are sent as one batch to POST /v1/flowsamples through the flow spool. A datagram from an
 * address other than the device's (when the device has one configured) is still decoded: the
 * device is the socket. Records of a window already sent go out in a later batch and add up in
 * the reconciler. */
#ifndef WL_FLOW_COLLECT_H
#define WL_FLOW_COLLECT_H

#include <stddef.h>
#include <stdio.h>

#include "config.h"
#include "poll_sample.h"

struct event_base;
struct flow_collect;

struct flow_collect_opts {
    const char *poller;    /* name in each batch */
    const char *spool_dir; /* batches wait in SPOOL/flows */
    uint64_t spool_max_bytes;
    const char *reconciler_url; /* base URL; batches go to its /v1/flowsamples */
    const char *token;          /* may be NULL */
    FILE *out;                  /* --stdout: print batches here instead of posting */
    int close_delay_s;          /* a window is sent this long after its end (default 5) */
};

/* Number of devices with a flows section. */
size_t flow_collect_devices(const struct cfg *cfg);

struct flow_collect *flow_collect_new(struct event_base *base, const struct cfg *cfg,
                                      const struct flow_collect_opts *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* A counter sample of the SNMP poller (poll_sink's tap, arg = the collector): its interface's
 * ifIndex maps flow records to that link (flow_link.h). */
void flow_collect_learn(void *arg, const struct poll_sample *s);

/* Sends every open window, then closes the sockets and the sender (posting for up to drain_ms
 * more). Returns the number of batches left spooled. Frees fc. */
size_t flow_collect_free(struct flow_collect *fc, int drain_ms);

#endif
