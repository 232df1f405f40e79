/* The device's clock for SNMP samples: when did the agent read the counters of a response?
 * The agent answers sysUpTime (centiseconds since its start) read with the counters, so for a
 * device booted at wall time B every response says B + U ∈ [send, receive]. Intersecting those
 * bounds over the responses of one session pins B to the best round trip seen; a sample's time
 * is then B + U, not the arrival time: an answer that is late on the way back (a busy poller, a
 * queue) or a request that waited in a stalled agent moves no bytes across windows. The first
 * response, with nothing to intersect yet, gets the midpoint of request and response. */
#ifndef WL_SNMP_CLOCK_H
#define WL_SNMP_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

struct snmp_clock {
    bool known;
    int64_t boot_lo_us, boot_hi_us; /* bounds on B, wall-clock us */
    int64_t last_uptime_cs;
    uint64_t resets; /* bounds discarded: reboot, uptime wrap, clock step, drift */
};

/* One response: request sent at send_us, answer read at recv_us (wall clock, us), carrying
 * sysUpTime uptime_cs. Returns the wall time at which the agent read it, in [send_us, recv_us]. */
int64_t snmp_clock_at(struct snmp_clock *c, int64_t send_us, int64_t recv_us, int64_t uptime_cs);

/* Forget the bounds (session reopened, device rebooted). */
void snmp_clock_reset(struct snmp_clock *c);

#endif
