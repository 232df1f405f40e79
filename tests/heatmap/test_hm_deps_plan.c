/* The dependency planner (heatmap/hm_deps_plan.c) against a hand computation: a workflow at ams
 * reads an NFS export at nyc, calls a service at chi (routed via nyc) and pulls from a peer at osl
 * (routed via nyc and chi: a transit pair). Today's bytes per circuit direction, the change if it
 * ran at nyc, and the peak utilisation before and after, from two windows of cells. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"
#include "hm_deps_plan.h"

static const char CFG[] =
    "{\"window_seconds\": 60,"
    " \"sites\": [{\"name\": \"ams\", \"prefixes\": [\"10.4.0.0/16\"]},"
    "            {\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
    "            {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},"
    "            {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],"
    " \"devices\": [{\"name\": \"r\", \"site\": \"nyc\", \"gnmi\": {}},"
    "              {\"name\": \"q\", \"site\": \"chi\", \"gnmi\": {}}],"
    " \"links\": [{\"device\": \"r\", \"interface\": \"a\", \"site\": \"nyc\", \"peer_site\": "
    "\"ams\", \"circuit\": \"ams-nyc\"},"
    "            {\"device\": \"r\", \"interface\": \"b\", \"site\": \"nyc\", \"peer_site\": "
    "\"chi\", \"circuit\": \"nyc-chi\"},"
    "            {\"device\": \"q\", \"interface\": \"d\", \"site\": \"chi\", \"peer_site\": "
    "\"osl\", \"circuit\": \"chi-osl\"}],"
    " \"routes\": [{\"src\": \"ams\", \"dst\": \"chi\", \"via\": [\"nyc\"]},"
    "             {\"src\": \"chi\", \"dst\": \"ams\", \"via\": [\"nyc\"]},"
    "             {\"src\": \"ams\", \"dst\": \"osl\", \"via\": [\"nyc\", \"chi\"]},"
    "             {\"src\": \"osl\", \"dst\": \"ams\", \"via\": [\"chi\", \"nyc\"]},"
    "             {\"src\": \"nyc\", \"dst\": \"osl\", \"via\": [\"chi\"]},"
    "             {\"src\": \"osl\", \"dst\": \"nyc\", \"via\": [\"chi\"]}]}";

enum { AMS, NYC, CHI, OSL };
#define W1 (INT64_C(1764442380) * 1000000)
#define W2 (W1 + 60 * INT64_C(1000000))

static const struct hm_dep_circuit *circ(const struct hm_dep_plan *p, int a, int b)
{
    for (size_t i = 0; i < p->n_circuits; i++)
        if (p->circuits[i].src_site == a && p->circuits[i].dst_site == b)
            return &p->circuits[i];
    return NULL;
}

static void test_plan_move(void **state)
{
    (void)state;
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("t.json", CFG, &errs);
    for (size_t i = 0; i < errs.n; i++)
        fprintf(stderr, "%s: %s\n", errs.items[i].jpath, errs.items[i].msg);
    cfg_errors_free(&errs);
    assert_non_null(cfg);
    assert_int_equal(cfg_site_index(cfg, "ams"), AMS);
    assert_int_equal(cfg_site_index(cfg, "osl"), OSL);
    const uint64_t nfs_in = 5000000, svc_out = 2000000, svc_in = 100000, peer_out = 50000,
                   peer_in = 1000000;
    struct hm_dep_row rows[] = {
        {W1, AMS, NYC, "nfs", "10.1.0.50:/data", 0, nfs_in, 40},
        {W1, AMS, CHI, "service", "feature-store", svc_out, svc_in, 3},
        {W2, AMS, OSL, "peer", "10.3.0.7:9100", peer_out, peer_in, 1},
    };
    const uint64_t cap = 10000000; /* 10 Mbit/s: 75 MB per 60 s window */
    struct hm_dep_cell cells[] = {
        {W1, NYC, AMS, true, 70000000, cap},
        {W2, NYC, AMS, true, 10000000, cap},
        {W2, CHI, OSL, true, 67000000, cap},
    };
    struct hm_dep_plan p;
    char err[128];
    assert_int_equal(hm_deps_plan(cfg, rows, 3, cells, 3, NYC, &p, err, sizeof err), 0);

    uint64_t total = nfs_in + svc_out + svc_in + peer_out + peer_in;
    assert_int_equal(p.total_bytes, total);
    assert_int_equal(p.unrouted_bytes, 0);
    assert_int_equal(p.n_endpoints, 3);
    assert_string_equal(p.endpoints[0].endpoint, "10.1.0.50:/data"); /* biggest first */
    assert_true(fabs(p.endpoints[0].share - (double)nfs_in / total) < 1e-12);
    assert_int_equal(p.endpoints[1].peak_out_bps, svc_out * 8 / 60);

    /* today: every byte on each hop of its path */
    assert_int_equal(p.n_circuits, 6);
    assert_int_equal(circ(&p, NYC, AMS)->bytes_now, nfs_in + svc_in + peer_in);
    assert_int_equal(circ(&p, AMS, NYC)->bytes_now, svc_out + peer_out);
    assert_int_equal(circ(&p, NYC, CHI)->bytes_now, svc_out + peer_out);
    assert_int_equal(circ(&p, CHI, NYC)->bytes_now, svc_in + peer_in);
    assert_int_equal(circ(&p, CHI, OSL)->bytes_now, peer_out);
    assert_int_equal(circ(&p, OSL, CHI)->bytes_now, peer_in);
    /* at nyc: the NFS read stays inside nyc, the rest leaves nyc by the same hops */
    assert_int_equal(circ(&p, NYC, AMS)->bytes_moved, 0);
    assert_int_equal(circ(&p, AMS, NYC)->bytes_moved, 0);
    assert_int_equal(circ(&p, NYC, CHI)->bytes_moved, svc_out + peer_out);
    assert_int_equal(circ(&p, CHI, NYC)->bytes_moved, svc_in + peer_in);
    assert_int_equal(circ(&p, CHI, OSL)->bytes_moved, peer_out);
    assert_int_equal(circ(&p, OSL, CHI)->bytes_moved, peer_in);

    /* peaks: nyc->ams at W1 carried 70 MB, of which nfs_in + svc_in were the workflow's */
    const struct hm_dep_circuit *c = circ(&p, NYC, AMS);
    double w1_now = 70000000.0 * 8 / (cap * 60.0);
    double w1_moved = (70000000.0 - (double)(nfs_in + svc_in)) * 8 / (cap * 60.0);
    assert_true(c->has_util);
    assert_true(fabs(c->peak_util_now - w1_now) < 1e-12);
    assert_true(fabs(c->peak_util_moved - w1_moved) < 1e-12);
    assert_int_equal(c->peak_window_now_us, W1);
    assert_true(c->exceeds_now);    /* 93.3% > 90% */
    assert_false(c->exceeds_moved); /* 86.5% */
    c = circ(&p, CHI, OSL);
    assert_true(fabs(c->peak_util_moved - 67000000.0 * 8 / (cap * 60.0)) < 1e-12);
    assert_false(circ(&p, AMS, NYC)->has_util); /* no cells: unknown, not zero */
    hm_deps_plan_free(&p);

    /* without a target nothing moves, and the peak is what the counters saw */
    assert_int_equal(hm_deps_plan(cfg, rows, 3, cells, 3, -1, &p, err, sizeof err), 0);
    assert_int_equal(circ(&p, NYC, AMS)->bytes_moved, 0);
    assert_true(fabs(circ(&p, NYC, AMS)->peak_util_moved - w1_now) < 1e-12);
    hm_deps_plan_free(&p);
    cfg_free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_plan_move)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
