/* The thread that folds ended hours' owner rows into their hourly rollup (recon_db_fold_hours,
 * sql/020) beside the reconcile loop, on its own PostgreSQL connection: at fleet size a fold
 * reads an hour of owner rows (minutes), and the windows must not wait behind it. Leader only. */
#ifndef WL_FOLD_THREAD_H
#define WL_FOLD_THREAD_H

#include <stddef.h>

#include "config.h"
#include "leader.h"

struct fold_thread;

/* NULL with err when the thread cannot start. */
struct fold_thread *fold_thread_start(const struct cfg *cfg, const struct leader *ld, char *err,
                                      size_t errlen);
/* Cancels a fold in progress (its transaction rolls back; the hour is folded again later) and
 * joins the thread. NULL is a no-op. */
void fold_thread_stop(struct fold_thread *f);

#endif
