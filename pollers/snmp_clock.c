/* Device time of SNMP responses from sysUpTime (see snmp_clock.h). */
#include "snmp_clock.h"

#define US_PER_CS 10000LL
/* Bounds widen by 200 ppm of the uptime elapsed between responses, so a device clock running
 * slightly fast or slow against ours (quartz: tens of ppm) never makes them contradict. */
#define DRIFT_DIV 5000LL

void snmp_clock_reset(struct snmp_clock *c)
{
    c->known = false;
}

int64_t snmp_clock_at(struct snmp_clock *c, int64_t send_us, int64_t recv_us, int64_t uptime_cs)
{
    if (recv_us < send_us)
        recv_us = send_us; /* wall clock stepped back between the two reads */
    /* U is truncated to whole centiseconds: the read happened in [U, U + 1) cs after boot */
    int64_t lo = send_us - (uptime_cs + 1) * US_PER_CS;
    int64_t hi = recv_us - uptime_cs * US_PER_CS;
    if (c->known && uptime_cs >= c->last_uptime_cs) {
        int64_t slack = (uptime_cs - c->last_uptime_cs) * US_PER_CS / DRIFT_DIV;
        int64_t plo = c->boot_lo_us - slack, phi = c->boot_hi_us + slack;
        int64_t nlo = lo > plo ? lo : plo, nhi = hi < phi ? hi : phi;
        if (nlo <= nhi) {
            lo = nlo;
            hi = nhi;
        } else {
            c->resets++; /* contradiction: our clock stepped, or the device's drifted */
        }
    } else if (c->known) {
        c->resets++; /* uptime went down: restarted agent or 497-day wrap */
    }
    c->known = true;
    c->boot_lo_us = lo;
    c->boot_hi_us = hi;
    c->last_uptime_cs = uptime_cs;
    int64_t at = lo + (hi - lo) / 2 + uptime_cs * US_PER_CS + US_PER_CS / 2;
    if (at < send_us)
        at = send_us;
    if (at > recv_us)
        at = recv_us;
    return at;
}
