/* Unit tests of the pure pieces the scenarios reach only indirectly: alert replay from an alert
 * already open, episode/row matching, top workflows, and the exact spreading of a total. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "alerts.h"
#include "recon.h"

#define W INT64_C(60000000) /* one 60 s window in microseconds */

static struct alert_window win(int k, enum alert_mark m, uint64_t unattributed)
{
    return (struct alert_window){
        .window_start_us = k * W, .mark = m, .unattributed_bytes = unattributed, .ratio = 0.5};
}

/* An alert open since window 2 (peak 900 bytes) carries on: window 10 hits (500 bytes, peak
 * stays 900), 11 is neutral, 12 and 13 clear -> resolved at 13 (resolve_windows 2), first window
 * still 2, last hit 10. */
static void test_replay_from_open_alert(void **state)
{
    (void)state;
    struct alert_episode before = {.first_window_us = 2 * W,
                                   .opened_window_us = 4 * W,
                                   .last_window_us = 8 * W,
                                   .peak_unattributed_bytes = 900,
                                   .peak_ratio = 0.7};
    struct alert_window w[] = {win(10, ALERT_HIT, 500), win(11, ALERT_NEUTRAL, 0),
                               win(12, ALERT_CLEAR, 0), win(13, ALERT_CLEAR, 0)};
    struct alert_episode out[4];
    assert_int_equal(alerts_replay(3, 2, w, 4, &before, out, 4), 1);
    assert_true(out[0].resolved);
    assert_int_equal(out[0].first_window_us, 2 * W);
    assert_int_equal(out[0].last_window_us, 10 * W);
    assert_int_equal(out[0].resolved_window_us, 13 * W);
    assert_int_equal(out[0].peak_unattributed_bytes, 900);
    assert_int_equal(out[0].n_hits, 1);
    /* with no hit at all it still resolves, and says it has no figures of its own */
    assert_int_equal(alerts_replay(3, 2, w + 2, 2, &before, out, 4), 1);
    assert_true(out[0].resolved);
    assert_int_equal(out[0].n_hits, 0);
    assert_int_equal(out[0].last_window_us, 8 * W);
}

/* Two hits, a clear, three hits: the first run is too short (alert_windows 3); one episode from
 * window 3; an out buffer too small still counts every episode. */
static void test_replay_runs(void **state)
{
    (void)state;
    struct alert_window w[] = {
        win(0, ALERT_HIT, 1), win(1, ALERT_HIT, 1),     win(2, ALERT_CLEAR, 0),
        win(3, ALERT_HIT, 1), win(4, ALERT_NEUTRAL, 0), win(5, ALERT_HIT, 1),
        win(6, ALERT_HIT, 1), win(7, ALERT_CLEAR, 0),   win(8, ALERT_CLEAR, 0),
        win(9, ALERT_HIT, 1), win(10, ALERT_HIT, 1),    win(11, ALERT_HIT, 1)};
    struct alert_episode out[1];
    assert_int_equal(alerts_replay(3, 2, w, 12, NULL, out, 1), 2);
    assert_int_equal(out[0].first_window_us, 3 * W);
    assert_int_equal(out[0].opened_window_us, 6 * W);
    assert_int_equal(out[0].resolved_window_us, 8 * W);
    assert_int_equal(out[0].n_hits, 3);
}

/* Rows: 1 resolved [0,4], 2 open from 10. Episodes: [0,4] resolved, [10,..] open, [20,22]
 * resolved (new). -> update row 1, update row 2, insert the third; nothing withdrawn. */
static void test_match(void **state)
{
    (void)state;
    struct alert_episode e[3] = {
        {.first_window_us = 0, .last_window_us = 4 * W, .resolved = true},
        {.first_window_us = 10 * W, .last_window_us = 15 * W},
        {.first_window_us = 20 * W, .last_window_us = 22 * W, .resolved = true},
    };
    struct alert_row rows[2] = {
        {.id = 1, .open = false, .first_window_us = 0, .last_window_us = 4 * W},
        {.id = 2, .open = true, .first_window_us = 10 * W, .last_window_us = 12 * W},
    };
    struct alert_action a[5];
    assert_int_equal(alerts_match(e, 3, rows, 2, a), 3);
    assert_int_equal(a[0].kind, ALERT_UPDATE);
    assert_int_equal(a[0].row, 0);
    assert_int_equal(a[1].kind, ALERT_UPDATE);
    assert_int_equal(a[1].row, 1);
    assert_int_equal(a[2].kind, ALERT_INSERT);
    assert_int_equal(a[2].episode, 2);
    /* no episode supports the open row any more: withdrawn; the resolved one stays */
    assert_int_equal(alerts_match(e, 1, rows, 2, a), 2);
    assert_int_equal(a[0].kind, ALERT_UPDATE);
    assert_int_equal(a[1].kind, ALERT_WITHDRAW);
    assert_int_equal(a[1].row, 1);
}

/* An open episode overlapping both a resolved row and the open row continues the open one. */
static void test_match_prefers_open_row(void **state)
{
    (void)state;
    struct alert_episode e = {.first_window_us = 0, .last_window_us = 9 * W};
    struct alert_row rows[2] = {
        {.id = 1, .open = false, .first_window_us = 0, .last_window_us = 2 * W},
        {.id = 2, .open = true, .first_window_us = 5 * W, .last_window_us = 9 * W},
    };
    struct alert_action a[3];
    assert_int_equal(alerts_match(&e, 1, rows, 2, a), 1);
    assert_int_equal(a[0].kind, ALERT_UPDATE);
    assert_int_equal(a[0].row, 1);
}

static void test_top_workflows(void **state)
{
    (void)state;
    struct recon_rollup r[] = {
        {.src_site = 0, .dst_site = 1, .workflow = "etl", .bytes = 300},
        {.src_site = 0, .dst_site = 1, .workflow = "train", .bytes = 250},
        {.src_site = 0, .dst_site = 1, .workflow = "train", .bytes = 100},
        {.src_site = 1, .dst_site = 0, .workflow = "other-pair", .bytes = 9999},
        {.src_site = 0, .dst_site = 1, .workflow = "", .bytes = 300},
        {.src_site = 0, .dst_site = 1, .workflow = "tiny", .bytes = 1},
    };
    struct alert_workflow top[3];
    /* train 350; etl and "" 300 each (tie: by name, "" first); tiny left out */
    assert_int_equal(alerts_top_workflows(r, 6, 0, 1, top, 3), 3);
    assert_string_equal(top[0].workflow, "train");
    assert_int_equal(top[0].bytes, 350);
    assert_string_equal(top[1].workflow, "");
    assert_string_equal(top[2].workflow, "etl");
}

/* 1,000,003 bytes over [7 s, 131.5 s] cut into 60 s windows: the parts add up exactly, and each
 * is within one byte of total x overlap / span. */
static void test_spread_exact(void **state)
{
    (void)state;
    uint64_t total = 1000003, sum = 0;
    int64_t start = 7000000, end = 131500000;
    for (int64_t ws = 0; ws < 180000000; ws += W) {
        uint64_t part = recon_spread(total, start, end, ws, ws + W);
        int64_t lo = ws > start ? ws : start, hi = ws + W < end ? ws + W : end;
        double want = hi > lo ? (double)total * (double)(hi - lo) / (double)(end - start) : 0;
        assert_true((double)part > want - 1.0 && (double)part < want + 1.0);
        sum += part;
    }
    assert_int_equal(sum, total);
    /* zero length: all in the window holding start */
    assert_int_equal(recon_spread(5, W, W, 0, W), 0);
    assert_int_equal(recon_spread(5, W, W, W, 2 * W), 5);
}

/* Counters up to 1 s old over 10 s windows (the e2e stack: snmpd's interface cache at 1 s). The
 * cells are a CI run's nyc->chi at load onset: over 1.0805 and 1.0517, then ok 0.9916 -- within
 * what 1 s stale counters explain (the true bytes may be 10 % more than read), so no over alert;
 * without staleness the same cells open one. Bounds: over 1.05 x 1.1 = 1.155, red 0.8 x 0.9 =
 * 0.72. */
static void test_mark_staleness(void **state)
{
    (void)state;
    struct cfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.window_seconds = 10;
    cfg.green = 0.95;
    cfg.red = 0.80;
    cfg.over = 1.05;
    cfg.counter_staleness_seconds = 1;
    assert_int_equal(alerts_mark_cell(&cfg, ALERT_OVER, CELL_OVER, true, 1.0805), ALERT_NEUTRAL);
    assert_int_equal(alerts_mark_cell(&cfg, ALERT_OVER, CELL_OVER, true, 1.16), ALERT_HIT);
    assert_int_equal(alerts_mark_cell(&cfg, ALERT_OVER, CELL_OK, true, 0.9916), ALERT_CLEAR);
    assert_int_equal(alerts_mark_cell(&cfg, ALERT_GAP, CELL_RED, true, 0.75), ALERT_NEUTRAL);
    assert_int_equal(alerts_mark_cell(&cfg, ALERT_GAP, CELL_RED, true, 0.50), ALERT_HIT);
    assert_int_equal(alerts_mark_cell(&cfg, ALERT_GAP, CELL_WARN, true, 0.91), ALERT_CLEAR);
    assert_int_equal(alerts_mark_cell(&cfg, ALERT_GAP, CELL_INCOMPLETE, false, 0), ALERT_NEUTRAL);

    double cov[] = {1.0805, 1.0517, 0.9916, 1.0080};
    enum cell_status st[] = {CELL_OVER, CELL_OVER, CELL_OK, CELL_OK};
    struct alert_window w[4];
    struct alert_episode out[2];
    for (int stale = 1; stale >= 0; stale--) {
        cfg.counter_staleness_seconds = stale;
        for (int i = 0; i < 4; i++)
            w[i] = (struct alert_window){
                .window_start_us = i * 10000000LL,
                .mark = alerts_mark_cell(&cfg, ALERT_OVER, st[i], true, cov[i]),
                .ratio = cov[i]};
        assert_int_equal(alerts_replay(2, 2, w, 4, NULL, out, 2), stale ? 0 : 1);
    }
    assert_true(out[0].resolved);
    assert_int_equal(out[0].first_window_us, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replay_from_open_alert),
        cmocka_unit_test(test_replay_runs),
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_match_prefers_open_row),
        cmocka_unit_test(test_top_workflows),
        cmocka_unit_test(test_spread_exact),
        cmocka_unit_test(test_mark_staleness),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
