/* Listener for gnmic's `tcp` and `udp` outputs (format: event): TCP streams of JSON messages,
 * concatenated or separated by any whitespace delimiter; UDP one or more messages per datagram.
 * Every malformed message is rejected with one log line naming the peer and the problem. */
#ifndef WL_GNMI_LISTEN_H
#define WL_GNMI_LISTEN_H

#include <stddef.h>

#include "config.h"
#include "poll_sink.h"

struct event_base;
struct gnmi_listen;

/* tcp_addr / udp_addr: "HOST:PORT" or NULL. Returns NULL with err filled on failure. */
struct gnmi_listen *gnmi_listen_new(struct event_base *base, const struct cfg *cfg,
                                    struct poll_sink *sink, const char *tcp_addr,
                                    const char *udp_addr, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void gnmi_listen_free(struct gnmi_listen *g);

#endif
