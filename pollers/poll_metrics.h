/* The poller's GET /metrics (Prometheus text format 0.0.4, `promtool check metrics`-clean),
 * served by libevent's evhttp on the poller's loop: per SNMP device the last successful poll,
 * a poll-duration histogram, failures by reason, samples emitted (and how many of them marked
 * invalid), sessions reopened, 32-bit interfaces whose counters can wrap twice per interval; the
 * gNMI listener's messages, refusals and samples; the spool's depth (batches and bytes waiting
 * for the reconciler). */
#ifndef WL_POLL_METRICS_H
#define WL_POLL_METRICS_H

#include <stddef.h>

#include "config.h"

#define POLL_METRICS_DEFAULT "127.0.0.1:9465"

struct event_base;
struct poll_metrics;
struct snmp_poller;
struct gnmi_listen;

/* Listens on addr ("HOST:PORT"). sp, gl may be NULL (not running); spool_dir may be NULL
 * (--stdout). Returns NULL with err filled when the address cannot be bound. */
struct poll_metrics *poll_metrics_new(struct event_base *base, const char *addr,
                                      const struct cfg *cfg, const struct snmp_poller *sp,
                                      const struct gnmi_listen *gl, const char *spool_dir,
                                      char *err, size_t errlen) __attribute__((warn_unused_result));
void poll_metrics_free(struct poll_metrics *m);

/* The whole exposition into a malloc'd NUL-terminated string (for tests and the handler). */
char *poll_metrics_text(const struct poll_metrics *m) __attribute__((warn_unused_result));

#endif
