/* A latency histogram as a report member (agentlib/README.md, "NFS latency in reports"). */
#ifndef WL_LLHIST_JSON_H
#define WL_LLHIST_JSON_H

#include "jsonw.h"
#include "llhist.h"

/* {"count":N,"p50":U,"p99":U,"p999":U,"max":U,"buckets":[[LOWER,COUNT],...]}: quantiles are the
 * upper bounds of their buckets (null for the overflow bucket, >= 2^24), buckets the non-empty
 * ones in increasing order, each by its lower bound (its upper bound is the next bucket's lower
 * bound in the layout of llhist_layout.h). */
void llhist_write_json(struct jw *w, const struct llhist *h);

#endif
