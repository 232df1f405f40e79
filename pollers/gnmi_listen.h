/* Listener for gnmic's `tcp` and `udp` outputs (format: event; gnmic outputs/tcp_output,
 * outputs/udp_output): TCP streams of JSON messages, concatenated or separated by whitespace or
 * gnmic's configured `delimiter`; UDP one or more messages per datagram. Every malformed message
 * is rejected with one log line naming the peer and the problem; gnmic's plain `format: json` is
 * refused with one log line per connection naming the gnmic setting to change. Samples are
 * emitted per (link, timestamp) when the timestamp moves on or the link is quiet for quiet_ms. */
#ifndef WL_GNMI_LISTEN_H
#define WL_GNMI_LISTEN_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "poll_sink.h"

#define GNMI_QUIET_MS_DEFAULT 500

struct event_base;
struct gnmi_listen;

struct gnmi_listen_opts {
    const char *tcp_addr;  /* "HOST:PORT" or NULL */
    const char *udp_addr;  /* "HOST:PORT" or NULL */
    const char *delimiter; /* gnmic tcp output's `delimiter`, NULL/"" for none */
    int quiet_ms;          /* default GNMI_QUIET_MS_DEFAULT */
};

/* What the listener saw, for /metrics. */
struct gnmi_listen_stats {
    uint64_t connections, messages, samples;
    uint64_t rejected;     /* malformed messages or junk */
    uint64_t format_json;  /* plain `format: json` messages refused */
    uint64_t ignored;      /* events of unknown links or not interface counters */
    uint64_t stale;        /* events older than a link's pending or emitted timestamp */
    uint64_t subinterface; /* subinterface events, not taken for the interface */
    uint64_t future;       /* events stamped in the future, skipped */
    uint64_t partial;      /* timestamps without both octet counters: no sample */
};

/* Returns NULL with err filled on failure. */
struct gnmi_listen *gnmi_listen_new(struct event_base *base, const struct cfg *cfg,
                                    struct poll_sink *sink, const struct gnmi_listen_opts *o,
                                    char *err, size_t errlen) __attribute__((warn_unused_result));
/* Emits what is pending into the sink, then frees. */
void gnmi_listen_free(struct gnmi_listen *g);
const struct gnmi_listen_stats *gnmi_listen_stats(const struct gnmi_listen *g);
/* Samples emitted for cfg->devices[device_idx]. */
uint64_t gnmi_listen_device_samples(const struct gnmi_listen *g, size_t device_idx);

#endif
