/* One raw interface-counter sample as posted to the reconciler (DESIGN.md "POST /v1/counters"),
 * and the JSON encoding of a batch of them. */
#ifndef WL_POLL_SAMPLE_H
#define WL_POLL_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define POLL_NAME_MAX 128

struct poll_sample {
    char device[POLL_NAME_MAX];
    char interface[POLL_NAME_MAX];
    int64_t at_us;     /* when the response carrying these counters arrived (or gNMI timestamp) */
    bool has_uptime;   /* SNMP sysUpTime; gNMI has none */
    int64_t uptime_cs; /* sysUpTime in centiseconds */
    uint64_t in_octets, out_octets;
    bool has_pkts; /* packet counters present (unicast + multicast + broadcast) */
    uint64_t in_pkts, out_pkts;
    uint64_t speed_bps;       /* 0 = unknown */
    int counter_bits;         /* 64 or 32 */
    int64_t discontinuity_cs; /* ifCounterDiscontinuityTime, or gNMI last-clear in cs */
};

/* The ifIndex an SNMP sample was read from, 0 when not known: a valid SNMP sample's
 * discontinuity_cs is ifIndex x 2^32 + ifCounterDiscontinuityTime (pollers/README.md "SNMP");
 * one read while the interface was not up, and gNMI samples, carry none. */
static inline long poll_sample_ifindex(const struct poll_sample *s)
{
    return s->has_uptime && s->discontinuity_cs >= (1LL << 32) ? (long)(s->discontinuity_cs >> 32)
                                                               : 0;
}

/* A growable batch of samples. */
struct poll_batch {
    struct poll_sample *items;
    size_t n, cap;
};

/* Appends a copy; returns 0 or -1 (out of memory). */
int poll_batch_add(struct poll_batch *b, const struct poll_sample *s)
    __attribute__((warn_unused_result));
void poll_batch_clear(struct poll_batch *b);
void poll_batch_free(struct poll_batch *b);

/* Encodes {"version":1,"poller":NAME,"samples":[...]} (64-bit counters printed exactly) into a
 * malloc'd NUL-terminated string; *len gets its length. NULL on out of memory. */
char *poll_batch_json(const char *poller, const struct poll_sample *samples, size_t n, size_t *len)
    __attribute__((warn_unused_result));

#endif
