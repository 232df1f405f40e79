/* IPFIX (RFC 7011/7012) and NetFlow v9 (RFC 3954) decoding as pure functions over a template
 * cache: templates and options templates are kept per exporter (address and port) and
 * observation domain (source id), withdrawn (IPFIX field count 0, all-templates withdrawal) and
 * expired when not refreshed within the template lifetime (UDP, RFC 7011 8.4); sampling
 * interval and algorithm come from options records, per sampler (samplerId 48 / selectorId 302)
 * or for the whole domain. A malformed datagram is counted and decodes to nothing after the
 * last well-formed set; nothing is read out of bounds. */
#ifndef WL_FLOW_IPFIX_H
#define WL_FLOW_IPFIX_H

#include <stddef.h>
#include <stdint.h>

#include "flow_rec.h"

#define FLOW_TEMPLATE_LIFETIME_MS (30 * 60 * 1000) /* 3 x a 10 min refresh */

struct flow_ipfix;

/* Where a datagram came from: the template cache key with the observation domain. */
struct flow_exporter {
    uint8_t addr[16]; /* IPv4-mapped or IPv6 */
    uint16_t port;
};

struct flow_ipfix *flow_ipfix_new(void) __attribute__((warn_unused_result));
void flow_ipfix_free(struct flow_ipfix *fx);

/* Decodes one datagram (version 9 or 10) received at now_ms, calling emit for every flow record
 * it carries. Returns 0, or -1 when the datagram is malformed (err says what and at which byte;
 * records before the bad set were emitted, templates of it were not learnt). */
int flow_ipfix_decode(struct flow_ipfix *fx, const struct flow_exporter *ex, const uint8_t *buf,
                      size_t len, int64_t now_ms, flow_emit_fn emit, void *arg,
                      struct flow_stats *st, char *err, size_t errlen);

/* Number of templates currently cached (options templates included). */
size_t flow_ipfix_templates(const struct flow_ipfix *fx);

#endif
