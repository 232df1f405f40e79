/* sFlow version 5 datagrams (sflow.org sflow_version_5.txt) as a pure function: flow samples
 * and expanded flow samples (sampling rate, sample pool, drops, input/output interfaces) with
 * raw packet header records decoded for Ethernet (802.1Q tags skipped), IPv4, IPv6, TCP and
 * UDP, or sampled IPv4/IPv6 records; counter samples and expanded counter samples with the
 * generic interface counter block (kept as a second opinion on the interface counters). */
#ifndef WL_FLOW_SFLOW_H
#define WL_FLOW_SFLOW_H

#include <stddef.h>
#include <stdint.h>

#include "flow_rec.h"

struct flow_sflow_info {
    uint32_t uptime_ms;
    uint32_t sequence;
    uint64_t drops;   /* sum of the flow samples' drop counters */
    uint32_t samples; /* samples in the datagram */
};

/* Decodes one datagram, calling emit for each flow sample that yields an IP packet and
 * counters (may be NULL) for each generic interface counter block. The whole datagram's
 * structure is checked first: a malformed one emits nothing and returns -1 with err saying what
 * and at which byte. A well-formed sample that is not an IP packet is counted in
 * st->samples_undecodable. */
int flow_sflow_decode(const uint8_t *buf, size_t len, flow_emit_fn emit, flow_counters_fn counters,
                      void *arg, struct flow_sflow_info *info, struct flow_stats *st, char *err,
                      size_t errlen);

/* Decodes one packet header (Ethernet when ether is non-zero, else starting at the IP header)
 * into r's key and bytes (IP total length). 0, or -1 when it holds no IPv4/IPv6 packet. */
int flow_sflow_header(const uint8_t *p, size_t n, int ether, struct flow_rec *r);

#endif
