/* common/llhist: bucket bounds, quantiles of known distributions within the bucket error,
 * merge exactness, the Prometheus bounds. True quantiles come from the sorted samples. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "llhist.h"

/* Every bucket: its bounds index back to it, buckets tile [0, 2^24) without gaps, and above the
 * linear range a bucket is at most 1/16 of its lower bound wide. */
static void test_bounds(void **state)
{
    (void)state;
    assert_int_equal(LLHIST_SLOTS, 337);
    for (size_t i = 0; i < LLHIST_OVERFLOW; i++) {
        uint64_t lo = llhist_lower(i), hi = llhist_upper(i);
        assert_true(hi > lo);
        assert_int_equal(llhist_index(lo), i);
        assert_int_equal(llhist_index(hi - 1), i);
        assert_int_equal(llhist_index(hi), i + 1);
        assert_int_equal(llhist_lower(i + 1), hi);
        if (i >= LLHIST_SUB)
            assert_true((double)(hi - lo) / (double)lo <= 1.0 / 16 + 1e-12);
    }
    assert_int_equal(llhist_upper(LLHIST_OVERFLOW - 1), 1u << 24);
    assert_int_equal(llhist_index((1u << 24) - 1), LLHIST_OVERFLOW - 1);
    assert_int_equal(llhist_index(1u << 24), LLHIST_OVERFLOW);
    assert_int_equal(llhist_index(UINT64_MAX), LLHIST_OVERFLOW);
    assert_int_equal(llhist_upper(LLHIST_OVERFLOW), UINT64_MAX);
    /* hand-computed: 100 = 0b1100100, octave 6, sub (100 >> 2) - 16 = 9: [100, 104) */
    assert_int_equal(llhist_index(100), 16 * 3 + 9);
    assert_int_equal(llhist_lower(16 * 3 + 9), 100);
    assert_int_equal(llhist_upper(16 * 3 + 9), 104);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform01(void) /* xorshift64*, (0, 1) */
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return ((double)((rng_state * 2685821657736338717ull) >> 11) + 0.5) / 9007199254740992.0;
}

/* Records the samples, then for each quantile checks that the true value (rank ceil(q n) of the
 * sorted samples) lies in [lower, upper) of the reported bucket and that upper is at most 1/16
 * above it. Returns the largest (upper - true) / true seen. */
static double check_quantiles(uint64_t *v, size_t n, const char *what)
{
    static const double qs[] = {0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999, 0.9999, 1.0};
    struct llhist *h = calloc(1, sizeof(*h));
    assert_non_null(h);
    for (size_t i = 0; i < n; i++)
        llhist_record(h, v[i], 1);
    assert_int_equal(llhist_total(h), n);
    qsort(v, n, sizeof(v[0]), cmp_u64);
    double worst = 0;
    for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
        size_t rank = (size_t)ceil(qs[k] * (double)n);
        uint64_t truth = v[rank - 1], lo;
        uint64_t up = llhist_quantile(h, qs[k], &lo);
        assert_true(lo <= truth);
        assert_true(truth < up);
        double rel = (double)(up - truth) / (double)truth;
        if (truth >= LLHIST_SUB)
            assert_true(rel <= 1.0 / 16);
        if (rel > worst)
            worst = rel;
    }
    printf("%s: n=%zu, worst relative error of the reported upper bound %.4f%% (bound 6.25%%)\n",
           what, n, worst * 100);
    free(h);
    return worst;
}

static void test_known_distributions(void **state)
{
    (void)state;
    size_t n = 1000000;
    uint64_t *v = malloc((1u << 20) * sizeof(*v)); /* the largest set below */
    assert_non_null(v);
    /* exponential, mean 500 us, shifted by 50 us (an RPC's floor) */
    for (size_t i = 0; i < n; i++)
        v[i] = 50 + (uint64_t)(-500.0 * log(uniform01()));
    check_quantiles(v, n, "exponential(500 us) + 50 us");
    /* log-normal, median 2 ms, sigma 1.5: spans 4 decades */
    for (size_t i = 0; i < n; i++) {
        double z = sqrt(-2 * log(uniform01())) * cos(2 * M_PI * uniform01());
        double x = 2000.0 * exp(1.5 * z);
        v[i] = x < 16 ? 16 : x > 16000000 ? 16000000 : (uint64_t)x;
    }
    check_quantiles(v, n, "log-normal(2 ms, 1.5)");
    /* every integer 16 .. 2^20: each bucket's worst case is in it */
    n = (1u << 20) - 16 + 1;
    for (size_t i = 0; i < n; i++)
        v[i] = 16 + i;
    double w = check_quantiles(v, n, "uniform 16 us .. 1.048576 s");
    assert_true(w > 0.01); /* the test sees real bucket error, not exact values */
    free(v);
}

/* A merge is exact: merging two histograms equals recording both sample sets in one. */
static void test_merge(void **state)
{
    (void)state;
    struct llhist *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b)),
                  *both = calloc(1, sizeof(*both));
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(both);
    for (int i = 0; i < 100000; i++) {
        uint64_t x = (uint64_t)(-300.0 * log(uniform01()));
        uint64_t y = 100000 + (uint64_t)(-30000.0 * log(uniform01()));
        llhist_record(a, x, 1);
        llhist_record(b, y, 2);
        llhist_record(both, x, 1);
        llhist_record(both, y, 2);
    }
    llhist_merge(a, b);
    assert_memory_equal(a->c, both->c, sizeof(a->c));
    assert_int_equal(llhist_total(a), 300000);
    uint32_t k[LLHIST_SLOTS] = {0};
    k[0] = 1;
    k[LLHIST_OVERFLOW] = 3;
    llhist_merge_u32(a, k);
    assert_int_equal(a->c[0], both->c[0] + 1);
    assert_int_equal(a->c[LLHIST_OVERFLOW], both->c[LLHIST_OVERFLOW] + 3);
    /* the maximum: 3 overflows */
    assert_int_equal(llhist_quantile(a, 1.0, NULL), UINT64_MAX);
    free(a);
    free(b);
    free(both);
}

/* 77 bounds, 32 .. 2^24, increasing, each at most 1.25x the previous; each is a bucket edge. */
static void test_prom_bounds(void **state)
{
    (void)state;
    assert_int_equal(LLHIST_PROM_BOUNDS, 77);
    assert_int_equal(llhist_upper(llhist_prom_slot(0)), 32);
    assert_int_equal(llhist_upper(llhist_prom_slot(1)), 40);
    assert_int_equal(llhist_upper(llhist_prom_slot(LLHIST_PROM_BOUNDS - 1)), 1u << 24);
    for (size_t k = 1; k < LLHIST_PROM_BOUNDS; k++) {
        double r = (double)llhist_upper(llhist_prom_slot(k)) /
                   (double)llhist_upper(llhist_prom_slot(k - 1));
        assert_true(r > 1.0 && r <= 1.25);
    }
    /* an empty histogram has no quantile */
    struct llhist e = {0};
    assert_int_equal(llhist_quantile(&e, 0.5, NULL), 0);
    assert_true(llhist_sum_estimate(&e) == 0);
    llhist_record(&e, 100, 2); /* [100, 104): midpoint 102 */
    assert_true(llhist_sum_estimate(&e) == 204);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_known_distributions),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_prom_bounds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
