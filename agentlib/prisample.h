/* Priority sampling (Duffield, Lund, Thorup, "Priority sampling for estimation of arbitrary
 * subset sums", JACM 2007): of n weighted items keep the k with the largest priority w/u
 * (u uniform in (0,1]); with tau the (k+1)-th largest priority, max(w, tau) is an unbiased
 * estimate of each kept item's weight, and items with w > tau are kept exactly. */
#ifndef WL_PRISAMPLE_H
#define WL_PRISAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "flowset.h"

/* Chooses which of the n weights (all > 0) to keep. keep receives the kept indexes in
 * increasing order (room for k); returns how many (n when n <= k, then *tau = 0). Returns
 * (size_t)-1 when out of memory. */
size_t prisample_select(const uint64_t *w, size_t n, size_t k, uint64_t seed, size_t *keep,
                        double *tau) __attribute__((warn_unused_result));

/* The estimate of a kept item of weight w. */
double prisample_estimate(uint64_t w, double tau);

/* Thins fs in place to at most k flows and scales each kept flow's byte counts (tx and rx alike)
 * to its estimate. *tau is 0 when nothing was sampled. Returns 0 or -1 (out of memory, fs
 * unchanged). */
int prisample_flowset(struct flowset *fs, size_t k, uint64_t seed, double *tau)
    __attribute__((warn_unused_result));

#endif
