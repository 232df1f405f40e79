/* Fleet scale against a throwaway real PostgreSQL:
 *  - the hourly rollups (sql/013) equal the sums of the per-window rows after inserts, a
 *    window's replacement, a merge (UPDATE of existing rows, INSERT of new ones) and a
 *    retention delete, incomplete windows counted but not summed (sql/026), and so does
 *    coverage_weekly; expected sums computed here from the values the test wrote, not read back;
 *    wl_cells_range/wl_attribution_range over a range with partial hours at both edges;
 *  - recon_par_run with 2 workers, newest window first, writes the same cells, rollup rows and
 *    alerts as reconciling the same windows one after another, oldest first;
 *  - the reconciler's own hourly upkeep (sql/018, recon_db_diff.c): a window reconciled again
 *    with nothing new writes no row; a late report writes only the rows it changes; the hourly
 *    rows equal the sums of their windows after each step, and the owner sums the hand-computed
 *    bytes of the flows inserted here;
 *  - the owner hours' fold (sql/020): no hourly owner row before an hour is folded, the range
 *    reader equal either way, the loop's fold only once the hour has ended two windows ago, first
 *    writes and late data into a folded hour kept in its hourly rows; the reconciler's fold
 *    thread folds an ended hour on its own connection and stops promptly;
 *  - owners' last days (sql/029) stamped by the writer whatever the windows' order, and the
 *    prune of the owners no kept result row uses;
 *  - the side write (recon_db_side.c): owner rows on a second connection, its fallback to the
 *    one, and the reconcile transaction failing after the side committed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "db.h"
#include "fold_thread.h"
#include "harness.h"
#include "th_db.h"
#include "recon_db.h"
#include "recon_db_internal.h" /* rdb_diff_sort_above, rdb_write_split_above */
#include "recon_par.h"
#include "retention.h"
#include "timeutil.h"

#define W0_S  INT64_C(1762077600) /* 2025-11-02T10:00:00Z */
#define US(s) ((s)*INT64_C(1000000))

static PGconn *db;
static struct cfg *cfg;

/* a statement on db that must succeed (th_db.h) */
#define exec(...) th_db_exec(db, __VA_ARGS__)

static PGresult *query(const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    return r;
}

static const char *ts(int64_t s)
{
    static char buf[8][TM_RFC3339_LEN];
    static int i;
    i = (i + 1) % 8;
    return tm_format_rfc3339(US(s), buf[i]);
}

/* ---- hourly rollups ------------------------------------------------------------------------ */

#define N_WIN   150 /* 2 h 30 min of 60 s windows from W0 */
#define N_PAIR  3
#define N_OWNER 2
static const char *const SRC[N_PAIR] = {"nyc", "chi", "nyc"}, *const DST[N_PAIR] = {"chi", "nyc",
                                                                                    "sfo"};
static const char *const STATUS[7] = {"ok",   "warn",       "red",       "over",
                                      "idle", "incomplete", "no_counter"};

struct cellv {
    int present, status;
    long long obs, pay, att, sock, nfs, svc, unatt; /* obs < 0: NULL observed columns */
};
static struct cellv cells[N_WIN][N_PAIR];
static long long owner_bytes[N_WIN][N_PAIR][N_OWNER]; /* 0: no row */

static uint64_t rng = 88172645463325252ULL;
static long long rnd(long long n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (long long)(rng % (uint64_t)n);
}

static void put_cell(int w, int p)
{
    struct cellv *c = &cells[w][p];
    c->present = 1;
    c->status = (int)rnd(7);
    /* no_counter: nothing observed (NULL); incomplete: what part of the window was observed, as
     * the reconciler writes it after a poll gap */
    int no_counter = c->status == 6;
    c->obs = no_counter ? -1 : 1000000 + rnd(9000000);
    c->pay = no_counter ? -1 : c->obs * 95 / 100;
    c->att = rnd(5000000);
    c->sock = c->att / 2, c->nfs = c->att / 4, c->svc = c->att - c->sock - c->nfs;
    c->unatt = no_counter ? -1 : (c->pay > c->att ? c->pay - c->att : 0);
#define NUM(v) (v < 0 ? "NULL" : (snprintf(nb[k], 24, "%lld", v), nb[k++]))
    char nb[8][24];
    int k = 0;
    const char *o = NUM(c->obs), *py = NUM(c->pay), *un = NUM(c->unatt);
#undef NUM
    exec("INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, "
         "observed_bytes, observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, "
         "service_bytes, unattributed_bytes, status) VALUES ('%s', 60, '%s', '%s', %s, %s, %lld, "
         "%lld, %lld, %lld, %s, '%s')",
         ts(W0_S + 60 * w), SRC[p], DST[p], o, py, c->att, c->sock, c->nfs, c->svc, un,
         STATUS[c->status]);
}

static void put_owners(int w, int p)
{
    char vals[1024];
    int n = 0;
    vals[0] = 0;
    for (int o = 0; o < N_OWNER; o++) {
        owner_bytes[w][p][o] = 1 + rnd(1000000);
        n += snprintf(vals + n, sizeof vals - (size_t)n,
                      "%s('%s'::timestamptz, '%s', '%s', 'socket', 'wf-%d', 'user%d', 'prog', "
                      "'h1', %lld::bigint)",
                      o ? ", " : "", ts(W0_S + 60 * w), SRC[p], DST[p], o, o, owner_bytes[w][p][o]);
    }
    /* a merge: an existing row's bytes updated in place (an UPDATE), a new one inserted */
    exec("WITH v (window_start, src_site, dst_site, source, workflow, user_name, program, host, "
         "bytes) AS (VALUES %s), u AS (UPDATE attribution_rollup a SET bytes = v.bytes FROM v "
         "WHERE (a.window_start, a.src_site, a.dst_site, a.source, a.workflow, a.user_name, "
         "a.program, a.host, a.namespace, a.pod, a.container_name) = (v.window_start, v.src_site, "
         "v.dst_site, v.source, v.workflow, v.user_name, v.program, v.host, '', '', '') "
         "RETURNING 1) INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, "
         "workflow, user_name, program, host, bytes) SELECT * FROM v WHERE NOT EXISTS (SELECT 1 "
         "FROM attribution_rollup a WHERE (a.window_start, a.src_site, a.dst_site, a.source, "
         "a.workflow, a.user_name, a.program, a.host, a.namespace, a.pod, a.container_name) = "
         "(v.window_start, v.src_site, v.dst_site, v.source, v.workflow, v.user_name, v.program, "
         "v.host, '', '', ''))",
         vals);
}

/* Sums over windows [w0, w1) per pair, computed from what was written; compared with rows of
 * (src, dst, windows, seconds, obs, pay, att, sock, nfs, svc, unatt, 7 status counts). An
 * incomplete window is counted (windows, n_incomplete) and its seconds and bytes are not summed
 * (sql/026); NULLs sum as 0. */
static void check_cells(PGresult *r, int w0, int w1, const char *what)
{
    int rows = 0;
    for (int p = 0; p < N_PAIR; p++) {
        long long e[18] = {0};
        for (int w = w0; w < w1; w++) {
            const struct cellv *c = &cells[w][p];
            if (!c->present)
                continue;
            long long v[] = {1, 60, c->obs, c->pay, c->att, c->sock, c->nfs, c->svc, c->unatt};
            int summed = strcmp(STATUS[c->status], "incomplete") ? 9 : 1;
            for (int i = 0; i < summed; i++)
                e[i] += v[i] < 0 ? 0 : v[i];
            e[9 + c->status]++;
        }
        if (!e[0])
            continue;
        rows++;
        int found = 0;
        for (int i = 0; i < PQntuples(r); i++) {
            if (strcmp(PQgetvalue(r, i, 0), SRC[p]) || strcmp(PQgetvalue(r, i, 1), DST[p]))
                continue;
            found = 1;
            for (int k = 0; k < 16; k++)
                if (atoll(PQgetvalue(r, i, 2 + k)) != e[k])
                    fail_msg("%s %s->%s column %d: %s, expected %lld", what, SRC[p], DST[p], k,
                             PQgetvalue(r, i, 2 + k), e[k]);
        }
        if (!found)
            fail_msg("%s: no row for %s->%s", what, SRC[p], DST[p]);
    }
    assert_int_equal(PQntuples(r), rows);
}

static void check_hours(void)
{
    for (int h = 0; h * 60 < N_WIN; h++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT src_site, dst_site, windows, seconds, observed_bytes, "
                 "observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, "
                 "service_bytes, unattributed_bytes, n_ok, n_warn, n_red, n_over, n_idle, "
                 "n_incomplete, n_no_counter FROM heatmap_cells_hourly WHERE hour_start = '%s'",
                 ts(W0_S + 3600 * h));
        PGresult *r = query(sql);
        char what[32];
        snprintf(what, sizeof what, "hour %d", h);
        check_cells(r, h * 60, h * 60 + 60 < N_WIN ? h * 60 + 60 : N_WIN, what);
        PQclear(r);
        /* owners */
        snprintf(sql, sizeof sql,
                 "SELECT src_site, dst_site, workflow, windows, bytes FROM "
                 "attribution_rollup_hourly WHERE hour_start = '%s'",
                 ts(W0_S + 3600 * h));
        r = query(sql);
        int rows = 0;
        for (int p = 0; p < N_PAIR; p++)
            for (int o = 0; o < N_OWNER; o++) {
                long long n = 0, b = 0;
                for (int w = h * 60; w < h * 60 + 60 && w < N_WIN; w++)
                    if (owner_bytes[w][p][o])
                        n++, b += owner_bytes[w][p][o];
                if (!n)
                    continue;
                rows++;
                char wf[16];
                snprintf(wf, sizeof wf, "wf-%d", o);
                int found = 0;
                for (int i = 0; i < PQntuples(r); i++)
                    if (!strcmp(PQgetvalue(r, i, 0), SRC[p]) &&
                        !strcmp(PQgetvalue(r, i, 1), DST[p]) && !strcmp(PQgetvalue(r, i, 2), wf)) {
                        found = 1;
                        assert_int_equal(atoll(PQgetvalue(r, i, 3)), n);
                        assert_int_equal(atoll(PQgetvalue(r, i, 4)), b);
                    }
                assert_true(found);
            }
        assert_int_equal(PQntuples(r), rows);
        PQclear(r);
    }
}

/* coverage_weekly (sql/026): per pair the volumes and coverage of the week's windows that are
 * not incomplete, computed from what was written; every window counted. All windows written here
 * fall in one ISO week. */
static void check_week(void)
{
    PGresult *r = query("SELECT src_site, dst_site, observed_bytes, observed_payload_bytes, "
                        "attributed_bytes, unattributed_bytes, coverage, incomplete_windows, "
                        "windows FROM coverage_weekly");
    int rows = 0;
    for (int p = 0; p < N_PAIR; p++) {
        long long obs = 0, pay = 0, att = 0, un = 0, inc = 0, n = 0;
        for (int w = 0; w < N_WIN; w++) {
            const struct cellv *c = &cells[w][p];
            if (!c->present)
                continue;
            n++;
            if (!strcmp(STATUS[c->status], "incomplete")) {
                inc++;
                continue;
            }
            obs += c->obs < 0 ? 0 : c->obs, pay += c->pay < 0 ? 0 : c->pay;
            att += c->att, un += c->unatt < 0 ? 0 : c->unatt;
        }
        if (!n)
            continue;
        rows++;
        int found = 0;
        for (int i = 0; i < PQntuples(r); i++) {
            if (strcmp(PQgetvalue(r, i, 0), SRC[p]) || strcmp(PQgetvalue(r, i, 1), DST[p]))
                continue;
            found = 1;
            assert_int_equal(atoll(PQgetvalue(r, i, 2)), obs);
            assert_int_equal(atoll(PQgetvalue(r, i, 3)), pay);
            assert_int_equal(atoll(PQgetvalue(r, i, 4)), att);
            assert_int_equal(atoll(PQgetvalue(r, i, 5)), un);
            assert_true(pay > 0);
            double cov = atof(PQgetvalue(r, i, 6)), want = (double)att / (double)pay;
            if (cov < want * (1 - 1e-12) || cov > want * (1 + 1e-12))
                fail_msg("coverage_weekly %s->%s coverage %.15g, expected %.15g", SRC[p], DST[p],
                         cov, want);
            assert_int_equal(atoll(PQgetvalue(r, i, 7)), inc);
            assert_true(inc > 0); /* the sums above left something out */
            assert_int_equal(atoll(PQgetvalue(r, i, 8)), n);
        }
        if (!found)
            fail_msg("coverage_weekly: no row for %s->%s", SRC[p], DST[p]);
    }
    assert_int_equal(PQntuples(r), rows);
    PQclear(r);
}

static void test_hourly_rollups(void **state)
{
    (void)state;
    exec("DELETE FROM heatmap_cells; DELETE FROM attribution_rollup");
    exec("BEGIN");
    for (int w = 0; w < N_WIN; w++)
        for (int p = 0; p < N_PAIR; p++)
            if (p < 2 || w % 3 == 0) { /* nyc->sfo only every third window */
                put_cell(w, p);
                put_owners(w, p);
            }
    exec("COMMIT");
    /* no hour folded yet (sql/020): no hourly owner row, the range reads the windows */
    PGresult *r0 = query("SELECT count(*) FROM attribution_rollup_hourly");
    assert_string_equal(PQgetvalue(r0, 0, 0), "0");
    PQclear(r0);
    long long whole = 0; /* nyc->chi, 10:00-12:00: two whole hours */
    for (int w = 0; w < 120 && w < N_WIN; w++)
        whole += owner_bytes[w][0][0] + owner_bytes[w][0][1];
    char rsql[512];
    snprintf(rsql, sizeof rsql,
             "SELECT sum(bytes)::bigint FROM wl_attribution_range('%s', '%s') WHERE src_site = "
             "'nyc' AND dst_site = 'chi'",
             ts(W0_S), ts(W0_S + 7200));
    r0 = query(rsql);
    assert_int_equal(atoll(PQgetvalue(r0, 0, 0)), whole);
    PQclear(r0);
    /* the hours folded as the reconciler's loop does (first one, then the rest); a second fold
     * of an hour changes nothing and says so */
    for (int h = 0; h * 60 < N_WIN; h++) {
        char sql[128];
        snprintf(sql, sizeof sql, "SELECT wl_fold_owner_hour('%s')", ts(W0_S + 3600 * h));
        PQclear(query(sql));
        if (h == 0) {
            r0 = query(rsql); /* one hour folded, one from its windows: the same sum */
            assert_int_equal(atoll(PQgetvalue(r0, 0, 0)), whole);
            PQclear(r0);
        }
    }
    r0 = query("SELECT wl_fold_owner_hour('2025-11-02T10:00:00Z')");
    assert_string_equal(PQgetvalue(r0, 0, 0), "-1");
    PQclear(r0);
    r0 = query(rsql);
    assert_int_equal(atoll(PQgetvalue(r0, 0, 0)), whole);
    PQclear(r0);
    check_hours();
    check_week();
    /* a window replaced as the reconciler does (DELETE, then the new rows), one pair gone */
    exec("BEGIN; DELETE FROM heatmap_cells WHERE window_start = '%s'", ts(W0_S + 60 * 75));
    memset(cells[75], 0, sizeof cells[75]);
    put_cell(75, 0);
    put_cell(75, 2);
    exec("COMMIT");
    /* the merge: new bytes for the owners of two windows */
    put_owners(10, 1);
    put_owners(130, 0);
    /* a plain UPDATE of one cell */
    exec("UPDATE heatmap_cells SET attributed_bytes = attributed_bytes + 7 WHERE window_start = "
         "'%s' AND src_site = 'chi'",
         ts(W0_S + 60 * 20));
    cells[20][1].att += 7;
    check_hours();
    /* retention: the first hour's rows deleted, its hourly rows with them */
    exec("DELETE FROM heatmap_cells WHERE window_start < '%s'; DELETE FROM attribution_rollup "
         "WHERE window_start < '%s'",
         ts(W0_S + 3600), ts(W0_S + 3600));
    memset(cells, 0, 60 * sizeof cells[0]);
    memset(owner_bytes, 0, 60 * sizeof owner_bytes[0]);
    PGresult *r = query("SELECT count(*) FROM heatmap_cells_hourly WHERE hour_start < "
                        "'2025-11-02T11:00:00Z'");
    assert_string_equal(PQgetvalue(r, 0, 0), "0");
    PQclear(r);
    check_hours();
    /* a range with partial hours at both edges: 11:25 to 12:10 (whole hour none: 11:25-12:00
     * and 12:00-12:10 from per-window rows) and 11:25 to 12:20 from 10:xx gone */
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT * FROM wl_cells_range('%s', '%s')", ts(W0_S + 60 * 85),
             ts(W0_S + 60 * 130));
    r = query(sql);
    check_cells(r, 85, 130, "wl_cells_range 11:25-12:10");
    PQclear(r);
    snprintf(sql, sizeof sql, "SELECT * FROM wl_cells_range('%s', '%s')", ts(W0_S + 60 * 61),
             ts(W0_S + 60 * 149));
    r = query(sql);
    check_cells(r, 61, 149, "wl_cells_range 11:01-12:29");
    PQclear(r);
    snprintf(sql, sizeof sql,
             "SELECT sum(bytes)::bigint FROM wl_attribution_range('%s', '%s') WHERE src_site = "
             "'nyc' AND dst_site = 'chi'",
             ts(W0_S + 60 * 59), ts(W0_S + 60 * 121));
    r = query(sql);
    long long e = 0;
    for (int w = 59; w < 121; w++)
        e += owner_bytes[w][0][0] + owner_bytes[w][0][1];
    assert_int_equal(atoll(PQgetvalue(r, 0, 0)), e);
    PQclear(r);
    /* retention as wanledger runs it (wl_prune_results, sql/019), cutoff 12:10: hour 11:00 goes
     * whole (its hourly rows deleted outright, the triggers standing aside), 12:00-12:10 through
     * the triggers; the counts it returns are the rows that were there */
    const char *cut = ts(W0_S + 60 * 130);
    r = query(
        "SELECT (SELECT count(*) FROM heatmap_cells WHERE window_start < '2025-11-02T12:10:00Z'), "
        "(SELECT count(*) FROM attribution_rollup WHERE window_start < "
        "'2025-11-02T12:10:00Z')");
    long long want_cells = atoll(PQgetvalue(r, 0, 0)), want_owners = atoll(PQgetvalue(r, 0, 1));
    PQclear(r);
    assert_true(want_cells > 0 && want_owners > 0);
    snprintf(sql, sizeof sql,
             "SELECT table_name, deleted FROM wl_prune_results('%s', '1970-01-01Z', "
             "'1970-01-01Z', '1970-01-01Z') WHERE table_name IN ('heatmap_cells', "
             "'attribution_rollup') ORDER BY 1",
             cut);
    r = query(sql);
    assert_int_equal(PQntuples(r), 2);
    assert_int_equal(atoll(PQgetvalue(r, 0, 1)), want_owners);
    assert_int_equal(atoll(PQgetvalue(r, 1, 1)), want_cells);
    PQclear(r);
    memset(cells, 0, 130 * sizeof cells[0]);
    memset(owner_bytes, 0, 130 * sizeof owner_bytes[0]);
    r = query("SELECT count(*) FROM heatmap_cells_hourly WHERE hour_start < "
              "'2025-11-02T12:00:00Z'");
    assert_string_equal(PQgetvalue(r, 0, 0), "0");
    PQclear(r);
    r = query("SELECT coalesce(current_setting('wanledger.hourly_writer', true), '')");
    assert_string_equal(PQgetvalue(r, 0, 0), ""); /* the setting does not outlive the prune */
    PQclear(r);
    check_hours();
}

/* ---- parallel reconciliation --------------------------------------------------------------- */

/* Counters every 30 s over 12 windows on nyc->chi (1000 B/s); agents attribute a varying share
 * so cells are ok and red and a gap alert opens and resolves. */
static void insert_inputs(void)
{
    for (int k = 0; k <= 24; k++)
        exec("INSERT INTO counter_samples (device, interface, at, uptime_cs, in_octets, "
             "out_octets, counter_bits) VALUES ('nyc-border-1', 'et-0/0/1', '%s', %d, 0, %d, 64)",
             ts(W0_S + 30 * k), 100000 + 3000 * k, 30000 * k);
    static const int tx[12] = {57000, 11400, 11400, 11400, 57000, 57000,
                               11400, 11400, 57000, 57000, 57000, 20000};
    for (int w = 0; w < 12; w++) {
        exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, "
             "n_flows) VALUES ('agent-nyc-1', %d, 'nyc-1', '%s', 60, 1)",
             w, ts(W0_S + 60 * w));
        exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
             "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, pid, "
             "uid, user_name, program, workflow) VALUES ('%s', 'agent-nyc-1', %d, 0, 'nyc-1', "
             "'socket', 'tcp', '10.1.0.2', 40000, '10.2.0.2', 5201, 'client', %d, 0, 4307, "
             "1000, 'alice', 'python3', 'wf-%d')",
             ts(W0_S + 60 * w), w, tx[w], w % 3);
    }
}

/* Every result row the tests compare, as text; an empty table as an empty part. */
static char *snapshot(void)
{
    PGresult *r = query(
        "SELECT concat_ws('|', coalesce((SELECT string_agg(concat_ws(',', window_start, src_site, "
        "dst_site, observed_bytes, attributed_bytes, unattributed_bytes, coverage, status), ';' "
        "ORDER BY window_start, src_site, dst_site) FROM heatmap_cells), ''), coalesce((SELECT "
        "string_agg(concat_ws(',', window_start, workflow, bytes), ';' ORDER BY window_start, "
        "workflow) FROM attribution_rollup), ''), coalesce((SELECT string_agg(concat_ws(',', "
        "kind, src_site, dst_site, state, first_window, last_window, peak_unattributed_bytes), "
        "';' ORDER BY first_window, kind) FROM gap_alerts), ''), coalesce((SELECT "
        "string_agg(concat_ws(',', hour_start, windows, observed_bytes, attributed_bytes), ';' "
        "ORDER BY hour_start, src_site, dst_site) FROM heatmap_cells_hourly), ''), "
        "coalesce((SELECT string_agg(concat_ws(',', window_start, local_site, workflow, "
        "remote_site, kind, endpoint, bytes_out, bytes_in, connections), ';' ORDER BY "
        "window_start, local_site, workflow, remote_site, kind, endpoint) FROM "
        "dependency_rollup), ''))");
    char *s = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return s;
}

static void reset_results(void)
{
    exec("DELETE FROM heatmap_cells; DELETE FROM attribution_rollup; DELETE FROM link_windows; "
         "DELETE FROM gap_alerts; DELETE FROM window_state; DELETE FROM dependency_rollup");
}

static void test_parallel_equals_serial(void **state)
{
    (void)state;
    reset_results();
    insert_inputs();
    int64_t win[12];
    char err[512];
    for (int w = 0; w < 12; w++) {
        win[w] = US(W0_S + 60 * w);
        if (recon_db_reconcile_window(db, cfg, win[w], NULL, err, sizeof err))
            fail_msg("%s", err);
    }
    char *serial = snapshot();
    assert_non_null(strstr(serial, "gap,nyc,chi,resolved")); /* the scenario has an alert */
    reset_results();
    int64_t newest_first[12];
    for (int w = 0; w < 12; w++)
        newest_first[w] = win[11 - w];
    struct recon_par_stats ps = {0};
    recon_par_run(db, cfg, NULL, newest_first, 12, 2, &ps);
    assert_int_equal(ps.workers, 2);
    assert_int_equal(ps.reconciled, 12);
    assert_int_equal(ps.failed, 0);
    char *par = snapshot();
    assert_string_equal(par, serial);
    free(par);
    /* again with every window's owner and dependency rows on its worker's second connection
     * (recon_db_side.c): two workers, four connections writing */
    reset_results();
    long long keep = rdb_write_split_above, splits = rdb_write_splits;
    rdb_write_split_above = 0;
    memset(&ps, 0, sizeof ps);
    recon_par_run(db, cfg, NULL, newest_first, 12, 2, &ps);
    rdb_write_split_above = keep;
    assert_int_equal(ps.reconciled, 12);
    assert_int_equal(ps.failed, 0);
    assert_int_equal(rdb_write_splits, splits + 12);
    par = snapshot();
    assert_string_equal(par, serial);
    free(serial);
    free(par);
}

/* Rows in which the hourly tables and the sums of their windows (computed here in SQL from the
 * per-window tables) differ, both ways. */
static long long hourly_mismatches(void)
{
    static const char cells_sums[] =
        "SELECT date_bin('1 hour', window_start, timestamptz 'epoch'), src_site, dst_site, "
        "count(*)::int, sum(window_seconds)::bigint, coalesce(sum(observed_bytes), 0)::bigint, "
        "coalesce(sum(observed_payload_bytes), 0)::bigint, "
        "coalesce(sum(attributed_bytes), 0)::bigint, coalesce(sum(socket_bytes), 0)::bigint, "
        "coalesce(sum(nfs_bytes), 0)::bigint, coalesce(sum(service_bytes), 0)::bigint, "
        "coalesce(sum(unattributed_bytes), 0)::bigint, "
        "(count(*) FILTER (WHERE status = 'ok'))::int, "
        "(count(*) FILTER (WHERE status = 'warn'))::int, "
        "(count(*) FILTER (WHERE status = 'red'))::int, "
        "(count(*) FILTER (WHERE status = 'over'))::int, "
        "(count(*) FILTER (WHERE status = 'idle'))::int, "
        "(count(*) FILTER (WHERE status = 'incomplete'))::int, "
        "(count(*) FILTER (WHERE status = 'no_counter'))::int FROM heatmap_cells GROUP BY 1, 2, 3";
    static const char cells_hourly[] =
        "SELECT hour_start, src_site, dst_site, windows, seconds, observed_bytes, "
        "observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, service_bytes, "
        "unattributed_bytes, n_ok, n_warn, n_red, n_over, n_idle, n_incomplete, n_no_counter "
        "FROM heatmap_cells_hourly";
    /* owners: the folded hours only (sql/020); another hour has no hourly row */
    static const char owner_sums[] =
        "SELECT date_bin('1 hour', window_start, timestamptz 'epoch'), src_site, dst_site, "
        "source, workflow, user_name, program, host, namespace, pod, container_name, "
        "count(*)::int, sum(bytes)::bigint FROM attribution_rollup WHERE date_bin('1 hour', "
        "window_start, timestamptz 'epoch') IN (SELECT hour_start FROM attribution_hours) "
        "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11";
    static const char owner_hourly[] =
        "SELECT hour_start, src_site, dst_site, source, workflow, user_name, program, host, "
        "namespace, pod, container_name, windows, bytes FROM attribution_rollup_hourly";
    char sql[4096];
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM ((%1$s) EXCEPT ALL (%2$s)) a) + (SELECT count(*) FROM "
             "((%2$s) EXCEPT ALL (%1$s)) b) + (SELECT count(*) FROM ((%3$s) EXCEPT ALL (%4$s)) c) "
             "+ (SELECT count(*) FROM ((%4$s) EXCEPT ALL (%3$s)) d)",
             cells_sums, cells_hourly, owner_sums, owner_hourly);
    PGresult *r = query(sql);
    long long n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return n;
}

static long long num(const char *sql)
{
    PGresult *r = query(sql);
    long long v = PQgetisnull(r, 0, 0) ? -1 : atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static void reconcile_w(int w, struct recon_db_stats *st)
{
    char err[512];
    if (recon_db_reconcile_window(db, cfg, US(W0_S + 60 * w), st, err, sizeof err))
        fail_msg("window %d: %s", w, err);
}

static void writer_changes_only(void)
{
    reset_results();
    exec("DELETE FROM heatmap_cells_hourly; DELETE FROM attribution_rollup_hourly; DELETE FROM "
         "attribution_hours");
    if (num("SELECT count(*) FROM flow_reports WHERE agent_id = 'agent-nyc-1'") == 0)
        insert_inputs();
    struct recon_db_stats st;
    for (int w = 0; w < 11; w++) {
        reconcile_w(w, &st);
        assert_true(st.n_rows_changed > 0); /* a cell, an owner row and a dependency each */
    }
    /* the hour is not folded yet (sql/020): no hourly owner row */
    assert_int_equal(num("SELECT count(*) FROM attribution_rollup_hourly"), 0);
    assert_int_equal(hourly_mismatches(), 0);
    /* the loop's fold: not while a window of the hour waits to be reconciled, not before the
     * hour has ended two windows ago, then once */
    exec("INSERT INTO window_state (window_start, window_seconds) VALUES ('%s', 60) ON CONFLICT "
         "(window_start) DO UPDATE SET dirty = true",
         ts(W0_S));
    char err[512];
    int hours = -1;
    long long hrows = -1;
    if (recon_db_fold_hours(db, cfg, US(W0_S + 3600 + 120), 4, &hours, &hrows, err, sizeof err))
        fail_msg("fold: %s", err);
    assert_int_equal(hours, 0); /* dirty */
    exec("UPDATE window_state SET dirty = false WHERE window_start = '%s'", ts(W0_S));
    if (recon_db_fold_hours(db, cfg, US(W0_S + 3600 + 119), 4, &hours, &hrows, err, sizeof err))
        fail_msg("fold: %s", err);
    assert_int_equal(hours, 0); /* too early */
    assert_int_equal(num("SELECT count(*) FROM attribution_hours"), 0);
    if (recon_db_fold_hours(db, cfg, US(W0_S + 3600 + 120), 4, &hours, &hrows, err, sizeof err))
        fail_msg("fold: %s", err);
    assert_int_equal(hours, 1);
    assert_int_equal(hrows, num("SELECT count(*) FROM attribution_rollup_hourly"));
    assert_true(hrows > 0);
    assert_int_equal(hourly_mismatches(), 0);
    if (recon_db_fold_hours(db, cfg, US(W0_S + 7200), 4, &hours, &hrows, err, sizeof err))
        fail_msg("fold: %s", err);
    assert_int_equal(hours, 0); /* folded already */
    /* an hour whose window stays dirty is folded all the same once it ended 6 hours ago */
    exec("INSERT INTO window_state (window_start, window_seconds) VALUES ('%s', 60)",
         ts(W0_S + 3600));
    if (recon_db_fold_hours(db, cfg, US(W0_S + 7200 + 6 * 3600 - 1), 4, &hours, &hrows, err,
                            sizeof err))
        fail_msg("fold: %s", err);
    assert_int_equal(hours, 0);
    if (recon_db_fold_hours(db, cfg, US(W0_S + 7200 + 6 * 3600 + 120), 4, &hours, &hrows, err,
                            sizeof err))
        fail_msg("fold: %s", err);
    assert_int_equal(hours, 1);
    assert_int_equal(hrows, 0); /* no owner row in that hour */
    exec("DELETE FROM window_state WHERE window_start = '%s'", ts(W0_S + 3600));
    /* a window's first write into the folded hour adds to its hourly rows */
    reconcile_w(11, &st);
    assert_true(st.n_rows_changed > 0);
    assert_int_equal(hourly_mismatches(), 0);
    /* by hand: insert_inputs' one client flow per window, tx bytes, workflow wf-(w % 3) */
    static const long long tx[12] = {57000, 11400, 11400, 11400, 57000, 57000,
                                     11400, 11400, 57000, 57000, 57000, 20000};
    long long wf0 = 0;
    for (int w = 0; w < 12; w += 3)
        wf0 += tx[w];
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT bytes FROM attribution_rollup_hourly WHERE hour_start = '%s' AND src_site = "
             "'nyc' AND dst_site = 'chi' AND workflow = 'wf-0'",
             ts(W0_S));
    assert_int_equal(num(sql), wf0);
    /* nothing new: nothing written */
    reconcile_w(3, &st);
    assert_int_equal(st.n_rows_changed, 0);
    assert_int_equal(hourly_mismatches(), 0);
    /* a late report for window 3: its cell (the stored row removed, the new one written), its
     * pair's owner row (sql/022: the owners of a pair packed in one row; removed and written),
     * one new dependency row */
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) "
         "VALUES ('agent-nyc-2', 3, 'nyc-2', '%s', 60, 1)",
         ts(W0_S + 180));
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
         "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, pid, uid, "
         "user_name, program, workflow) VALUES ('%s', 'agent-nyc-2', 3, 0, 'nyc-2', 'socket', "
         "'tcp', '10.1.0.3', 40001, '10.2.0.2', 5201, 'client', 5000, 0, 4308, 1000, 'bob', "
         "'rsync', 'wf-late')",
         ts(W0_S + 180));
    reconcile_w(3, &st);
    assert_int_equal(st.n_rows_changed, 5);
    assert_int_equal(hourly_mismatches(), 0);
    snprintf(sql, sizeof sql,
             "SELECT bytes * 1000 + windows FROM attribution_rollup_hourly WHERE hour_start = '%s' "
             "AND workflow = 'wf-late'",
             ts(W0_S));
    assert_int_equal(num(sql), 5000 * 1000 + 1);
    snprintf(sql, sizeof sql,
             "SELECT attributed_bytes FROM heatmap_cells_hourly WHERE hour_start = '%s' AND "
             "src_site = 'nyc' AND dst_site = 'chi'",
             ts(W0_S));
    long long all = 5000;
    for (int w = 0; w < 12; w++)
        all += tx[w];
    assert_int_equal(num(sql), all);
    /* the late flow withdrawn: its owner row goes from the window and from the hour */
    exec("DELETE FROM flow_packed WHERE agent_id = 'agent-nyc-2'; DELETE FROM flow_reports "
         "WHERE agent_id = 'agent-nyc-2'");
    reconcile_w(3, &st);
    /* the cell twice, the pair's owner row twice, the dependency row */
    assert_int_equal(st.n_rows_changed, 5);
    assert_int_equal(hourly_mismatches(), 0);
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM attribution_rollup_hourly WHERE workflow = 'wf-late'");
    assert_int_equal(num(sql), 0);
}

static void test_writer_changes_only(void **state)
{
    (void)state;
    writer_changes_only();
    /* again with every first write in key order through the temp table (big windows' path) */
    long long keep = rdb_diff_sort_above;
    rdb_diff_sort_above = 0;
    writer_changes_only();
    rdb_diff_sort_above = keep;
}

/* The side write (recon_db_side.c): every window's owner rows written on a second connection
 * pass the writer's checks above (rows changed, hourly sums, hand-computed owner bytes); so they
 * do when that connection cannot be made (written on the one, each window a fallback). Then the
 * reconcile transaction fails at its COMMIT (a deferred trigger of the test's, on this session
 * only) after the second connection committed: the window's owner rows are stored, its cells and
 * dependency rows are not; reconciled again, the window writes those only (the owner rows found
 * with their digest) and ends equal to a window reconciled once on one connection. */
static void reset_all(void)
{
    reset_results();
    exec("DELETE FROM heatmap_cells_hourly; DELETE FROM attribution_rollup_hourly; DELETE FROM "
         "attribution_hours");
}

static void test_side_write(void **state)
{
    (void)state;
    long long keep = rdb_write_split_above;
    long long splits = rdb_write_splits, fallbacks = rdb_write_split_fallbacks;
    rdb_write_split_above = 0;
    writer_changes_only();
    assert_int_equal(rdb_write_splits, splits + 15); /* 12 windows, window 3 three times more */
    assert_int_equal(rdb_write_split_fallbacks, fallbacks);
    rdb_load_helper_conninfo = "host=127.0.0.1 port=1 dbname=none connect_timeout=2";
    splits = rdb_write_splits;
    writer_changes_only();
    rdb_load_helper_conninfo = NULL;
    assert_int_equal(rdb_write_splits, splits);
    assert_int_equal(rdb_write_split_fallbacks, fallbacks + 15);

    /* window 0 reconciled once on one connection */
    rdb_write_split_above = keep;
    reset_all();
    struct recon_db_stats st;
    reconcile_w(0, &st);
    char *once = snapshot();
    assert_non_null(strstr(once, "nyc,chi,60000,57000,0,1,ok|")); /* a cell and its owner */
    assert_non_null(strstr(once, ",wf-0,57000|"));
    /* the same window, the reconcile transaction's COMMIT refused after the side's */
    reset_all();
    rdb_write_split_above = 0;
    exec("CREATE FUNCTION wl_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF "
         "current_setting('wl_test.refuse', true) = 'on' THEN RAISE EXCEPTION 'wl_test: commit "
         "refused'; END IF; RETURN NULL; END $$");
    exec("CREATE CONSTRAINT TRIGGER wl_test_refuse AFTER INSERT ON heatmap_cells DEFERRABLE "
         "INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION wl_test_refuse()");
    exec("SET wl_test.refuse = 'on'");
    char err[512] = "";
    splits = rdb_write_splits;
    assert_int_equal(recon_db_reconcile_window(db, cfg, US(W0_S), NULL, err, sizeof err), -1);
    assert_non_null(strstr(err, "wl_test: commit refused"));
    assert_int_equal(rdb_write_splits, splits + 1);
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM heatmap_cells WHERE window_start = '%s'",
             ts(W0_S));
    assert_int_equal(num(sql), 0);
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM attribution_packed WHERE window_start = '%1$s') * 1000 "
             "+ (SELECT count(*) FROM dependency_packed WHERE window_start = '%1$s')",
             ts(W0_S));
    long long side_rows = num(sql);
    assert_true(side_rows / 1000 > 0);     /* the side's owner rows: committed */
    assert_int_equal(side_rows % 1000, 0); /* the dependency rows: the reconcile transaction's */
    exec("RESET wl_test.refuse");
    reconcile_w(0, &st);
    snprintf(sql, sizeof sql,
             "SELECT (SELECT count(*) FROM heatmap_cells WHERE window_start = '%1$s') + (SELECT "
             "count(*) FROM dependency_packed WHERE window_start = '%1$s')",
             ts(W0_S));
    assert_int_equal(st.n_rows_changed, num(sql)); /* not the owner rows again */
    assert_int_equal(hourly_mismatches(), 0);
    char *again = snapshot();
    assert_string_equal(again, once);
    free(once);
    free(again);
    exec("DROP TRIGGER wl_test_refuse ON heatmap_cells; DROP FUNCTION wl_test_refuse()");
    rdb_write_split_above = keep;
}

/* The reconciler's fold thread (fold_thread.c) on its own connection: the ended hour folded
 * within its first round, its hourly rows the sums of the windows left by the test above. */
static void test_fold_thread(void **state)
{
    (void)state;
    exec("DELETE FROM attribution_rollup_hourly; DELETE FROM attribution_hours; DELETE FROM "
         "window_state; INSERT INTO window_state (window_start, window_seconds, dirty) VALUES "
         "('%s', 60, false)",
         ts(W0_S));
    long long owners = num("SELECT count(*) FROM attribution_rollup");
    assert_true(owners > 0);
    char err[512];
    struct fold_thread *f = fold_thread_start(cfg, NULL, err, sizeof err);
    if (!f)
        fail_msg("%s", err);
    int64_t until = tm_mono_ns() + 20 * INT64_C(1000000000);
    while (num("SELECT count(*) FROM attribution_hours") == 0 && tm_mono_ns() < until)
        usleep(50000);
    int64_t t0 = tm_mono_ns();
    fold_thread_stop(f);
    assert_true(tm_mono_ns() - t0 < 5 * INT64_C(1000000000)); /* stops while it waits */
    assert_int_equal(num("SELECT count(*) FROM attribution_hours"), 1);
    assert_true(num("SELECT count(*) FROM attribution_rollup_hourly") > 0);
    assert_int_equal(hourly_mismatches(), 0);
}

/* Owners' last days and their prune (sql/029), through the reconciler's writer and retention:
 * a window of 2025-10-01 uses owners wf-0 and wf-old; W0's windows (2025-11-02) use wf-0, wf-1
 * and wf-2. Whatever the order the windows are reconciled in, each owner ends with the latest
 * day of a window that used it (wf-old 2025-10-01, the others 2025-11-02). Retention with the
 * results' cutoff at 2025-11-01 deletes the old window's rows and then the one owner no kept row
 * uses (wf-old); the kept windows' owner bytes are all still readable. */
static void owner_window(const char *ws, const char *agent, int seq, const char *wf, int port,
                         long long tx)
{
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows) "
         "VALUES ('%s', %d, 'nyc-1', '%s', 60, 1)",
         agent, seq, ws);
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, "
         "local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, pid, uid, "
         "user_name, program, workflow) VALUES ('%s', '%s', %d, 0, 'nyc-1', 'socket', 'tcp', "
         "'10.1.0.2', %d, '10.2.0.2', 5201, 'client', %lld, 0, 4307, 1000, 'alice', "
         "'python3', '%s')",
         ws, agent, seq, port, tx, wf);
}

static void test_owner_days(void **state)
{
    (void)state;
    static const char OLD[] = "2025-10-01T10:00:00Z";
    char err[512];
    if (db_ensure_partitions(db, US(INT64_C(1759312800)), US(INT64_C(1759312800)), err, sizeof err))
        fail_msg("%s", err);
    for (int order = 0; order < 2; order++) {
        reset_results();
        exec("DELETE FROM attribution_hours; DELETE FROM owners; DELETE FROM flow_packed WHERE "
             "window_start = '%s'; DELETE FROM flow_reports WHERE window_start = '%s'",
             OLD, OLD);
        if (num("SELECT count(*) FROM flow_reports WHERE agent_id = 'agent-nyc-1'") == 0)
            insert_inputs();
        owner_window(OLD, "agent-old", 1, "wf-0", 40000, 3000); /* two connections */
        owner_window(OLD, "agent-old2", 1, "wf-old", 40002, 4000);
        if (order == 0 &&
            recon_db_reconcile_window(db, cfg, US(INT64_C(1759312800)), NULL, err, sizeof err))
            fail_msg("old window: %s", err);
        for (int w = 0; w < 12; w++)
            reconcile_w(w, NULL);
        if (order == 1 &&
            recon_db_reconcile_window(db, cfg, US(INT64_C(1759312800)), NULL, err, sizeof err))
            fail_msg("old window: %s", err);
        PGresult *r = query("SELECT string_agg(workflow || '@' || last_day, ' ' ORDER BY workflow) "
                            "FROM owners");
        assert_string_equal(PQgetvalue(r, 0, 0), "wf-0@2025-11-02 wf-1@2025-11-02 "
                                                 "wf-2@2025-11-02 wf-old@2025-10-01");
        PQclear(r);
    }
    long long kept = num("SELECT sum(bytes) FROM attribution_rollup WHERE window_start >= "
                         "'2025-11-02T00:00:00Z'");
    assert_true(kept > 0);
    struct cfg c = *cfg;
    c.retention_results_days = 30;
    c.retention_raw_days = 400; /* no raw partition dropped */
    c.retention_alerts_days = c.retention_gaps_days = 400;
    struct retention_stats st;
    /* now = 2025-12-01T00:00Z: results before 2025-11-01 go */
    if (retention_prune(db, &c, US(INT64_C(1764547200)), 0, &st, err, sizeof err))
        fail_msg("%s", err);
    int k = retention_table_index("owners");
    assert_true(k >= 0);
    assert_int_equal(st.deleted[k], 1);
    PGresult *r = query("SELECT string_agg(workflow, ' ' ORDER BY workflow) FROM owners");
    assert_string_equal(PQgetvalue(r, 0, 0), "wf-0 wf-1 wf-2");
    PQclear(r);
    assert_int_equal(num("SELECT sum(bytes) FROM attribution_rollup"), kept);
    assert_int_equal(num("SELECT count(*) FROM attribution_packed p, unnest(p.owner_ids) u(id) "
                         "WHERE NOT EXISTS (SELECT 1 FROM owners o WHERE o.id = u.id)"),
                     0);
}

static int setup(void **state)
{
    (void)state;
    const char *ci = th_pg_default();
    char err[512], json[4096];
    db = db_connect_str(ci, err, sizeof err);
    assert_non_null(db);
    snprintf(json, sizeof json,
             "{\"window_seconds\": 60, \"grace_seconds\": 30, \"database\": \"%s\","
             " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
             "             {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}],"
             " \"devices\": [{\"name\": \"nyc-border-1\", \"site\": \"nyc\", \"gnmi\": {}}],"
             " \"links\": [{\"device\": \"nyc-border-1\", \"interface\": \"et-0/0/1\","
             " \"site\": \"nyc\", \"peer_site\": \"chi\", \"circuit\": \"nyc-chi-1\","
             " \"capacity_bps\": 1000000}],"
             " \"overhead\": {\"bytes_per_packet\": 66, \"ratio_without_packets\": 0.95},"
             " \"thresholds\": {\"green\": 0.95, \"red\": 0.80, \"min_gap_bytes\": 1000,"
             " \"over\": 1.05, \"alert_windows\": 2, \"resolve_windows\": 2,"
             " \"saturation\": 0.90}}",
             ci);
    struct cfg_errors errs = {0};
    cfg = cfg_parse("test_recon_fleet.json", json, &errs);
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
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hourly_rollups),      cmocka_unit_test(test_parallel_equals_serial),
        cmocka_unit_test(test_writer_changes_only), cmocka_unit_test(test_fold_thread),
        cmocka_unit_test(test_owner_days),          cmocka_unit_test(test_side_write),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
