/* GET /metrics on a thread of its own, for programs without an event loop (`wanledger ship`):
 * a small evhttp server that answers each scrape with the text a render callback returns.
 * Programs with a libevent loop (reconciler, agent, poller) serve /metrics on it instead. */
#ifndef WL_PROMHTTP_H
#define WL_PROMHTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Writes name="value" (preceded by ',' with comma) with value made valid UTF-8 (utf8.h) and \,
 * " and newline escaped as the text format requires. */
void promhttp_label(FILE *f, const char *name, const char *value, bool comma);

/* The Prometheus text exposition (malloc'd), or NULL (answered 500). Called on the server's
 * thread: read shared counters atomically. */
typedef char *(*promhttp_render_fn)(void *arg);

struct promhttp;

/* Listens on listen ("127.0.0.1:9466", "[::]:9466"; port 0 picks one) and serves until
 * promhttp_stop. NULL with err filled when the address is bad or taken. */
struct promhttp *promhttp_start(const char *listen, promhttp_render_fn render, void *arg, char *err,
                                size_t errlen) __attribute__((warn_unused_result));
/* The port listened on (the kernel's pick for port 0). */
int promhttp_port(const struct promhttp *p);
/* Stops the thread and closes the socket; NULL is fine. */
void promhttp_stop(struct promhttp *p);

#endif
