/* One leader among the reconcilers sharing a database: the process holding the session-level
 * PostgreSQL advisory lock hashtext('wanledger.leader') on a connection of its own runs the
 * reconcile loop and delivers webhooks; every process serves ingest, pages and the API. The lock
 * is tried every LEADER_POLL_MS; when the leader dies its session ends and the lock is released,
 * so another reconciler takes over within about one poll. A leader whose connection fails
 * (PostgreSQL restarted) steps down at once and competes again once reconnected. */
#ifndef WL_LEADER_H
#define WL_LEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "metrics.h"

#define LEADER_POLL_MS 500

struct leader;

/* Starts the thread that competes for the lock (it connects with cfg->database). m may be NULL.
 * NULL with err filled. */
struct leader *leader_start(const struct cfg *cfg, struct metrics *m, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Releases the lock (closing its session) and joins the thread. */
void leader_stop(struct leader *l);
/* Whether this process leads now; NULL (one-shot commands) always leads. */
bool leader_is(const struct leader *l);
/* How many times this process became the leader (a changed value means the duties restart). */
uint64_t leader_term(const struct leader *l);

#endif
