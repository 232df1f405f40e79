/* The line under a cell when an agent of one of the pair's sites had a seq gap in the cell's
 * windows (agent_gaps, sql/005_resilience.sql): its attributed bytes there may be short. */
#ifndef WL_HM_GAPS_H
#define WL_HM_GAPS_H

#include <event2/buffer.h>
#include <libpq-fe.h>
#include <stddef.h>
#include <stdint.h>

/* Appends nothing when no such gap exists, else one <div class="agent-gaps"> listing them (at
 * most 20, newest first). 0, or -1 with err. */
int hm_gaps_html(struct evbuffer *out, PGconn *db, const char *src, const char *dst,
                 int64_t from_us, int64_t to_us, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
