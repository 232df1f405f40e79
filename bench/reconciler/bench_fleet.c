/* Fleet-scale benchmark of the PostgreSQL path (issue #14), in one run against a throwaway
 * PostgreSQL 15:
 *  1. one 60 s window each of 100 k, 1 M and (optionally) 5 M flow records at 500 sites and
 *     5,000 circuits (site i has circuits to sites i+1..i+10 mod 500; 10/12 of the flows go to
 *     those neighbours, 2/12 two hops or more), ingested through the real `wanledger reconcile`
 *     over HTTP; then recon_db_reconcile_window of each window, RUNS times: p50/max, µs per flow;
 *     then (unless WL_BENCH_NO_NEXT) the next window of the largest size, same hosts and hour,
 *     RUNS times in the same process: what a running reconciler does every minute
 *     (WL_BENCH_NEXT_GAP=N: its reports' seqs skip N, a seq gap for every agent);
 *  2. a backlog of 4 windows of 250 k flows reconciled by recon_par_run with 1 worker (what the
 *     loop did before: one window after another) and with 2 workers (separate connections),
 *     alternating, RUNS rounds: wall per backlog p50/max and the ratio;
 *  3. (WL_BENCH_FOLD_HOUR=N) the fold of an hour of up to 60 windows like the largest.
 * Usage: bench_fleet [RUNS [MAX_FLOWS]]   (default 3 and 1000000; 5000000 adds the 5 M window) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chstore.h"
#include "chstore_flush.h"
#include "config.h"
#include "db.h"
#include "harness.h"
#include "recon_db.h"
#include "recon_par.h"
#include "th_clickhouse.h"
#include "timeutil.h"

#include "bench_fleet_shape.h"
#include "bench_util.h"

#define N_CLIENTS     2
#define BACKLOG       4
#define BACKLOG_FLOWS 250000
#define MAX_RUNS      20

static const char *const TOKEN_A = "bench-agent-token-0123456789";
static const char *const TOKEN_P = "bench-poller-token-0123456789";
static char g_dir[256], g_cfg[300];
static int g_port;

static void write_config(const char *conninfo)
{
    struct str s = {0};
    fleet_config(&s, conninfo, g_port);
    FILE *f = fopen(g_cfg, "w");
    if (!f || fwrite(s.p, 1, s.n, f) != s.n || fclose(f) != 0)
        die("cannot write %s", g_cfg);
    free(s.p);
    char tp[300];
    snprintf(tp, sizeof(tp), "%s/tokens.json", g_dir);
    f = fopen(tp, "w");
    if (!f)
        die("cannot write %s", tp);
    fprintf(f, "{\"agent\": [\"%s\"], \"poller\": [\"%s\"]}\n", TOKEN_A, TOKEN_P);
    fclose(f);
    chmod(tp, 0600);
}

/* Report r of a window (bench_fleet_shape.h). */
static char *make_report(int r, int64_t ws, int seq, size_t *len)
{
    struct str s = {0};
    char t[TM_RFC3339_LEN];
    int src = r % N_SITES, host = r / N_SITES;
    sadd(&s,
         "{\"version\":1,\"host\":\"h%03d-%d\",\"agent_id\":\"agent-%03d-%d\",\"seq\":%d,"
         "\"window_start\":\"%s\",\"window_seconds\":60,\"dropped_events\":0,\"flows\":[",
         src, host, src, host, seq, tm_format_rfc3339(ws, t));
    for (int k = 0; k < FLOWS_PER_REPORT; k++) {
        struct fleet_flow f;
        fleet_flow(r, k, &f);
        sadd(&s,
             "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.%d.%d.%d:%d\","
             "\"remote\":\"10.%d.%d.%d:5201\",\"role\":\"client\",\"tx_bytes\":%lld,"
             "\"rx_bytes\":%lld,\"pid\":%d,\"uid\":%d,\"user\":\"user%02d\","
             "\"program\":\"prog%02d\",\"workflow\":\"wf-%04d\",\"container\":\"\"}",
             k ? "," : "", f.local[0], f.local[1], f.local[2], f.local_port, f.remote[0],
             f.remote[1], f.remote[2], f.tx, f.rx, f.pid, f.uid, f.user, f.program, f.workflow);
    }
    sadd(&s, "]}");
    *len = s.n;
    return s.p;
}

struct job {
    int64_t ws;
    int seq, first, step, n;
};

static void *client(void *arg)
{
    struct job *j = arg;
    int fd = http_connect(g_port);
    for (int r = j->first; r < j->n; r += j->step) {
        size_t len;
        char *b = make_report(r, j->ws, j->seq, &len);
        if (http_post(fd, "/v1/attributions", TOKEN_A, b, len) != 200)
            die("ingest failed");
        free(b);
    }
    close(fd);
    return NULL;
}

/* Ingests n_flows flow records into window ws (reports generated on the fly); wall seconds. */
static double ingest(int64_t ws, int seq, long n_flows)
{
    pthread_t th[N_CLIENTS];
    struct job jobs[N_CLIENTS];
    int64_t t0 = tm_mono_ns();
    for (int c = 0; c < N_CLIENTS; c++) {
        jobs[c] = (struct job){ws, seq, c, N_CLIENTS, (int)(n_flows / FLOWS_PER_REPORT)};
        pthread_create(&th[c], NULL, client, &jobs[c]);
    }
    for (int c = 0; c < N_CLIENTS; c++)
        pthread_join(th[c], NULL);
    return (double)(tm_mono_ns() - t0) / 1e9;
}

/* Counter samples of every circuit at ws and ws + 60 s, posted 1,000 samples at a time. */
static void counters(int64_t ws)
{
    char ta[TM_RFC3339_LEN], tb[TM_RFC3339_LEN];
    tm_format_rfc3339(ws, ta);
    tm_format_rfc3339(ws + 60 * TM_USEC_PER_SEC, tb);
    int fd = http_connect(g_port);
    for (int e = 0; e < 2; e++)
        for (int i0 = 0; i0 < N_SITES; i0 += 100) {
            struct str s = {0};
            sadd(&s, "{\"version\":1,\"poller\":\"bench\",\"samples\":[");
            int k = 0;
            for (int i = i0; i < i0 + 100; i++)
                for (int d = 1; d <= N_NEIGHBOURS; d++)
                    sadd(&s,
                         "%s{\"device\":\"r%03d\",\"interface\":\"to-s%03d\",\"at\":\"%s\","
                         "\"uptime_cs\":%d,\"in_octets\":%lld,\"out_octets\":%lld,"
                         "\"in_pkts\":%lld,\"out_pkts\":%lld}",
                         k++ ? "," : "", i, (i + d) % N_SITES, e ? tb : ta, 100000 + e * 6000,
                         e * 25000000LL, e * 1100000000LL, e * 20000LL, e * 800000LL);
            sadd(&s, "]}");
            if (http_post(fd, "/v1/counters", TOKEN_P, s.p, s.n) != 200)
                die("counters failed");
            free(s.p);
        }
    close(fd);
}

static const char *loadavg(void)
{
    static char buf[64];
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f || !fgets(buf, sizeof(buf), f))
        snprintf(buf, sizeof(buf), "?");
    if (f)
        fclose(f);
    char *sp = strchr(buf, ' ');
    for (int k = 0; sp && k < 2; k++)
        sp = strchr(sp + 1, ' ');
    if (sp)
        *sp = 0;
    return buf;
}

static void summary(const char *what, int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_i64);
    printf("%s (n=%d): p50 %.3f s, max %.3f s\n", what, n, pct(v, (size_t)n, 0.5) / 1e9,
           v[n - 1] / 1e9);
}

static long long pg_num(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        die("%s: %s", sql, PQresultErrorMessage(r));
    long long v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* The owner sums of a window, to compare the two paths' results (the scenarios' test,
 * tests/analytics/test_ch_store.c, compares every row). */
static long long window_sum(PGconn *db, int64_t ws, const char *table, const char *col)
{
    char sql[256], t[TM_RFC3339_LEN];
    snprintf(sql, sizeof(sql),
             "SELECT coalesce(sum(%s), 0)::bigint FROM %s WHERE window_start = '%s'", col, table,
             tm_format_rfc3339(ws, t));
    return pg_num(db, sql);
}

/* The windows' results out of the way, untimed, as the reconciler writes (013's triggers on a
 * 2 M-row DELETE hit the 300 s statement timeout in their zero-row cleanup); the hourly rows of
 * the windows' hours go too (only these windows are in them). Before each path's first run: the
 * reconciler that took the reports may have reconciled a window after its first few reports
 * (late reports of a window past its grace), and run 1 is meant as the first reconciliation. */
static void clear_results(PGconn *db, const int64_t *win, int n_sizes)
{
    char err[1024], t[TM_RFC3339_LEN], sql[512];
    /* the packed tables (sql/022, 023), not their views: a DELETE on a view goes row by row
     * through its INSTEAD OF trigger */
    static const char *const results[] = {"heatmap_cells", "attribution_packed",
                                          "dependency_packed", "link_windows"};
    if (pgc_exec(db, "BEGIN; SET LOCAL wanledger.hourly_writer = 'on'", err, sizeof(err)) < 0)
        die("%s", err);
    for (int i = 0; i < n_sizes; i++) {
        for (size_t k = 0; k < sizeof(results) / sizeof(*results); k++) {
            snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE window_start = '%s'", results[k],
                     tm_format_rfc3339(win[i], t));
            if (pgc_exec(db, sql, err, sizeof(err)) < 0)
                die("%s", err);
        }
        /* and the hours' fold marks (sql/020): this path's first runs meet unfolded hours too */
        static const char *const hourly[] = {"heatmap_cells_hourly", "attribution_rollup_hourly",
                                             "attribution_hours"};
        for (int k = 0; k < 3; k++) {
            snprintf(sql, sizeof(sql),
                     "DELETE FROM %s WHERE hour_start = date_bin('1 hour', '%s'::timestamptz, "
                     "timestamptz 'epoch')",
                     hourly[k], tm_format_rfc3339(win[i], t));
            if (pgc_exec(db, sql, err, sizeof(err)) < 0)
                die("%s", err);
        }
    }
    if (pgc_exec(db, "COMMIT", err, sizeof(err)) < 0)
        die("%s", err);
}

/* wl_fold_owner_hour of the hour hour_sql (an SQL expression) with the fold thread's settings
 * (reconciler/recon_db_fold.c: its statement timeout and work_mem), in its own transaction:
 * the hourly rows written (-1: folded already), the seconds in *secs. */
static long long fold_hour(PGconn *db, const char *hour_sql, double *secs)
{
    char sql[512], err[1024];
    snprintf(sql, sizeof(sql),
             "BEGIN; SET LOCAL statement_timeout = 1800000; SET LOCAL work_mem = '256MB';"
             " SELECT wl_fold_owner_hour(%s)",
             hour_sql);
    int64_t a = tm_mono_ns();
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        die("fold: %s", PQresultErrorMessage(r));
    long long rows = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    if (pgc_exec(db, "COMMIT", err, sizeof(err)) < 0)
        die("%s", err);
    *secs = (double)(tm_mono_ns() - a) / 1e9;
    return rows;
}

/* Part 3 (WL_BENCH_FOLD_HOUR=N): the fold of an hour holding up to N windows like the largest
 * one, as a running fleet's ended hour holds 60. The largest window's owner rows
 * (attribution_packed) are copied, untimed, into minutes 0.. of the hour a day before it, then
 * the hour is folded (wl_fold_owner_hour with fold_one's settings, reconciler/recon_db_fold.c)
 * at 10, 30 and 60 windows (those up to N), the hourly rows deleted between two folds. Each fold
 * must write as many hourly rows as the window has owners per pair, each row counting every
 * window, and k times the window's bytes. */
static void full_hour_fold(PGconn *db, int64_t ws_l, int max_windows)
{
    static const int steps[] = {10, 30, 60};
    char err[1024], sql[1024], src[TM_RFC3339_LEN], hour[TM_RFC3339_LEN];
    tm_format_rfc3339(ws_l, src);
    int64_t h = ws_l - ws_l % (3600 * TM_USEC_PER_SEC) - 86400 * TM_USEC_PER_SEC;
    tm_format_rfc3339(h, hour);
    snprintf(sql, sizeof(sql),
             "SELECT count(*) FROM attribution_packed p, unnest(p.bytes) WHERE window_start = '%s'",
             src);
    long long owners = pg_num(db, sql);
    snprintf(sql, sizeof(sql),
             "SELECT sum(b)::bigint FROM attribution_packed p, unnest(p.bytes) b WHERE"
             " window_start = '%s'",
             src);
    long long bytes = pg_num(db, sql);
    printf("\n3. the fold of an hour of windows like the largest (%lld owner rows a window), "
           "hour %s\n",
           owners, hour);
    int done = 0;
    for (size_t i = 0; i < sizeof(steps) / sizeof(*steps) && steps[i] <= max_windows; i++) {
        for (; done < steps[i]; done++) {
            snprintf(sql, sizeof(sql),
                     "INSERT INTO attribution_packed SELECT '%s'::timestamptz + make_interval(mins"
                     " => %d), src_site, dst_site, owner_ids, bytes FROM attribution_packed WHERE"
                     " window_start = '%s'",
                     hour, done, src);
            if (pgc_exec(db, sql, err, sizeof(err)) < 0)
                die("%s", err);
        }
        if (pgc_exec(db, "ANALYZE attribution_packed", err, sizeof(err)) < 0)
            die("%s", err);
        snprintf(sql, sizeof(sql), "'%s'::timestamptz", hour);
        double secs;
        long long rows = fold_hour(db, sql, &secs);
        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM attribution_rollup_hourly WHERE hour_start = '%s' AND"
                 " windows <> %d",
                 hour, done);
        long long odd = pg_num(db, sql);
        snprintf(sql, sizeof(sql),
                 "SELECT sum(bytes)::bigint FROM attribution_rollup_hourly WHERE hour_start = '%s'",
                 hour);
        long long sum = pg_num(db, sql);
        if (rows != owners || odd != 0 || sum != bytes * done)
            die("fold of %d windows: %lld hourly rows (%lld expected), %lld not counting every"
                " window, %lld bytes (%lld expected)",
                done, rows, owners, odd, sum, bytes * done);
        printf("   %d windows (%lld owner rows): %lld hourly rows in %.3f s (%.3f s a window), "
               "load average %s\n",
               done, owners * done, rows, secs, secs / done, loadavg());
        snprintf(sql, sizeof(sql),
                 "BEGIN; SET LOCAL wanledger.hourly_writer = 'on'; DELETE FROM"
                 " attribution_rollup_hourly WHERE hour_start = '%1$s'; DELETE FROM"
                 " attribution_hours WHERE hour_start = '%1$s'; COMMIT",
                 hour);
        if (pgc_exec(db, sql, err, sizeof(err)) < 0)
            die("%s", err);
    }
}

/* Part 1b: the same windows on the ClickHouse path. A scratch clickhouse-server (the tests'
 * harness, as bench/clickhouse/run.sh starts one); the windows' reports are put back in the
 * outbox and shipped by the real flusher (timed), the windows' result rows deleted (untimed),
 * then each window is reconciled RUNS times with analytics.clickhouse set; the sums of the
 * written rows must equal the PostgreSQL path's. */
static void clickhouse_path(PGconn *db, struct cfg *cfg, const int64_t *win, const long *sizes,
                            int n_sizes, int runs)
{
    char err[1024], t[TM_RFC3339_LEN], sql[512];
    static struct th_ch ch;
    th_ch_start(&ch, NULL);
    cfg->clickhouse.enabled = true;
    cfg->clickhouse.url = strdup(ch.url);
    cfg->clickhouse.database = strdup("wanledger");
    cfg->clickhouse.user = strdup("default");
    cfg->clickhouse.password = strdup(TH_CH_PASSWORD);
    cfg->clickhouse.batch_rows = 100000;
    cfg->clickhouse.timeout_ms = 300000;
    if (chstore_ensure_schema(&cfg->clickhouse, err, sizeof(err)) != 0)
        die("clickhouse schema: %s", err);
    printf("\n1b. the same windows on the ClickHouse path (clickhouse-server 18.16, 1 shard), load "
           "%s\n",
           loadavg());
    long long pg_att[3], pg_cells[3];
    for (int i = 0; i < n_sizes; i++) {
        pg_att[i] = window_sum(db, win[i], "attribution_rollup", "bytes");
        pg_cells[i] = window_sum(db, win[i], "heatmap_cells", "attributed_bytes");
        snprintf(sql, sizeof(sql),
                 "UPDATE flow_reports SET ch_pending = true WHERE window_start = '%s'",
                 tm_format_rfc3339(win[i], t));
        if (pgc_exec(db, sql, err, sizeof(err)) < 0)
            die("%s", err);
    }
    int64_t a = tm_mono_ns();
    if (chflush_drain(db, cfg, err, sizeof(err)) < 0)
        die("shipping to clickhouse: %s", err);
    double ship = (double)(tm_mono_ns() - a) / 1e9;
    long long shipped = 0;
    for (int i = 0; i < n_sizes; i++)
        shipped += sizes[i];
    printf("   outbox shipped: %lld flow records in %.1f s (%.0f/s)\n", shipped, ship,
           (double)shipped / ship);
    clear_results(db, win, n_sizes);
    for (int i = 0; i < n_sizes; i++) {
        int64_t tt[MAX_RUNS];
        struct recon_db_stats st = {0};
        for (int k = 0; k < runs; k++) {
            int64_t b = tm_mono_ns();
            if (recon_db_reconcile_window(db, cfg, win[i], &st, err, sizeof(err)) != 0)
                die("reconcile (clickhouse): %s", err);
            tt[k] = tm_mono_ns() - b;
            printf(
                "   %ld flows run %d: %.3f s (load %.3f, compute %.3f [alerts %.3f], write %.3f),"
                " %zu rows read from ClickHouse, %lld rows changed, load average %s\n",
                sizes[i], k + 1, tt[k] / 1e9, st.load_us / 1e6, st.compute_us / 1e6,
                st.alerts_us / 1e6, st.write_us / 1e6, st.n_flows, st.n_rows_changed, loadavg());
        }
        if (window_sum(db, win[i], "attribution_rollup", "bytes") != pg_att[i] ||
            window_sum(db, win[i], "heatmap_cells", "attributed_bytes") != pg_cells[i])
            die("window %d: the ClickHouse path's sums differ from the PostgreSQL path's", i);
        printf("   %ld flows: first run %.3f s%s; owner and cell sums equal to the PostgreSQL "
               "path's\n",
               sizes[i], tt[0] / 1e9, runs > 1 ? "" : " (n=1)");
        if (runs > 1) {
            char what[128];
            snprintf(what, sizeof(what), "   %ld flows again, nothing new", sizes[i]);
            summary(what, tt + 1, runs - 1);
        }
    }
    cfg->clickhouse.enabled = false;
    th_ch_stop(&ch);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* a long run's figures survive an interruption */
    int runs = argc > 1 ? atoi(argv[1]) : 3;
    long max_flows = argc > 2 ? atol(argv[2]) : 1000000;
    if (runs < 1 || runs > MAX_RUNS || max_flows < 100000 || max_flows > 20000000)
        die("usage: bench_fleet [RUNS 1..%d [MAX_FLOWS 100000..20000000]]", MAX_RUNS);
    const char *conninfo = th_pg_default();
    snprintf(g_dir, sizeof(g_dir), "%s", th_tmpdir("bench-fleet"));
    snprintf(g_cfg, sizeof(g_cfg), "%s/config.json", g_dir);
    g_port = th_free_port();
    write_config(conninfo);
    char logp[300], err[1024];
    snprintf(logp, sizeof(logp), "%s/reconcile.log", g_dir);
    char *sargv[] = {(char *)th_bin("wanledger"), "--config", g_cfg, "reconcile", NULL};
    pid_t srv = th_spawn(sargv, logp);
    if (srv < 0 || th_wait_port(g_port, 30000) != 0)
        die("wanledger reconcile did not start (log %s)", logp);
    long sizes[3] = {100000, 1000000, 5000000};
    int n_sizes = 0;
    while (n_sizes < 3 && sizes[n_sizes] <= max_flows)
        n_sizes++;
    if (max_flows > sizes[n_sizes - 1] && n_sizes < 3)
        sizes[n_sizes++] = max_flows;
    if (getenv("WL_BENCH_ONLY_LARGEST")) /* one window of MAX_FLOWS only */
        sizes[0] = sizes[n_sizes - 1], n_sizes = 1;
    /* windows: the sizes' at W - i min, the backlog's after them (older) */
    int64_t W = tm_window_start(tm_now_us(), 60) - 20 * 60 * TM_USEC_PER_SEC;
    int64_t win[3], back[BACKLOG];
    printf("fleet reconcile benchmark: %d sites, %d circuits, %d client connections\n", N_SITES,
           N_SITES * N_NEIGHBOURS, N_CLIENTS);
    for (int i = 0; i < n_sizes; i++) {
        win[i] = W - (int64_t)i * 60 * TM_USEC_PER_SEC;
        double s = ingest(win[i], i + 1, sizes[i]);
        counters(win[i]);
        printf("ingest %ld flow records: %.1f s (%.0f/s)\n", sizes[i], s, (double)sizes[i] / s);
    }
    int backlog = getenv("WL_BENCH_NO_BACKLOG") ? 0 : BACKLOG;
    for (int b = 0; b < backlog; b++) {
        back[b] = W - (int64_t)(n_sizes + b) * 60 * TM_USEC_PER_SEC;
        ingest(back[b], 10 + b, BACKLOG_FLOWS);
        counters(back[b]);
    }
    /* the next window: the largest window's size again, in its hour, reconciled (part 1) by the
     * process that has just reconciled the largest; its counter samples clear of the others'
     * (which span ws_L - BACKLOG min .. ws_L + n_sizes min) */
    int64_t ws_l = win[n_sizes - 1], next = 0, hour = 3600 * TM_USEC_PER_SEC;
    bool with_next = !getenv("WL_BENCH_NO_NEXT");
    if (with_next) {
        next = ws_l - (int64_t)(BACKLOG + 2) * 60 * TM_USEC_PER_SEC;
        if (next / hour != ws_l / hour)
            next = ws_l + (int64_t)(n_sizes + 1) * 60 * TM_USEC_PER_SEC;
        /* its seq follows the agents' last one, or skips WL_BENCH_NEXT_GAP seqs (every agent's
         * next report after its spool dropped some: one seq gap per agent) */
        const char *gap = getenv("WL_BENCH_NEXT_GAP");
        int skip = gap ? atoi(gap) : 0;
        double s = ingest(next, (backlog ? 10 + BACKLOG : n_sizes + 1) + skip, sizes[n_sizes - 1]);
        counters(next);
        printf(
            "ingest %ld flow records (the next window, same hosts and hour%s): %.1f s (%.0f/s)\n",
            sizes[n_sizes - 1], skip ? ", every agent's seq after a gap" : "", s,
            (double)sizes[n_sizes - 1] / s);
    }
    th_stop(srv, 10000);

    struct cfg_errors errs;
    struct cfg *cfg = cfg_load(g_cfg, &errs);
    PGconn *db = cfg ? db_connect(cfg, err, sizeof(err)) : NULL;
    if (!db)
        die("config or database: %s", err);
    if (getenv("WL_BENCH_PGLOG")) /* profiling: statements over 50 ms reported on stderr */
        pgc_exec(db, "SET client_min_messages = log; SET log_min_duration_statement = 50", err,
                 sizeof(err));
    {
        /* what the windows' raw flows take on disk (the packed rows, their TOAST, their indexes) */
        long long rows = pg_num(db, "SELECT count(*) FROM flow_packed");
        long long bytes = pg_num(db, "SELECT sum(pg_total_relation_size(relid))::bigint FROM "
                                     "pg_partition_tree('flow_packed') WHERE isleaf");
        long all = 0;
        for (int i = 0; i < n_sizes; i++)
            all += sizes[i];
        all += (long)backlog * BACKLOG_FLOWS + (with_next ? sizes[n_sizes - 1] : 0);
        printf("flow_packed: %lld rows, %.1f flow records per row, %.1f bytes per flow record "
               "(heap, TOAST, indexes)\n",
               rows, rows ? (double)all / (double)rows : 0.0,
               all ? (double)bytes / (double)all : 0.0);
    }
    clear_results(db, win, n_sizes);
    if (with_next)
        clear_results(db, &next, 1);
    printf("\n1. recon_db_reconcile_window of one 60 s window (PostgreSQL path), load %s\n",
           loadavg());
    double us_per_flow[3];
    for (int i = 0; i < n_sizes; i++) {
        int64_t t[MAX_RUNS];
        struct recon_db_stats st = {0};
        /* run 1 writes every row (the window's first reconciliation); runs 2.. find nothing
         * new and write nothing (recon_db_diff.c): reported apart */
        for (int k = 0; k < runs; k++) {
            int64_t a = tm_mono_ns();
            if (recon_db_reconcile_window(db, cfg, win[i], &st, err, sizeof(err)) < 0)
                die("reconcile: %s", err);
            t[k] = tm_mono_ns() - a;
            printf(
                "   %zu flows run %d: %.3f s (load %.3f, compute %.3f [alerts %.3f], write %.3f),"
                " %lld rows changed, load average %s\n",
                st.n_flows, k + 1, t[k] / 1e9, st.load_us / 1e6, st.compute_us / 1e6,
                st.alerts_us / 1e6, st.write_us / 1e6, st.n_rows_changed, loadavg());
        }
        char what[256];
        snprintf(what, sizeof(what),
                 "   %zu flows -> %zu cells, %zu rollup rows, %zu link rows, first run", st.n_flows,
                 st.n_cells, st.n_rollup, st.n_link_windows);
        summary(what, t, 1);
        us_per_flow[i] = (double)t[0] / 1e3 / (double)st.n_flows;
        if (runs > 1) {
            snprintf(what, sizeof(what), "   %zu flows again, nothing new", st.n_flows);
            summary(what, t + 1, runs - 1);
        }
        printf("      first run: %.2f us per flow\n", us_per_flow[i]);
    }
    for (int i = 1; i < n_sizes; i++)
        printf("   growth %ld -> %ld flows (x%.0f): time x%.2f\n", sizes[i - 1], sizes[i],
               (double)sizes[i] / (double)sizes[i - 1],
               us_per_flow[i] / us_per_flow[i - 1] * (double)sizes[i] / (double)sizes[i - 1]);

    if (with_next) { /* a window in a running reconciler: owners known, its hour's cells
                      * written by the window before, the load's arrays kept (common/hugealloc.c) */
        int64_t t[MAX_RUNS];
        struct recon_db_stats st = {0};
        for (int k = 0; k < runs; k++) {
            int64_t a = tm_mono_ns();
            if (recon_db_reconcile_window(db, cfg, next, &st, err, sizeof(err)) < 0)
                die("reconcile: %s", err);
            t[k] = tm_mono_ns() - a;
            printf("   the next window, %zu flows, run %d: %.3f s (load %.3f, compute %.3f "
                   "[alerts %.3f], write %.3f), %lld rows changed, load average %s\n",
                   st.n_flows, k + 1, t[k] / 1e9, st.load_us / 1e6, st.compute_us / 1e6,
                   st.alerts_us / 1e6, st.write_us / 1e6, st.n_rows_changed, loadavg());
        }
        summary("   the next window, first run (in the same process)", t, 1);
    }

    /* the owner rows' hourly rollup (sql/020): built once per ended hour by the reconciler's
     * loop, not by each window; timed here for the hour(s) of these windows */
    for (int i = 0; i < n_sizes; i++) {
        char sql[256], t[TM_RFC3339_LEN];
        snprintf(sql, sizeof(sql), "date_bin('1 hour', '%s'::timestamptz, timestamptz 'epoch')",
                 tm_format_rfc3339(win[i], t));
        double secs;
        long long rows = fold_hour(db, sql, &secs);
        if (rows >= 0) /* -1: the hour of an earlier window, folded already */
            printf("   fold of the owner hour of %s (once an hour): %lld hourly rows in %.3f s, "
                   "load average %s\n",
                   t, rows, secs, loadavg());
    }

    if (!getenv("WL_BENCH_NO_CH"))
        clickhouse_path(db, cfg, win, sizes, n_sizes, runs);
    printf("\n2. a backlog of %d windows x %d flows: recon_par_run, 1 worker vs 2 workers\n",
           BACKLOG, BACKLOG_FLOWS);
    int64_t seq[MAX_RUNS], par[MAX_RUNS];
    for (int k = 0; k < runs && backlog; k++)
        for (int w = 1; w <= 2; w++) {
            struct recon_par_stats ps = {0};
            int64_t a = tm_mono_ns();
            recon_par_run(db, cfg, NULL, back, BACKLOG, (k % 2 ? 3 - w : w), &ps);
            int64_t span = tm_mono_ns() - a;
            if (ps.reconciled != BACKLOG)
                die("backlog: %zu of %d reconciled", ps.reconciled, BACKLOG);
            (ps.workers == 1 ? seq : par)[k] = span;
        }
    int64_t s50, p50;
    if (!backlog)
        runs = 1, seq[0] = par[0] = 1;
    summary("   1 worker  (one window after another)", seq, runs);
    s50 = pct(seq, (size_t)runs, 0.5);
    summary("   2 workers (2 connections)           ", par, runs);
    p50 = pct(par, (size_t)runs, 0.5);
    printf("   speed-up at p50: %.2fx; per window %.3f s -> %.3f s\n", (double)s50 / (double)p50,
           s50 / 1e9 / BACKLOG, p50 / 1e9 / BACKLOG);
    if (getenv("WL_BENCH_FOLD_HOUR"))
        full_hour_fold(db, win[n_sizes - 1], atoi(getenv("WL_BENCH_FOLD_HOUR")));
    PQfinish(db);
    cfg_free(cfg);
    return 0;
}
