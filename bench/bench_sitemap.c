/* Site-map lookups per second: the trie (sm_lookup) against a linear scan of the same prefixes,
 * in one run, over the same random addresses. Prints p50/p99/max of per-batch rates. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sitemap.h"
#include "timeutil.h"

struct pfx {
    uint32_t net, mask;
    int site;
};

static uint64_t rng_state = 88172645463325252ull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}

static int linear(const struct pfx *p, int n, uint32_t a)
{
    int best = -1, bestlen = -1;
    for (int i = 0; i < n; i++)
        if ((a & p[i].mask) == p[i].net) {
            int len = __builtin_popcount(p[i].mask);
            if (len > bestlen) {
                bestlen = len;
                best = p[i].site;
            }
        }
    return best;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int nprefix = argc > 1 ? atoi(argv[1]) : 200;
    enum { BATCH = 100000, BATCHES = 30 };
    struct pfx *p = calloc(nprefix, sizeof(*p));
    struct sitemap *sm = sm_new();
    for (int i = 0; i < nprefix;) {
        int len = 16 + (int)(rnd() % 9); /* /16../24, like site aggregates, nested at random */
        uint32_t mask = 0xffffffffu << (32 - len);
        uint32_t net = (0x0a000000u | (rnd() & 0x00ffffffu)) & mask;
        uint32_t be = htonl(net);
        if (sm_add(sm, AF_INET, (uint8_t *)&be, len, i) != 0)
            continue; /* the same prefix drawn twice: draw again */
        p[i] = (struct pfx){net, mask, i};
        i++;
    }
    uint32_t *addrs = malloc(BATCH * sizeof(uint32_t));
    for (int i = 0; i < BATCH; i++)
        addrs[i] =
            i % 2 ? (p[rnd() % nprefix].net | (rnd() & 0xff)) : (0x0a000000u | (rnd() & 0xffffff));
    double trie[BATCHES], lin[BATCHES];
    long mismatches = 0;
    volatile long sink = 0; /* keeps both loops from being optimised away */
    for (int b = 0; b < BATCHES; b++) {
        int64_t t0 = tm_mono_ns();
        for (int i = 0; i < BATCH; i++) {
            uint32_t be = htonl(addrs[i]);
            sink += sm_lookup(sm, AF_INET, (uint8_t *)&be);
        }
        int64_t t1 = tm_mono_ns();
        for (int i = 0; i < BATCH / 10; i++)
            sink += linear(p, nprefix, addrs[i]);
        int64_t t2 = tm_mono_ns();
        trie[b] = (double)(t1 - t0) / BATCH; /* ns per lookup, averaged over one batch */
        lin[b] = (double)(t2 - t1) / (BATCH / 10);
    }
    for (int i = 0; i < BATCH; i++) {
        uint32_t be = htonl(addrs[i]);
        if (sm_lookup(sm, AF_INET, (uint8_t *)&be) != linear(p, nprefix, addrs[i]))
            mismatches++;
    }
    qsort(trie, BATCHES, sizeof(double), cmp_d);
    qsort(lin, BATCHES, sizeof(double), cmp_d);
    printf("site map, %d IPv4 prefixes, %d batches of %d lookups (linear: %d per batch)\n", nprefix,
           BATCHES, BATCH, BATCH / 10);
    /* with 30 batches, p99 is the second slowest batch */
    printf(
        "  trie   ns/lookup per batch: p50 %.1f  p99 %.1f  max %.1f  (%d batches; %.3g lookups/s "
        "at p50)\n",
        trie[BATCHES / 2], trie[BATCHES - 2], trie[BATCHES - 1], BATCHES, 1e9 / trie[BATCHES / 2]);
    printf(
        "  linear ns/lookup per batch: p50 %.1f  p99 %.1f  max %.1f  (%d batches; %.3g lookups/s "
        "at p50)\n",
        lin[BATCHES / 2], lin[BATCHES - 2], lin[BATCHES - 1], BATCHES, 1e9 / lin[BATCHES / 2]);
    printf("  trie is %.1fx faster than the linear scan at p50; answers differing: %ld of %d "
           "(must be 0)\n",
           lin[BATCHES / 2] / trie[BATCHES / 2], mismatches, BATCH);
    sm_free(sm);
    free(p);
    free(addrs);
    return mismatches ? 1 : 0;
}
