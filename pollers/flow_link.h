/* Which WAN link a flow crossed, from the exporting device and the interfaces of its records,
 * the way counters map to links: each configured link is (device, interface name); the
 * interface's ifIndex is learned from the SNMP poller's samples of that device in this process
 * (poll_sample_ifindex). A record leaving by a link's interface (out_if) went site -> peer_site,
 * one arriving by it (in_if) peer_site -> site; a record whose in and out interface are the same
 * link (an exporter watching one interface, e.g. softflowd -i IDX:IF) is placed by its
 * destination address (in the link's site: arriving, else leaving). No link known: the
 * reconciler places the flow by its addresses (the site prefixes). */
#ifndef WL_FLOW_LINK_H
#define WL_FLOW_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

struct flow_links;

struct flow_links *flow_links_new(const struct cfg *cfg) __attribute__((warn_unused_result));
void flow_links_free(struct flow_links *fl);

/* Device's interface (names as in the links) has ifIndex if_index (> 0); a later call for the
 * same interface replaces it (a re-resolution after a reboot). Unknown device/interface: no-op. */
void flow_links_learn(struct flow_links *fl, const char *device, const char *interface,
                      long if_index);

/* Sites (configuration indices) of a record of device dev (configuration index) with interfaces
 * in_if/out_if and destination address dst (family 4 or 6): true when a link maps it. */
bool flow_links_sites(const struct flow_links *fl, uint32_t dev, uint32_t in_if, uint32_t out_if,
                      uint8_t family, const uint8_t *dst, int *src_site, int *dst_site);

#endif
