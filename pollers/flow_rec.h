/* One decoded flow observation, the common output of the IPFIX/NetFlow v9 and sFlow v5 decoders:
 * a key (addresses, protocol, ports), what the exporter saw of it (sampled bytes and packets) and
 * how it was sampled, so the aggregator can scale and bound it. Pure data, no allocation. */
#ifndef WL_FLOW_REC_H
#define WL_FLOW_REC_H

#include <stdint.h>

struct flow_rec {
    uint8_t family;  /* 4 or 6 */
    uint8_t src[16]; /* IPv4 in the first 4 bytes */
    uint8_t dst[16];
    uint8_t proto; /* IP protocol number */
    uint16_t sport, dport;
    uint64_t bytes;   /* IP bytes the exporter counted (sampled packets only) */
    uint64_t packets; /* sampled packets behind bytes (>= 1) */
    double sq_bytes;  /* sum of squared packet sizes (sFlow exact; IPFIX bytes^2/packets) */
    uint32_t rate;    /* sampling rate N (1 in N); 1 = unsampled */
    uint32_t in_if, out_if;
    int64_t end_ms; /* when the flow was last seen (Unix ms), 0 = unknown: use arrival */
};

/* sFlow counter sample (generic interface counters), kept as a second opinion. */
struct flow_ifcounters {
    uint32_t if_index;
    uint64_t in_octets, out_octets;
    uint32_t in_pkts, out_pkts; /* unicast */
};

/* Called once per decoded record. */
typedef void (*flow_emit_fn)(void *arg, const struct flow_rec *r);
typedef void (*flow_counters_fn)(void *arg, const struct flow_ifcounters *c);

/* What a decoder saw and dropped; every reason is a /metrics counter. */
struct flow_stats {
    uint64_t datagrams, malformed, records, sets_unknown_template, templates, templates_withdrawn,
        templates_expired, options_records, counter_samples, samples_undecodable;
};

#endif
