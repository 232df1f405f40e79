/* Log-linear histograms in user space (layout: llhist_layout.h, 16 sub-buckets per power of two,
 * relative error <= 1/16 above 16 units): record, merge, quantiles with their bucket's bounds,
 * the bounds exported as Prometheus `le`, and the sparse form reports carry. */
#ifndef WL_LLHIST_H
#define WL_LLHIST_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "llhist_layout.h"

struct llhist {
    uint64_t c[LLHIST_SLOTS];
};

/* Bucket of a value, and a bucket's bounds: it holds [lower, upper); the overflow bucket's
 * upper is UINT64_MAX. */
static inline size_t llhist_index(uint64_t v)
{
    return llhist_index_of(v);
}
uint64_t llhist_lower(size_t i);
uint64_t llhist_upper(size_t i);

void llhist_record(struct llhist *h, uint64_t v, uint64_t n);
/* dst += src, bucket by bucket (exact: a merge equals recording both inputs' values). */
void llhist_merge(struct llhist *dst, const struct llhist *src);
/* dst += the kernel's 32-bit counters (nfs.h). */
void llhist_merge_u32(struct llhist *dst, const uint32_t src[LLHIST_SLOTS]);
uint64_t llhist_total(const struct llhist *h);

/* Quantile q (0 < q <= 1): the bucket holding the sample of rank ceil(q * total) (at least 1).
 * Returns its upper bound (UINT64_MAX for the overflow bucket) and stores its lower bound in
 * *lower when not NULL; 0 for an empty histogram. q = 1 gives the bucket of the maximum. */
uint64_t llhist_quantile(const struct llhist *h, double q, uint64_t *lower);

/* Sum estimated from bucket midpoints (lower bound for the overflow bucket). */
double llhist_sum_estimate(const struct llhist *h);

/* Prometheus `le` bounds: the upper bound of every 4th sub-bucket from 32 units (the top of
 * octave 4) to 2^24 (4 bounds per power of two: x1.25, x1.2, x1.17, x1.14), 77 in all; `+Inf`
 * comes after them. llhist_prom_slot(k) is the bucket whose upper bound is bound k; the
 * cumulative count of bound k sums buckets 0..llhist_prom_slot(k). */
#define LLHIST_PROM_FIRST  31
#define LLHIST_PROM_STEP   4
#define LLHIST_PROM_BOUNDS ((LLHIST_OVERFLOW - 1 - LLHIST_PROM_FIRST) / LLHIST_PROM_STEP + 1)
static inline size_t llhist_prom_slot(size_t k)
{
    return LLHIST_PROM_FIRST + k * LLHIST_PROM_STEP;
}

#endif
