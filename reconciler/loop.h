/* The reconcile loop: every tick_seconds, every window that is due (grace passed, and dirty or
 * never reconciled) is reconciled, oldest first, then marked done. Runs in its own thread with
 * its own database connection, so ingest and pages are never held up by a reconciliation. */
#ifndef WL_LOOP_H
#define WL_LOOP_H

#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "leader.h"
#include "metrics.h"

struct loop;

struct loop_pass_stats {
    size_t reconciled; /* windows reconciled and marked done */
    size_t failed;     /* windows whose reconciliation failed (left dirty) */
};

/* One pass over every window due at now_us. 0, or -1 with err filled when the due windows could
 * not be listed; failures of single windows are logged and counted, not returned. m may be NULL. */
int loop_pass(PGconn *db, const struct cfg *cfg, struct metrics *m, int64_t now_us,
              struct loop_pass_stats *st, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Starts the thread (it connects with cfg->database itself); it reconciles only while ld leads
 * (NULL: always). NULL with err filled. */
struct loop *loop_start(const struct cfg *cfg, struct metrics *m, const struct leader *ld,
                        char *err, size_t errlen) __attribute__((warn_unused_result));
/* Asks the thread to finish its current window, joins it and frees everything. */
void loop_stop(struct loop *l);

#endif
