/* gnmic `format: event` messages -> counter samples. A message is a JSON array of events (or one
 * event object with gnmic's `split-events: true`): {"name","timestamp"(ns),"tags":{"source",
 * "interface_name",..},"values":{"/interfaces/interface/state/counters/in-octets": 123 or "123",
 * ...}} (gnmic formatters/event.go). Events are mapped onto configured links by source (device
 * gnmi_source, default its name) and interface_name.
 *
 * One sample per (link, timestamp): the counters of one timestamp are merged whether they come in
 * one message or in many; the sample is emitted when an event with a later timestamp arrives for
 * the link, or when the link has been quiet for the quiet time (gnmi_map_flush). Counters of a
 * timestamp never mix with another timestamp's; only the speed and last-clear are carried over
 * from earlier timestamps (they are state, often on another subscription). Events of a
 * subinterface (tag subinterface_index, or a value path through a subinterface) are never taken
 * for the interface's. OpenConfig (`in-pkts`, last-clear in ns) and SR Linux native names
 * (`in-packets`, `*-unicast-packets`, last-clear as an RFC 3339 date-time, port-speed "100G")
 * are both understood; a changed last-clear changes discontinuity_cs. */
#ifndef WL_GNMI_EVENT_H
#define WL_GNMI_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "poll_sample.h"

struct gnmi_map;

struct gnmi_map *gnmi_map_new(const struct cfg *cfg) __attribute__((warn_unused_result));
void gnmi_map_free(struct gnmi_map *m);

struct gnmi_stats {
    size_t ignored; /* events for unknown devices or links, or not interface counters */
    size_t stale;   /* events older than the link's pending or last emitted timestamp */
    size_t subif;   /* subinterface events, not taken for the interface */
    size_t future;  /* events stamped after max_at_us: skipped, state unchanged */
    size_t partial; /* samples not emitted: a timestamp without both octet counters */
};

/* Result of gnmi_map_message. */
enum gnmi_rc {
    GNMI_OK = 0,
    GNMI_MALFORMED = -1,   /* err names the JSON path and the problem; nothing changed */
    GNMI_FORMAT_JSON = -2, /* gnmic's plain `format: json` (its default), not `format: event` */
};

/* Validates one whole message; when valid, applies it at monotonic time now_us and appends the
 * samples it completes (earlier timestamps of the links it touches) to out. Events stamped after
 * max_at_us (the reconciler refuses samples from the future; a router clock can be wrong) are
 * skipped without touching the link's state. st is zeroed, then counted into. */
enum gnmi_rc gnmi_map_message(struct gnmi_map *m, const char *msg, size_t len, int64_t now_us,
                              int64_t max_at_us, struct poll_batch *out, struct gnmi_stats *st,
                              char *err, size_t errlen) __attribute__((warn_unused_result));

/* Emits the pending sample of every link last updated at or before now_us - quiet_us (all of
 * them with quiet_us < 0). Returns the number of samples appended. */
size_t gnmi_map_flush(struct gnmi_map *m, int64_t now_us, int64_t quiet_us, struct poll_batch *out,
                      struct gnmi_stats *st);

/* Earliest monotonic time at which a pending sample becomes due for quiet_us, or -1. */
int64_t gnmi_map_next_due(const struct gnmi_map *m, int64_t quiet_us);

#endif
