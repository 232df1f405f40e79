/* Priority sampling: k=100 of 10,000 flows with heavy-tailed sizes, over 400 seeds. The estimated
 * total is unbiased (the mean over seeds is within 1% of the true total, which is computed here
 * from the generated sizes, not by the code under test), every kept flow above the threshold keeps
 * its exact bytes, and with <= k flows nothing changes. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flowset.h"
#include "prisample.h"

#define NFLOWS 10000
#define K      100
#define SEEDS  400

/* Pareto-like sizes (alpha 1.2) from a fixed generator: many mice, a few elephants. */
static void make_flows(struct flowset *fs, uint64_t *truth_tx, uint64_t *truth_rx)
{
    uint64_t s = 12345;
    *truth_tx = *truth_rx = 0;
    flowset_clear(fs);
    for (int i = 0; i < NFLOWS; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        double u = ((double)(s >> 11) + 1) / 9007199254740993.0;
        uint64_t w = (uint64_t)(1000.0 / pow(u, 1.0 / 1.2));
        struct flow_rec *r = flowset_add(fs);
        assert_non_null(r);
        r->source = FLOW_SRC_SOCKET;
        r->owner.pid = (uint32_t)i; /* identifies the flow after thinning */
        r->tx_bytes = w * 3 / 4;
        r->rx_bytes = w - w * 3 / 4;
        *truth_tx += r->tx_bytes;
        *truth_rx += r->rx_bytes;
    }
}

static void test_unbiased_and_exact_above_tau(void **state)
{
    (void)state;
    struct flowset fs = {0};
    static uint64_t orig_tx[NFLOWS], orig_rx[NFLOWS];
    uint64_t ttx, trx;
    double sum_est = 0;
    size_t exact_checked = 0;
    for (int seed = 1; seed <= SEEDS; seed++) {
        make_flows(&fs, &ttx, &trx);
        for (size_t i = 0; i < fs.n; i++) {
            orig_tx[i] = fs.v[i].tx_bytes;
            orig_rx[i] = fs.v[i].rx_bytes;
        }
        double tau = 0;
        assert_int_equal(prisample_flowset(&fs, K, (uint64_t)seed * 7919, &tau), 0);
        assert_int_equal(fs.n, K);
        assert_true(tau > 0);
        double est = 0;
        size_t above = 0, above_kept = 0;
        for (size_t i = 0; i < NFLOWS; i++)
            above += (double)(orig_tx[i] + orig_rx[i]) > tau;
        for (size_t j = 0; j < fs.n; j++) {
            const struct flow_rec *r = &fs.v[j];
            uint32_t i = r->owner.pid;
            uint64_t w = orig_tx[i] + orig_rx[i];
            est += (double)(r->tx_bytes + r->rx_bytes);
            if ((double)w > tau) {
                /* above the threshold: untouched */
                assert_int_equal(r->tx_bytes, orig_tx[i]);
                assert_int_equal(r->rx_bytes, orig_rx[i]);
                exact_checked++;
                above_kept++;
            } else {
                /* below: scaled to tau, tx and rx alike (within rounding) */
                assert_true(fabs((double)(r->tx_bytes + r->rx_bytes) - tau) <= 1.0);
            }
        }
        assert_int_equal(above_kept, above); /* every flow above tau is in the sample */
        sum_est += est;
    }
    double mean = sum_est / SEEDS;
    double truth = (double)(ttx + trx);
    double err = (mean - truth) / truth;
    printf("true total %.0f bytes, mean estimate over %d seeds %.0f, error %+.3f%%, %zu exact "
           "flows checked\n",
           truth, SEEDS, mean, err * 100, exact_checked);
    assert_true(fabs(err) < 0.01);
    assert_true(exact_checked > 0);
    flowset_free(&fs);
}

static void test_at_most_k_is_exact(void **state)
{
    (void)state;
    struct flowset fs = {0};
    for (int i = 0; i < K; i++) {
        struct flow_rec *r = flowset_add(&fs);
        r->tx_bytes = (uint64_t)i * 1000 + 1;
        r->rx_bytes = 7;
    }
    double tau = -1;
    assert_int_equal(prisample_flowset(&fs, K, 1, &tau), 0);
    assert_true(tau == 0);
    assert_int_equal(fs.n, K);
    for (int i = 0; i < K; i++) {
        assert_int_equal(fs.v[i].tx_bytes, (uint64_t)i * 1000 + 1);
        assert_int_equal(fs.v[i].rx_bytes, 7);
    }
    flowset_free(&fs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unbiased_and_exact_above_tau),
        cmocka_unit_test(test_at_most_k_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
