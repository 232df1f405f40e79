/* Priority sampling of a window's flows. */
#include "prisample.h"

#include <math.h>
#include <stdlib.h>

struct prio {
    double q;
    size_t i;
};

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]: never 0, so every priority is finite. */
static double uniform01(uint64_t *s)
{
    return (double)((splitmix64(s) >> 11) + 1) * 0x1.0p-53;
}

static int by_priority_desc(const void *a, const void *b)
{
    const struct prio *x = a, *y = b;
    return x->q < y->q ? 1 : x->q > y->q ? -1 : 0;
}

static int by_index(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

size_t prisample_select(const uint64_t *w, size_t n, size_t k, uint64_t seed, size_t *keep,
                        double *tau)
{
    *tau = 0;
    if (n <= k) {
        for (size_t i = 0; i < n; i++)
            keep[i] = i;
        return n;
    }
    struct prio *p = malloc(n * sizeof(*p));
    if (!p)
        return (size_t)-1;
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        p[i].q = (double)w[i] / uniform01(&s);
        p[i].i = i;
    }
    qsort(p, n, sizeof(*p), by_priority_desc);
    *tau = p[k].q;
    for (size_t j = 0; j < k; j++)
        keep[j] = p[j].i;
    free(p);
    qsort(keep, k, sizeof(*keep), by_index);
    return k;
}

double prisample_estimate(uint64_t w, double tau)
{
    return (double)w > tau ? (double)w : tau;
}

static uint64_t scaled(uint64_t v, double factor)
{
    return (uint64_t)llround((double)v * factor);
}

int prisample_flowset(struct flowset *fs, size_t k, uint64_t seed, double *tau)
{
    *tau = 0;
    if (fs->n <= k)
        return 0;
    uint64_t *w = malloc(fs->n * sizeof(*w));
    size_t *keep = malloc((k ? k : 1) * sizeof(*keep));
    if (!w || !keep) {
        free(w);
        free(keep);
        return -1;
    }
    for (size_t i = 0; i < fs->n; i++)
        w[i] = flowset_weight(&fs->v[i]);
    size_t m = prisample_select(w, fs->n, k, seed, keep, tau);
    if (m == (size_t)-1) {
        free(w);
        free(keep);
        return -1;
    }
    for (size_t j = 0; j < m; j++) {
        struct flow_rec *r = &fs->v[keep[j]];
        uint64_t wi = w[keep[j]];
        if ((double)wi < *tau && wi > 0) {
            double f = *tau / (double)wi;
            r->tx_bytes = scaled(r->tx_bytes, f);
            r->rx_bytes = scaled(r->rx_bytes, f);
            r->bytes = scaled(r->bytes, f);
        }
        if (keep[j] != j)
            fs->v[j] =
                *r; /* keep[] is increasing, so j <= keep[j]: nothing unread is overwritten */
    }
    fs->n = m;
    free(w);
    free(keep);
    return 0;
}
