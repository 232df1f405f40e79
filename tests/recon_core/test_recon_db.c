/* recon_db.c against a throwaway real PostgreSQL: raw rows in, recon_db_pending_windows /
 * recon_db_reconcile_window / recon_db_mark_done, and the heatmap_cells, attribution_rollup,
 * link_windows and gap_alerts rows (and NOTIFYs) out. Expected figures by hand below. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#include <cmocka.h>

#include "config.h"
#include "db.h"
#include "flow_row.h"
#include "harness.h"
#include "th_db.h"
#include "recon_db.h"
#include "retention.h"
#include "timeutil.h"

/* Windows of 60 s from W0 = 2025-11-02T10:00:00Z (a past day). */
#define W0_S  INT64_C(1762077600)
#define W     INT64_C(60)
#define US(s) ((s)*INT64_C(1000000))

/* nyc -> chi over one circuit of 1 Mbit/s, seen from nyc's border router; alert after 2 red
 * windows, resolve after 2 good ones; a 30 s grace. */
static const char config_json[] =
    "{\"window_seconds\": 60, \"grace_seconds\": 30,"
    " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\", \"fd00:1::/48\"]},"
    "             {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\", \"fd00:2::/48\"]}],"
    " \"devices\": [{\"name\": \"nyc-border-1\", \"site\": \"nyc\", \"gnmi\": {}}],"
    " \"links\": [{\"device\": \"nyc-border-1\", \"interface\": \"et-0/0/1\", \"site\": \"nyc\","
    "             \"peer_site\": \"chi\", \"circuit\": \"nyc-chi-1\", \"capacity_bps\": 1000000}],"
    " \"overhead\": {\"bytes_per_packet\": 66, \"ratio_without_packets\": 0.95},"
    " \"thresholds\": {\"green\": 0.95, \"red\": 0.80, \"min_gap_bytes\": 1000, \"over\": 1.05,"
    "                \"alert_windows\": 2, \"resolve_windows\": 2, \"saturation\": 0.90}}";

static PGconn *db, *listener;
static struct cfg *cfg;

/* a statement on db that must succeed (th_db.h) */
#define exec(...) th_db_exec(db, __VA_ARGS__)

/* the single value of a query, as text ("" for NULL, "<none>" for no row; th_db.h) */
#define one(...) th_db_one(db, __VA_ARGS__)

static const char *ts(int64_t s)
{
    static char buf[8][TM_RFC3339_LEN];
    static int i;
    i = (i + 1) % 8;
    return tm_format_rfc3339(US(s), buf[i]);
}

static void reconcile(int64_t ws_s, struct recon_db_stats *st)
{
    char err[512];
    if (recon_db_reconcile_window(db, cfg, US(ws_s), st, err, sizeof err))
        fail_msg("reconcile %s: %s", ts(ws_s), err);
}

/* Notifications received on the listener since the last call: waits until `expect` arrived (at
 * most 3 s), or 200 ms when none is expected, so a late stray one is still seen. */
static int drain_notifies(int expect)
{
    int n = 0;
    int64_t deadline = tm_mono_ns() + (expect ? 3000 : 200) * INT64_C(1000000);
    for (;;) {
        PQconsumeInput(listener);
        PGnotify *nt;
        while ((nt = PQnotifies(listener))) {
            assert_string_equal(nt->relname, "wanledger_alerts");
            n++;
            PQfreemem(nt);
        }
        int64_t left = deadline - tm_mono_ns();
        if ((expect && n >= expect) || left <= 0)
            return n;
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(PQsocket(listener), &fds);
        struct timeval tv = {.tv_sec = 0, .tv_usec = left / 1000 > 100000 ? 100000 : left / 1000};
        select(PQsocket(listener) + 1, &fds, NULL, NULL, &tv);
    }
}

static int setup(void **state)
{
    (void)state;
    const char *ci = th_pg_default();
    char err[512];
    db = db_connect_str(ci, err, sizeof err);
    listener = db_connect_str(ci, err, sizeof err);
    assert_non_null(db);
    assert_non_null(listener);
    PGresult *r = PQexec(listener, "LISTEN wanledger_alerts");
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    PQclear(r);
    struct cfg_errors errs = {0};
    cfg = cfg_parse("test_recon_db.json", config_json, &errs);
    if (!cfg) {
        for (size_t i = 0; i < errs.n; i++)
            print_error("%s: %s\n", errs.items[i].jpath, errs.items[i].msg);
        fail_msg("config");
    }
    if (db_ensure_partitions(db, US(W0_S - 86400), US(W0_S + 86400), err, sizeof err))
        fail_msg("%s", err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cfg_free(cfg);
    PQfinish(db);
    PQfinish(listener);
    return 0;
}

/*
 * Counters: nyc-border-1 et-0/0/1 sampled every 30 s from W0 to W0+360 (13 samples); out_octets
 * grows 30,000 per 30 s (1000 B/s), no packet counters. Each window [W0+60k, W0+60k+60) gets
 * 60,000 observed bytes, payload 60,000 x 0.95 = 57,000. in_octets stays 0 (chi->nyc idle).
 * Agents (one socket connection nyc 10.1.0.2:40000 -> chi 10.2.0.2:5201, alice/train-42):
 *   window 0: tx 57,000 -> coverage 1.0, ok
 *   windows 1, 2, 3: tx 11,400 -> coverage 0.2, red (unattributed 45,600)
 *   windows 4, 5: tx 57,000 -> ok
 * gap alert (alert_windows 2, resolve_windows 2): opens at window 2 with first_window = window 1,
 * stays open at 3 (last_window 3), 4 is the first good one, resolves at window 5.
 */
static void insert_inputs(void)
{
    for (int k = 0; k <= 12; k++)
        exec("INSERT INTO counter_samples (device, interface, at, uptime_cs, in_octets, "
             "out_octets, counter_bits) VALUES ('nyc-border-1', 'et-0/0/1', '%s', %d, 0, %d, 64)",
             ts(W0_S + 30 * k), 100000 + 3000 * k, 30000 * k);
    static const int tx[] = {57000, 11400, 11400, 11400, 57000, 57000};
    for (int w = 0; w < 6; w++) {
        exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, "
             "n_flows) VALUES ('agent-nyc-gpu-1', %d, 'nyc-gpu-1', '%s', 60, 1)",
             w, ts(W0_S + W * w));
        exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
             "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, pid, "
             "uid, user_name, program, workflow) VALUES ('%s', 'agent-nyc-gpu-1', %d, 0, "
             "'nyc-gpu-1', 'socket', 'tcp', '10.1.0.2', 40000, '10.2.0.2', 5201, 'client', %d, "
             "0, 4307, 1000, 'alice', 'python3', 'train-42')",
             ts(W0_S + W * w), w, tx[w]);
    }
}

static void test_pending_reconcile_alerts(void **state)
{
    (void)state;
    char err[512];
    insert_inputs();

    /* now = end of window 5 + grace: windows up to 5 are due. Counter samples from W0 also feed
     * the window before W0 (its interval would reach back), so that one is listed too. */
    int64_t now_s = W0_S + 6 * W + 30;
    int64_t pend[32];
    size_t n = 0;
    if (recon_db_pending_windows(db, cfg, US(now_s), pend, 32, &n, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(pend[i], US(W0_S + W * ((int64_t)i - 1)));
    /* grace not yet over for window 5 one second earlier */
    if (recon_db_pending_windows(db, cfg, US(now_s - 1), pend, 32, &n, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(n, 6);

    struct recon_db_stats st;
    assert_int_equal(drain_notifies(0), 0);
    for (int w = -1; w <= 5; w++) {
        reconcile(W0_S + W * w, &st);
        /* windows 2, 3 and 5 change the alert (open, extend, resolve): one NOTIFY each */
        int got = drain_notifies(w == 2 || w == 3 || w == 5);
        if (w == -1) {
            /* nothing before W0: both directions incomplete, nothing claimed */
            assert_string_equal(one("SELECT status FROM heatmap_cells WHERE window_start = '%s' "
                                    "AND src_site = 'nyc' AND dst_site = 'chi'",
                                    ts(W0_S - W)),
                                "incomplete");
        }
        if (w == 0) {
            assert_int_equal(st.n_samples, 4); /* W0, +30, +60 and the next one, +90 */
            assert_int_equal(st.n_flows, 1);
            assert_int_equal(st.n_cells, 2);
            assert_string_equal(one("SELECT concat_ws(',', observed_bytes, "
                                    "observed_payload_bytes, attributed_bytes, socket_bytes, "
                                    "unattributed_bytes, coverage, status, valid_fraction) FROM "
                                    "heatmap_cells WHERE window_start = '%s' AND src_site = "
                                    "'nyc' AND dst_site = 'chi'",
                                    ts(W0_S)),
                                "60000,57000,57000,57000,0,1,ok,1");
            /* chi->nyc: no bytes; payload 0 < min_gap_bytes -> idle, coverage unknown */
            assert_string_equal(one("SELECT concat_ws(',', observed_bytes, coverage IS NULL, "
                                    "status) FROM heatmap_cells WHERE window_start = '%s' AND "
                                    "src_site = 'chi' AND dst_site = 'nyc'",
                                    ts(W0_S)),
                                "0,t,idle");
            assert_string_equal(one("SELECT concat_ws(',', source, workflow, user_name, program, "
                                    "host, bytes) FROM attribution_rollup WHERE window_start = "
                                    "'%s' AND src_site = 'nyc' AND dst_site = 'chi'",
                                    ts(W0_S)),
                                "socket,train-42,alice,python3,nyc-gpu-1,57000");
            /* 60,000 B x 8 / (60 s x 1,000,000 bit/s) = 0.008 */
            assert_string_equal(one("SELECT concat_ws(',', counter, device, observed_bytes, "
                                    "round(utilization::numeric, 6)) FROM link_windows WHERE "
                                    "window_start = '%s' AND src_site = 'nyc'",
                                    ts(W0_S)),
                                "out,nyc-border-1,60000,0.008000");
        }
        if (w == 1) {
            /* one red window: no alert yet */
            assert_string_equal(one("SELECT concat_ws(',', attributed_bytes, unattributed_bytes, "
                                    "coverage, status) FROM heatmap_cells WHERE window_start = "
                                    "'%s' AND src_site = 'nyc' AND dst_site = 'chi'",
                                    ts(W0_S + W)),
                                "11400,45600,0.2,red");
            assert_string_equal(one("SELECT count(*) FROM gap_alerts"), "0");
            assert_int_equal(got, 0);
        }
        if (w == 2) {
            assert_int_equal(st.n_alerts_opened, 1);
            assert_int_equal(got, 1);
            assert_string_equal(one("SELECT concat_ws(',', kind, src_site, dst_site, state, "
                                    "first_window = '%s', last_window = '%s', "
                                    "peak_unattributed_bytes, round(peak_ratio::numeric, 6)) "
                                    "FROM gap_alerts",
                                    ts(W0_S + W), ts(W0_S + 2 * W)),
                                "gap,nyc,chi,open,t,t,45600,0.800000");
        }
        if (w == 3) {
            assert_int_equal(st.n_alerts_updated, 1);
            assert_int_equal(got, 1);
            assert_string_equal(one("SELECT concat_ws(',', count(*), min(state), "
                                    "max(last_window) = '%s') FROM gap_alerts",
                                    ts(W0_S + 3 * W)),
                                "1,open,t");
        }
        if (w == 4) {
            /* one good window: still open, nothing changed */
            assert_int_equal(got, 0);
            assert_string_equal(one("SELECT state FROM gap_alerts"), "open");
        }
        if (w == 5) {
            assert_int_equal(st.n_alerts_resolved, 1);
            assert_int_equal(got, 1);
            assert_string_equal(one("SELECT concat_ws(',', count(*), min(state), "
                                    "resolved_at IS NOT NULL, max(last_window) = '%s') FROM "
                                    "gap_alerts GROUP BY resolved_at",
                                    ts(W0_S + 3 * W)),
                                "1,resolved,t,t");
        }
        if (recon_db_mark_done(db, cfg, US(W0_S + W * w), st.seen_last_data_at_us, err, sizeof err))
            fail_msg("%s", err);
    }
    /* everything reconciled: nothing pending */
    if (recon_db_pending_windows(db, cfg, US(now_s), pend, 32, &n, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(n, 0);

    /* Late data for window 2 (marked by ingest): a second agent, at chi, reports the same
     * connection with rx 57,000. The connection counts once, max(11,400 tx, 57,000 rx) = 57,000:
     * window 2 turns ok. The alert's history is now red(1) ok(2) red(3) ok(4) ok(5): no two
     * consecutive reds, so no episode supports it and the resolved row stays as history. */
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) "
         "VALUES ('agent-chi-1', 1, 'chi-store-1', '%s', 60, 1)",
         ts(W0_S + 2 * W));
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
         "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, user_name, "
         "program, workflow) VALUES ('%s', 'agent-chi-1', 1, 0, 'chi-store-1', 'socket', 'tcp', "
         "'10.2.0.2', 5201, '10.1.0.2', 40000, 'server', 0, 57000, 'minio', 'minio', '')",
         ts(W0_S + 2 * W));
    exec("INSERT INTO window_state (window_start, window_seconds) VALUES ('%s', 60) "
         "ON CONFLICT (window_start) DO UPDATE SET dirty = true, last_data_at = clock_timestamp()",
         ts(W0_S + 2 * W));
    if (recon_db_pending_windows(db, cfg, US(now_s), pend, 32, &n, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(n, 1);
    assert_int_equal(pend[0], US(W0_S + 2 * W));
    reconcile(W0_S + 2 * W, &st);
    /* credited to the client side's owner (alice/train-42 on nyc-gpu-1), once */
    assert_string_equal(one("SELECT concat_ws(',', attributed_bytes, status) FROM heatmap_cells "
                            "WHERE window_start = '%s' AND src_site = 'nyc' AND dst_site = "
                            "'chi'",
                            ts(W0_S + 2 * W)),
                        "57000,ok");
    assert_string_equal(one("SELECT string_agg(concat_ws(',', user_name, host, bytes), ';') FROM "
                            "attribution_rollup WHERE window_start = '%s'",
                            ts(W0_S + 2 * W)),
                        "alice,nyc-gpu-1,57000");
    assert_string_equal(one("SELECT concat_ws(',', count(*), min(state)) FROM gap_alerts"),
                        "1,resolved");
    /* data that arrives while a window is being reconciled keeps it dirty */
    int64_t seen = st.seen_last_data_at_us;
    exec("UPDATE window_state SET dirty = true, last_data_at = clock_timestamp() WHERE "
         "window_start = '%s'",
         ts(W0_S + 2 * W));
    if (recon_db_mark_done(db, cfg, US(W0_S + 2 * W), seen, err, sizeof err))
        fail_msg("%s", err);
    assert_string_equal(
        one("SELECT dirty FROM window_state WHERE window_start = '%s'", ts(W0_S + 2 * W)), "t");
    /* re-reconciling is idempotent: same rows, no alert change, no notification */
    drain_notifies(0);
    reconcile(W0_S + 2 * W, &st);
    assert_string_equal(
        one("SELECT count(*) FROM heatmap_cells WHERE window_start = '%s'", ts(W0_S + 2 * W)), "2");
    assert_int_equal(drain_notifies(0), 0);
    if (recon_db_mark_done(db, cfg, US(W0_S + 2 * W), st.seen_last_data_at_us, err, sizeof err))
        fail_msg("%s", err);
    assert_string_equal(
        one("SELECT dirty FROM window_state WHERE window_start = '%s'", ts(W0_S + 2 * W)), "f");
}

/*
 * Saturation, read back from link_windows and attribution_rollup: an hour after W0, out grows
 * 120,000 B/s (7,200,000 per window: 7.2e6 x 8 / (60 x 1e6) = 0.96 of 1 Mbit/s > 0.90) for two
 * windows -> a saturation alert opens at the second (alert_windows 2). Claims per window:
 * train-42 4,000,000, etl 2,000,000, backup 500,000 (shares 61.5%, 30.8%, 7.7% of 6,500,000;
 * coverage 6,500,000 / 6,840,000 = 0.95 -> ok, so no gap alert).
 */
static void test_saturation_alert(void **state)
{
    (void)state;
    int64_t h = W0_S + 3600;
    for (int k = 0; k <= 4; k++)
        exec("INSERT INTO counter_samples (device, interface, at, uptime_cs, in_octets, "
             "out_octets) VALUES ('nyc-border-1', 'et-0/0/1', '%s', %d, 0, %d)",
             ts(h + 30 * k), 500000 + 3000 * k, 3600000 * k);
    static const char *const wf[] = {"train-42", "etl", "backup"};
    static const int bytes[] = {4000000, 2000000, 500000};
    /* the backup runs over IPv6 */
    static const char *const local[] = {"10.1.0.9", "10.1.0.9", "fd00:1::9"};
    static const char *const remote[] = {"10.2.0.9", "10.2.0.9", "fd00:2::9"};
    for (int w = 0; w < 2; w++) {
        exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, "
             "n_flows) VALUES ('agent-sat', %d, 'nyc-gpu-9', '%s', 60, 3)",
             w, ts(h + W * w));
        for (int i = 0; i < 3; i++)
            exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, "
                 "proto, local_addr, local_port, remote_addr, remote_port, role, tx_bytes, "
                 "user_name, workflow) VALUES ('%s', 'agent-sat', %d, %d, 'nyc-gpu-9', 'socket', "
                 "'tcp', '%s', %d, '%s', 443, 'client', %d, 'u%d', '%s')",
                 ts(h + W * w), w, i, local[i], 40000 + i, remote[i], bytes[i], i, wf[i]);
    }
    struct recon_db_stats st;
    reconcile(h, &st);
    assert_int_equal(st.n_alerts_opened, 0);
    assert_string_equal(one("SELECT round(utilization::numeric, 6) FROM link_windows WHERE "
                            "window_start = '%s' AND src_site = 'nyc'",
                            ts(h)),
                        "0.960000");
    reconcile(h + W, &st);
    assert_int_equal(st.n_alerts_opened, 1);
    assert_string_equal(one("SELECT concat_ws(',', state, circuit, first_window = '%s', "
                            "round(peak_ratio::numeric, 6)) FROM gap_alerts WHERE kind = "
                            "'saturation'",
                            ts(h)),
                        "open,nyc-chi-1,t,0.960000");
    const char *summary = one("SELECT summary FROM gap_alerts WHERE kind = 'saturation'");
    if (!strstr(summary, "at 96.0% of 1 Mbit/s on circuit nyc-chi-1") ||
        !strstr(summary, "top workflows: train-42 61.5%, etl 30.8%, backup 7.7%"))
        fail_msg("summary: %s", summary);
    assert_string_equal(one("SELECT count(*) FROM gap_alerts WHERE kind <> 'saturation' AND "
                            "last_window >= '%s'",
                            ts(h)),
                        "0");
}

/*
 * Late data withdraws an open alert: two hours after W0, windows 0..2 are red (tx 11,400 of a
 * 57,000 payload: coverage 0.2), so a gap alert opens at window 1 (alert_windows 2). Then chi's
 * agent reports the same connection for window 1 with rx 57,000: counted once as 57,000 ->
 * window 1 is ok; the history red, ok, red has no two consecutive reds: the row is withdrawn
 * (resolved, summary marked) and a NOTIFY sent.
 */
static void test_late_data_withdraws_alert(void **state)
{
    (void)state;
    int64_t h = W0_S + 7200;
    for (int k = 0; k <= 6; k++)
        exec("INSERT INTO counter_samples (device, interface, at, uptime_cs, in_octets, "
             "out_octets) VALUES ('nyc-border-1', 'et-0/0/1', '%s', %d, 0, %d)",
             ts(h + 30 * k), 900000 + 3000 * k, 30000 * k);
    for (int w = 0; w < 3; w++) {
        exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, "
             "n_flows) VALUES ('agent-late', %d, 'nyc-gpu-3', '%s', 60, 1)",
             w, ts(h + W * w));
        exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
             "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, user_name) "
             "VALUES ('%s', 'agent-late', %d, 0, 'nyc-gpu-3', 'socket', 'tcp', '10.1.0.3', 40000, "
             "'10.2.0.3', 443, 'client', 11400, 'carol')",
             ts(h + W * w), w);
    }
    struct recon_db_stats st;
    drain_notifies(0);
    for (int w = 0; w < 3; w++)
        reconcile(h + W * w, &st);
    /* the gap alert opens at window 1 and is extended at window 2; the saturation alert of
     * the previous test (open, its last hit an hour ago, the windows between absent = neutral)
     * sees two clear windows (utilisation 0.008) and resolves at window 1: three changes */
    assert_int_equal(drain_notifies(3), 3);
    /* it was carried on from its row (opened before the replayed windows): its summary, with
     * the top workflows of its last saturated window, stays */
    assert_string_equal(one("SELECT concat_ws(',', state, summary LIKE '%%top workflows: "
                            "train-42 61.5%%%%') FROM gap_alerts WHERE kind = 'saturation'"),
                        "resolved,t");
    assert_string_equal(one("SELECT concat_ws(',', state, first_window = '%s') FROM gap_alerts "
                            "WHERE first_window >= '%s'",
                            ts(h), ts(h)),
                        "open,t");
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) "
         "VALUES ('agent-chi-late', 1, 'chi-web-1', '%s', 60, 1)",
         ts(h + W));
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
         "local_addr, local_port, remote_addr, remote_port, role, rx_bytes, user_name) VALUES "
         "('%s', 'agent-chi-late', 1, 0, 'chi-web-1', 'socket', 'tcp', '10.2.0.3', 443, "
         "'10.1.0.3', 40000, 'server', 57000, 'www')",
         ts(h + W));
    reconcile(h + W, &st);
    assert_int_equal(st.n_alerts_resolved, 1);
    assert_int_equal(drain_notifies(1), 1);
    assert_string_equal(one("SELECT concat_ws(',', count(*), min(state), bool_and(resolved_at IS "
                            "NOT NULL), bool_and(summary LIKE '%%withdrawn%%')) FROM gap_alerts "
                            "WHERE first_window >= '%s'",
                            ts(h)),
                        "1,resolved,t,t");
}

/* A window reconciled again writes only the tables whose rows changed (sql/034, result_digests):
 * unchanged inputs write nothing and leave all three result tables alone; another writer's change
 * to a table (a statement not by the reconciler) forgets that table's digests, so the next
 * reconciliation compares and puts the computed rows back; late data changes the rows. A window
 * of its own, three hours after W0, so no alert of the tests above is touched. */
static void test_unchanged_tables_left_alone(void **state)
{
    (void)state;
    int64_t w = W0_S + 3 * 3600;
    for (int k = 0; k <= 4; k++)
        exec("INSERT INTO counter_samples (device, interface, at, uptime_cs, in_octets, "
             "out_octets, counter_bits) VALUES ('nyc-border-1', 'et-0/0/1', '%s', %d, 0, %d, 64)",
             ts(w - 30 + 30 * k), 2000000 + 3000 * k, 30000 * k);
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) "
         "VALUES ('agent-dig', 1, 'nyc-gpu-9', '%s', 60, 1)",
         ts(w));
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
         "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, user_name, program) "
         "VALUES ('%s', 'agent-dig', 1, 0, 'nyc-gpu-9', 'socket', 'tcp', '10.1.0.9', 40000, "
         "'10.2.0.9', 443, 'client', 30000, 'dave', 'rsync')",
         ts(w));
    static const char cells_q[] =
        "SELECT string_agg(concat_ws(',', src_site, dst_site, attributed_bytes, status), ';' "
        "ORDER BY src_site, dst_site) FROM heatmap_cells WHERE window_start = '%s'";
    static const char owners_q[] =
        "SELECT string_agg(concat_ws(',', src_site, dst_site, user_name, program, bytes), ';' "
        "ORDER BY user_name) FROM attribution_rollup WHERE window_start = '%s'";
    static const char digests_q[] = "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM "
                                    "result_digests WHERE window_start = '%s'";
    struct recon_db_stats st;
    reconcile(w, &st);
    char cells[512], owners[512];
    snprintf(cells, sizeof cells, "%s", one(cells_q, ts(w)));
    snprintf(owners, sizeof owners, "%s", one(owners_q, ts(w)));
    /* 30,000 B of nyc -> chi's 60,000 observed (payload 57,000): red; chi -> nyc idle */
    assert_string_equal(cells, "chi,nyc,0,idle;nyc,chi,30000,red");
    assert_string_equal(owners, "nyc,chi,dave,rsync,30000");
    assert_string_equal(one(digests_q, ts(w)),
                        "attribution_packed,dependency_packed,heatmap_cells");

    unsigned long long u = recon_db_unchanged_tables();
    reconcile(w, &st);
    assert_int_equal(st.n_rows_changed, 0);
    assert_int_equal(recon_db_unchanged_tables() - u, 3);

    /* another writer changes a cell: the cells' digests go, the cell is put back */
    exec("UPDATE heatmap_cells SET attributed_bytes = 1 WHERE window_start = '%s'", ts(w));
    assert_string_equal(one(digests_q, ts(w)), "attribution_packed,dependency_packed");
    u = recon_db_unchanged_tables();
    reconcile(w, &st);
    assert_string_equal(one(cells_q, ts(w)), cells);
    assert_true(st.n_rows_changed > 0);
    assert_int_equal(recon_db_unchanged_tables() - u, 2);

    /* a write through the attribution_rollup view (attribution_packed under it) */
    exec("DELETE FROM attribution_rollup WHERE window_start = '%s'", ts(w));
    assert_string_equal(one(owners_q, ts(w)), "");
    u = recon_db_unchanged_tables();
    reconcile(w, &st);
    assert_string_equal(one(owners_q, ts(w)), owners);
    assert_int_equal(recon_db_unchanged_tables() - u, 2);
    assert_string_equal(one(digests_q, ts(w)),
                        "attribution_packed,dependency_packed,heatmap_cells");

    /* late data: a second flow of dave's; cells and owners change, nothing is skipped wrongly */
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) "
         "VALUES ('agent-dig', 2, 'nyc-gpu-9', '%s', 60, 1)",
         ts(w));
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
         "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, user_name, program) "
         "VALUES ('%s', 'agent-dig', 2, 0, 'nyc-gpu-9', 'socket', 'tcp', '10.1.0.9', 40001, "
         "'10.2.0.9', 443, 'client', 27000, 'dave', 'rsync')",
         ts(w));
    reconcile(w, &st);
    assert_string_equal(one(cells_q, ts(w)), "chi,nyc,0,idle;nyc,chi,57000,ok");
    assert_string_equal(one(owners_q, ts(w)), "nyc,chi,dave,rsync,57000");

    /* retention keeps the digests itself: the windows it empties (all of this file's, over a
     * year old) lose theirs, a newer window's stays (a row made here for a window of this minute)
     */
    int64_t now = tm_now_us();
    exec("INSERT INTO result_digests VALUES (date_bin('1 minute', now(), timestamptz 'epoch'), "
         "'heatmap_cells', 0, '\\x00')");
    struct retention_stats rs;
    struct cfg keep30 = *cfg; /* results kept 30 days */
    keep30.retention_results_days = 30;
    char err[512];
    if (retention_prune(db, &keep30, now, 0, &rs, err, sizeof err))
        fail_msg("%s", err);
    assert_string_equal(one("SELECT count(*) FROM heatmap_cells WHERE window_start = '%s'", ts(w)),
                        "0");
    assert_string_equal(one("SELECT string_agg(table_name || ',' || (window_start > now() - "
                            "interval '1 day'), ';') FROM result_digests"),
                        "heatmap_cells,true");
}

static void test_unaligned_window_rejected(void **state)
{
    (void)state;
    char err[512] = "";
    assert_int_equal(recon_db_reconcile_window(db, cfg, US(W0_S + 1), NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a multiple"));
}

static long long count_of(const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    long long v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* A long span (window_ranges, written by ingest for long transfers) reaches window_state newest
 * first, at most 512 windows per listing: 600 windows take two listings, then the range is gone. */
static void test_window_ranges_expand_newest_first(void **state)
{
    (void)state;
    int64_t lo = W0_S + 100 * W, hi = lo + 599 * W; /* 600 windows */
    exec("DELETE FROM window_state WHERE window_start >= '%s'", ts(lo));
    exec("INSERT INTO window_ranges (lo, hi, window_seconds) VALUES ('%s', '%s', 60)", ts(lo),
         ts(hi));
    int64_t pend[8];
    size_t n = 0;
    char err[512], q[512];
    snprintf(q, sizeof q, "SELECT count(*) FROM window_state WHERE window_start >= '%s'", ts(lo));
    if (recon_db_pending_windows(db, cfg, US(hi + 10 * W), pend, 8, &n, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(count_of(q), 512);
    snprintf(q, sizeof q,
             "SELECT count(*) FROM window_state WHERE dirty AND window_start >= '%s'"
             " AND window_start <= '%s'",
             ts(hi - 511 * W), ts(hi));
    assert_int_equal(count_of(q), 512); /* the newest 512 */
    assert_int_equal(count_of("SELECT count(*) FROM window_ranges"), 1);
    /* the listing gives the newest due windows (ascending) */
    assert_int_equal(n, 8);
    assert_int_equal(pend[7], US(hi));
    if (recon_db_pending_windows(db, cfg, US(hi + 10 * W), pend, 8, &n, err, sizeof err))
        fail_msg("%s", err);
    snprintf(q, sizeof q, "SELECT count(*) FROM window_state WHERE window_start >= '%s'", ts(lo));
    assert_int_equal(count_of(q), 600);
    assert_int_equal(count_of("SELECT count(*) FROM window_ranges"), 0);
    exec("DELETE FROM window_state WHERE window_start >= '%s'", ts(lo));
}

/* flow_row.h is the one definition of a flow record row: its columns, in order and type, are
 * flow_records' in the migrated database (so ingest's COPY and every loader agree with it). Since
 * sql/024 flow_records is a view over flow_packed: a column never NULL is one of flow_packed's
 * NOT NULL columns (idx: idx0) or has its old default on the view (a NULL array or element reads
 * as it). */
static void test_flow_row_matches_schema(void **state)
{
    (void)state;
    PGresult *r = PQexec(db, "SELECT c.column_name, c.data_type, c.column_default IS NOT NULL OR"
                             " p.is_nullable = 'NO' FROM information_schema.columns c"
                             " JOIN information_schema.columns p ON p.table_schema ="
                             " c.table_schema AND p.table_name = 'flow_packed' AND p.column_name ="
                             " CASE c.column_name WHEN 'idx' THEN 'idx0' ELSE c.column_name END"
                             " WHERE c.table_name = 'flow_records'"
                             " AND c.table_schema = current_schema() ORDER BY c.ordinal_position");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    assert_int_equal(PQntuples(r), FR_NCOLS);
    for (int c = 0; c < FR_NCOLS; c++) {
        assert_string_equal(PQgetvalue(r, c, 0), flow_cols[c].name);
        assert_string_equal(PQgetvalue(r, c, 1), flow_cols[c].pg_type);
        /* NOT NULL DEFAULT 0 counts are written as numbers: never NULL in a row */
        if (!flow_cols[c].nullable)
            assert_string_equal(PQgetvalue(r, c, 2), "t");
    }
    PQclear(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_reconcile_alerts),
        cmocka_unit_test(test_saturation_alert),
        cmocka_unit_test(test_late_data_withdraws_alert),
        cmocka_unit_test(test_unaligned_window_rejected),
        cmocka_unit_test(test_window_ranges_expand_newest_first),
        cmocka_unit_test(test_flow_row_matches_schema),
        cmocka_unit_test(test_unchanged_tables_left_alone),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
