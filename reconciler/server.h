/* The HTTP side of `wanledger reconcile` over libevent's evhttp: routing, bearer-token roles
 * (401 for a wrong or missing token, 403 for another role's), the body size bound (413), the
 * ingest endpoints (validate whole, commit, then 2xx), the read API, the heatmap pages, /healthz
 * and /metrics. HTTP runs on the caller's event base; ingest bodies are validated and committed by
 * worker threads (workers.h), the read endpoints answered by reader threads (readers.h): the event
 * loop never waits for the database. The caller must have called evthread_use_pthreads() before
 * creating the base. */
#ifndef WL_SERVER_H
#define WL_SERVER_H

#include <event2/event.h>
#include <stddef.h>

#include "config.h"
#include "metrics.h"

struct srv;

/* Binds cfg->listen (port 0 picks a free one, see srv_port). NULL with err filled. The metrics
 * are borrowed; every database connection is the server's own (its workers' and readers'). */
struct srv *srv_new(struct event_base *base, const struct cfg *cfg, struct metrics *metrics,
                    char *err, size_t errlen) __attribute__((warn_unused_result));
void srv_free(struct srv *s);
/* The TCP port the server listens on. */
int srv_port(const struct srv *s);

/* Role names in the tokens file, and the role a presented token belongs to (-1 for none),
 * compared in constant time against every configured token. */
enum srv_role {
    SRV_ROLE_AGENT,
    SRV_ROLE_POLLER,
    SRV_ROLE_SERVICE,
    SRV_ROLE_READER,
    SRV_ROLE_OPERATOR,
    SRV_ROLE_N
};
int srv_role_of_token(const struct cfg *cfg, const char *token, size_t len);

#endif
