/* Log-linear histograms: bucket bounds, record, merge, quantiles. */
#include "llhist.h"

uint64_t llhist_lower(size_t i)
{
    if (i < LLHIST_SUB)
        return i;
    if (i >= LLHIST_OVERFLOW)
        return (uint64_t)1 << LLHIST_TOP_EXP;
    unsigned e = (unsigned)(i / LLHIST_SUB) + LLHIST_SUB_BITS - 1;
    uint64_t s = i % LLHIST_SUB;
    return (LLHIST_SUB + s) << (e - LLHIST_SUB_BITS);
}

uint64_t llhist_upper(size_t i)
{
    if (i >= LLHIST_OVERFLOW)
        return UINT64_MAX;
    if (i < LLHIST_SUB)
        return i + 1;
    unsigned e = (unsigned)(i / LLHIST_SUB) + LLHIST_SUB_BITS - 1;
    uint64_t s = i % LLHIST_SUB;
    return (LLHIST_SUB + s + 1) << (e - LLHIST_SUB_BITS);
}

void llhist_record(struct llhist *h, uint64_t v, uint64_t n)
{
    h->c[llhist_index(v)] += n;
}

void llhist_merge(struct llhist *dst, const struct llhist *src)
{
    for (size_t i = 0; i < LLHIST_SLOTS; i++)
        dst->c[i] += src->c[i];
}

void llhist_merge_u32(struct llhist *dst, const uint32_t src[LLHIST_SLOTS])
{
    for (size_t i = 0; i < LLHIST_SLOTS; i++)
        dst->c[i] += src[i];
}

uint64_t llhist_total(const struct llhist *h)
{
    uint64_t t = 0;
    for (size_t i = 0; i < LLHIST_SLOTS; i++)
        t += h->c[i];
    return t;
}

uint64_t llhist_quantile(const struct llhist *h, double q, uint64_t *lower)
{
    uint64_t total = llhist_total(h);
    if (lower)
        *lower = 0;
    if (total == 0)
        return 0;
    double want = q * (double)total;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want)
        rank++;
    if (rank < 1)
        rank = 1;
    if (rank > total)
        rank = total;
    uint64_t seen = 0;
    size_t i = 0;
    for (; i < LLHIST_SLOTS; i++) {
        seen += h->c[i];
        if (seen >= rank)
            break;
    }
    if (lower)
        *lower = llhist_lower(i);
    return llhist_upper(i);
}

double llhist_sum_estimate(const struct llhist *h)
{
    double s = 0;
    for (size_t i = 0; i < LLHIST_SLOTS; i++) {
        if (!h->c[i])
            continue;
        double mid = i >= LLHIST_OVERFLOW
                         ? (double)llhist_lower(i)
                         : ((double)llhist_lower(i) + (double)llhist_upper(i)) / 2.0;
        s += (double)h->c[i] * mid;
    }
    return s;
}
