/* gnmic `format: event` messages -> counter samples. A message is a JSON array of events (or one
 * event with gnmic's split-events): {"name","timestamp"(ns),"tags":{"source","interface_name",..},
 * "values":{"/interfaces/interface/state/counters/in-octets": 123 or "123", ...}}. Events are
 * mapped onto configured links by source (device gnmi_source, default its name) and
 * interface_name; counters are remembered per link so values split across notifications combine;
 * OpenConfig last-clear becomes discontinuity_cs, so a changed last-clear marks a discontinuity. */
#ifndef WL_GNMI_EVENT_H
#define WL_GNMI_EVENT_H

#include <stddef.h>

#include "config.h"
#include "poll_sample.h"

struct gnmi_map;

struct gnmi_map *gnmi_map_new(const struct cfg *cfg) __attribute__((warn_unused_result));
void gnmi_map_free(struct gnmi_map *m);

struct gnmi_stats {
    size_t ignored; /* events for unknown devices or links, or older than a link's last */
    size_t future;  /* events stamped after max_at_us: skipped, state unchanged */
};

/* Validates one whole message; when valid, applies it, appends the resulting samples to out and
 * returns 0. Events stamped after max_at_us (the reconciler refuses samples from the future; a
 * router clock can be wrong) are skipped without touching the link's state. When malformed
 * returns -1 with err naming the JSON path and the problem, and changes nothing. */
int gnmi_map_message(struct gnmi_map *m, const char *msg, size_t len, int64_t max_at_us,
                     struct poll_batch *out, struct gnmi_stats *st, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
