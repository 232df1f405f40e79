/* Benchmark of `wanledger reconcile`, in one run against a throwaway PostgreSQL 15:
 *  1. ingest: flow records per second end to end (HTTP + JSON validation + COPY + COMMIT) into
 *     the real binary, from 2 client connections posting agent reports of 1,000 flows;
 *  2. reconciliation of one 60 s window of 50 sites (2,450 directed pairs, 1,225 circuits) with
 *     100,000 flow records: time of recon_db_reconcile_window (repeated), and the peak resident
 *     memory of `wanledger reconcile --once` reconciling that window.
 * Usage: bench_reconciler [ROUNDS]   (ROUNDS x 100,000 flows are ingested; default 10) */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "db.h"
#include "harness.h"
#include "recon_db.h"
#include "timeutil.h"

#include "bench_util.h"

#define N_SITES           50
#define FLOWS_PER_REPORT  1000
#define REPORTS_PER_ROUND 100 /* 100 x 1,000 = 100,000 flows per window */
#define N_CLIENTS         2
#define RECON_RUNS        10

static char g_dir[256], g_cfg[300];
static int g_port;

/* ---- setup ------------------------------------------------------------------------------------
 */

static void write_config(const char *conninfo)
{
    struct str s = {0};
    sadd(&s,
         "{\"window_seconds\": 60, \"grace_seconds\": 90, \"tick_seconds\": 3600,\n"
         " \"database\": \"%s\", \"listen\": \"127.0.0.1:%d\", \"tokens_file\": \"tokens.json\",\n"
         " \"limits\": {\"max_body_bytes\": 67108864},\n \"sites\": [",
         conninfo, g_port);
    for (int i = 0; i < N_SITES; i++)
        sadd(&s, "%s{\"name\": \"s%02d\", \"prefixes\": [\"10.%d.0.0/16\"]}", i ? ", " : "", i,
             i + 1);
    sadd(&s, "],\n \"devices\": [");
    for (int i = 0; i < N_SITES; i++)
        sadd(&s, "%s{\"name\": \"r%02d\", \"site\": \"s%02d\", \"gnmi\": {}}", i ? ", " : "", i, i);
    sadd(&s, "],\n \"links\": [");
    int k = 0;
    for (int i = 0; i < N_SITES; i++)
        for (int j = i + 1; j < N_SITES; j++)
            sadd(&s,
                 "%s{\"device\": \"r%02d\", \"interface\": \"to-s%02d\", \"site\": \"s%02d\","
                 " \"peer_site\": \"s%02d\", \"circuit\": \"c%02d-%02d\","
                 " \"capacity_bps\": 100000000000}\n",
                 k++ ? ", " : "", i, j, i, j, i, j);
    sadd(&s, "]}\n");
    FILE *f = fopen(g_cfg, "w");
    if (!f || fwrite(s.p, 1, s.n, f) != s.n || fclose(f) != 0)
        die("cannot write %s", g_cfg);
    free(s.p);
    char tp[300];
    snprintf(tp, sizeof(tp), "%s/tokens.json", g_dir);
    f = fopen(tp, "w");
    if (!f)
        die("cannot write %s", tp);
    fprintf(f, "{\"agent\": [\"bench-agent-token-0123456789\"],"
               " \"poller\": [\"bench-poller-token-0123456789\"]}\n");
    fclose(f);
    chmod(tp, 0600);
}

/* Deterministic flow sizes: flow k of report r. */
static long long tx_of(int r, int k)
{
    return 100000 + ((long long)r * 7919 + (long long)k * 104729) % 900000;
}

/* Report r of window ws: agent of site r % 50, flows to every other site in turn (k % 49); on
 * one pair, the flows of a report come from 4 users, 2 programs and 3 workflows of the site, so a
 * pair's rollup has a few dozen rows, not one per flow. */
static char *make_report(int r, int64_t ws, int round, size_t *len)
{
    struct str s = {0};
    char t[TM_RFC3339_LEN];
    int src = r % N_SITES;
    sadd(&s,
         "{\"version\":1,\"host\":\"h%02d-%d\",\"agent_id\":\"agent-%02d-%d\",\"seq\":%d,"
         "\"window_start\":\"%s\",\"window_seconds\":60,\"dropped_events\":0,\"flows\":[",
         src, r / N_SITES, src, r / N_SITES, round, tm_format_rfc3339(ws, t));
    for (int k = 0; k < FLOWS_PER_REPORT; k++) {
        int dst = (src + 1 + k % (N_SITES - 1)) % N_SITES;
        sadd(&s,
             "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.%d.%d.%d:%d\","
             "\"remote\":\"10.%d.%d.%d:5201\",\"role\":\"client\",\"tx_bytes\":%lld,"
             "\"rx_bytes\":%lld,\"pid\":%d,\"uid\":%d,\"user\":\"user%02d\","
             "\"program\":\"prog%02d\",\"workflow\":\"wf-%03d\",\"container\":\"\"}",
             k ? "," : "", src + 1, k / 250, k % 250 + 1, 30000 + k, dst + 1, k % 7, k % 200 + 1,
             tx_of(r, k), tx_of(r, k) / 50, 1000 + k % 97, 1000 + (k / 49) % 4, (k / 49) % 4,
             (k / 49) % 2, src * 3 + (k / 49) % 3);
    }
    sadd(&s, "]}");
    *len = s.n;
    return s.p;
}

/* ---- ingest -----------------------------------------------------------------------------------
 */

struct job {
    char **bodies;
    size_t *lens;
    int first, step, n;
    int64_t *lat_ns; /* per request */
};

static void *client(void *arg)
{
    struct job *j = arg;
    int fd = http_connect(g_port);
    for (int i = j->first; i < j->n; i += j->step) {
        int64_t t0 = tm_mono_ns();
        if (http_post(fd, "/v1/attributions", "bench-agent-token-0123456789", j->bodies[i],
                      j->lens[i]) != 200)
            die("ingest failed");
        j->lat_ns[i] = tm_mono_ns() - t0;
    }
    close(fd);
    return NULL;
}

/* CPU seconds (user + system) of a process from /proc/PID/stat. */
static double cpu_of(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    unsigned long ut = 0, st = 0;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Busy CPU seconds of the whole machine (all cores) from /proc/stat. */
static double cpu_all(void)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f || fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
                     &v[4], &v[5], &v[6], &v[7]) != 8) {
        if (f)
            fclose(f);
        return 0;
    }
    fclose(f);
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

static double rss_mib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double v = 0;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, key, strlen(key)) == 0)
            v = atof(line + strlen(key) + 1) / 1024.0;
    if (f)
        fclose(f);
    return v;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    if (rounds < 1 || rounds > 100)
        die("ROUNDS: 1..100");
    const char *conninfo = th_pg_default();
    const char *dir = th_tmpdir("bench-recon");
    snprintf(g_dir, sizeof(g_dir), "%s", dir);
    snprintf(g_cfg, sizeof(g_cfg), "%s/config.json", g_dir);
    g_port = th_free_port();
    write_config(conninfo);
    char logp[300];
    snprintf(logp, sizeof(logp), "%s/reconcile.log", g_dir);
    char *sargv[] = {(char *)th_bin("wanledger"), "--config", g_cfg, "reconcile", NULL};
    pid_t srv = th_spawn(sargv, logp);
    if (srv < 0 || th_wait_port(g_port, 30000) != 0)
        die("wanledger reconcile did not start (log %s)", logp);

    /* the window reconciled in part 2; rounds fill W, W-60 s, … */
    char err[1024];
    int64_t W = tm_window_start(tm_now_us(), 60) - 10 * 60 * TM_USEC_PER_SEC;
    size_t n_req = (size_t)rounds * REPORTS_PER_ROUND;
    char **bodies = calloc(n_req, sizeof(*bodies));
    size_t *lens = calloc(n_req, sizeof(*lens));
    int64_t *lat = calloc(n_req, sizeof(*lat));
    size_t bytes = 0;
    for (int rd = 0; rd < rounds; rd++)
        for (int r = 0; r < REPORTS_PER_ROUND; r++) {
            size_t i = (size_t)rd * REPORTS_PER_ROUND + (size_t)r;
            bodies[i] = make_report(r, W - (int64_t)rd * 60 * TM_USEC_PER_SEC, rd + 1, &lens[i]);
            bytes += lens[i];
        }
    printf("wanledger reconcile benchmark (%s)\n\n", th_bin("wanledger"));
    printf("1. ingest: %zu requests x %d flows = %zu flow records, %.1f MiB of JSON, %d client "
           "connections\n",
           n_req, FLOWS_PER_REPORT, n_req * FLOWS_PER_REPORT, (double)bytes / 1048576.0, N_CLIENTS);
    /* the first partition creation is not what we measure: warm up with one small report */
    {
        int fd = http_connect(g_port);
        char wb[512];
        char t[TM_RFC3339_LEN];
        int wl = snprintf(wb, sizeof(wb),
                          "{\"version\":1,\"host\":\"warm\",\"agent_id\":\"warm\",\"seq\":1,"
                          "\"window_start\":\"%s\",\"flows\":[]}",
                          tm_format_rfc3339(W - 86400 * TM_USEC_PER_SEC, t));
        http_post(fd, "/v1/attributions", "bench-agent-token-0123456789", wb, (size_t)wl);
        wl = snprintf(wb, sizeof(wb),
                      "{\"version\":1,\"host\":\"warm\",\"agent_id\":\"warm\",\"seq\":2,"
                      "\"window_start\":\"%s\",\"flows\":[]}",
                      tm_format_rfc3339(W, t));
        http_post(fd, "/v1/attributions", "bench-agent-token-0123456789", wb, (size_t)wl);
        close(fd);
    }
    pthread_t th[N_CLIENTS];
    struct job jobs[N_CLIENTS];
    /* the PostgreSQL backends serving wanledger (every client backend but ours) */
    pid_t backends[16];
    int n_backends = 0;
    PGconn *mon = db_connect_str(conninfo, err, sizeof(err));
    if (!mon)
        die("%s", err);
    PGresult *br = PQexec(mon, "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client "
                               "backend' AND pid <> pg_backend_pid()");
    for (int i = 0; i < PQntuples(br) && n_backends < 16; i++)
        backends[n_backends++] = atoi(PQgetvalue(br, i, 0));
    PQclear(br);
    double pg_cpu0 = 0;
    for (int i = 0; i < n_backends; i++)
        pg_cpu0 += cpu_of(backends[i]);
    double srv_cpu0 = cpu_of(srv), all_cpu0 = cpu_all();
    struct rusage ru0, ru1;
    getrusage(RUSAGE_SELF, &ru0);
    int64_t t0 = tm_mono_ns();
    for (int c = 0; c < N_CLIENTS; c++) {
        jobs[c] = (struct job){bodies, lens, c, N_CLIENTS, (int)n_req, lat};
        pthread_create(&th[c], NULL, client, &jobs[c]);
    }
    for (int c = 0; c < N_CLIENTS; c++)
        pthread_join(th[c], NULL);
    int64_t span = tm_mono_ns() - t0;
    getrusage(RUSAGE_SELF, &ru1);
    double srv_cpu = cpu_of(srv) - srv_cpu0, all_cpu = cpu_all() - all_cpu0;
    double pg_cpu = -pg_cpu0;
    for (int i = 0; i < n_backends; i++)
        pg_cpu += cpu_of(backends[i]);
    PQfinish(mon);
    double cli_cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                     (double)(ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                     (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec) / 1e6 +
                     (double)(ru1.ru_stime.tv_usec - ru0.ru_stime.tv_usec) / 1e6;
    qsort(lat, n_req, sizeof(*lat), cmp_i64);
    double flows_per_s = (double)(n_req * FLOWS_PER_REPORT) / ((double)span / 1e9);
    printf("   wall %.3f s: %.0f flow records/s (target >= 200,000/s: %.2fx), %.1f MiB/s of JSON\n",
           (double)span / 1e9, flows_per_s, flows_per_s / 200000.0,
           (double)bytes / 1048576.0 / ((double)span / 1e9));
    printf("   per request of %d flows (n=%zu): p50 %.1f ms, p99 %.1f ms, max %.1f ms\n",
           FLOWS_PER_REPORT, n_req, pct(lat, n_req, 0.5) / 1e6, pct(lat, n_req, 0.99) / 1e6,
           lat[n_req - 1] / 1e6);
    double nf = (double)(n_req * FLOWS_PER_REPORT);
    printf(
        "   CPU seconds during ingest: wanledger %.2f, its PostgreSQL backends %.2f, this client "
        "%.2f; everything else on the machine %.2f (of %.2f available on 2 cores)\n",
        srv_cpu, pg_cpu, cli_cpu, all_cpu - srv_cpu - cli_cpu - pg_cpu, 2.0 * (double)span / 1e9);
    printf("   CPU per flow record: wanledger %.2f us + PostgreSQL %.2f us + client %.2f us -> "
           "%.0f flow records/s if 2 cores were ours alone (%.2fx the target)\n",
           srv_cpu / nf * 1e6, pg_cpu / nf * 1e6, cli_cpu / nf * 1e6,
           2.0 / ((srv_cpu + pg_cpu + cli_cpu) / nf),
           2.0 / ((srv_cpu + pg_cpu + cli_cpu) / nf) / 200000.0);
    for (size_t i = 0; i < n_req; i++)
        free(bodies[i]);
    free(bodies);
    free(lens);

    /* counters for every circuit of W: samples at W and W+60 s; out = i->j, in = j->i.
     * Octets = a 0.9 coverage of what the flows attribute on average (not needed exactly). */
    {
        struct str s = {0};
        char ta[TM_RFC3339_LEN], tb[TM_RFC3339_LEN];
        tm_format_rfc3339(W, ta);
        tm_format_rfc3339(W + 60 * TM_USEC_PER_SEC, tb);
        sadd(&s, "{\"version\":1,\"poller\":\"bench\",\"samples\":[");
        int k = 0;
        for (int i = 0; i < N_SITES; i++)
            for (int j = i + 1; j < N_SITES; j++)
                for (int e = 0; e < 2; e++)
                    sadd(&s,
                         "%s{\"device\":\"r%02d\",\"interface\":\"to-s%02d\",\"at\":\"%s\","
                         "\"uptime_cs\":%d,\"in_octets\":%lld,\"out_octets\":%lld,"
                         "\"in_pkts\":%lld,\"out_pkts\":%lld}",
                         k++ ? "," : "", i, j, e ? tb : ta, 100000 + e * 6000, e * 25000000LL,
                         e * 1100000000LL, e * 20000LL, e * 800000LL);
        sadd(&s, "]}");
        int fd = http_connect(g_port);
        if (http_post(fd, "/v1/counters", "bench-poller-token-0123456789", s.p, s.n) != 200)
            die("counters failed");
        close(fd);
        free(s.p);
    }
    th_stop(srv, 10000);

    /* 2. reconciliation of W, in this process, RECON_RUNS times (each replaces the last) */
    struct cfg_errors errs;
    struct cfg *cfg = cfg_load(g_cfg, &errs);
    if (!cfg)
        die("config");
    PGconn *db = db_connect(cfg, err, sizeof(err));
    if (!db)
        die("%s", err);
    int64_t rt[RECON_RUNS];
    struct recon_db_stats st = {0};
    double rss0 = rss_mib("VmRSS:");
    for (int i = 0; i < RECON_RUNS; i++) {
        int64_t a = tm_mono_ns();
        if (recon_db_reconcile_window(db, cfg, W, &st, err, sizeof(err)) < 0)
            die("reconcile: %s", err);
        rt[i] = tm_mono_ns() - a;
    }
    qsort(rt, RECON_RUNS, sizeof(rt[0]), cmp_i64);
    printf("\n2. reconcile one 60 s window: %d sites, %zu circuits, %zu flow records, %zu samples\n"
           "   -> %zu cells, %zu rollup rows, %zu link rows\n",
           N_SITES, cfg->n_links, st.n_flows, st.n_samples, st.n_cells, st.n_rollup,
           st.n_link_windows);
    printf("   recon_db_reconcile_window (n=%d): p50 %.3f s, p99 %.3f s, max %.3f s "
           "(target <= 1 s: p50 is %.2fx of it)\n",
           RECON_RUNS, pct(rt, RECON_RUNS, 0.5) / 1e9, pct(rt, RECON_RUNS, 0.99) / 1e9,
           rt[RECON_RUNS - 1] / 1e9, pct(rt, RECON_RUNS, 0.5) / 1e9);
    printf("   last run split: load %.3f s, compute %.3f s, write %.3f s\n", st.load_us / 1e6,
           st.compute_us / 1e6, st.write_us / 1e6);
    printf("   this process: VmRSS %.1f MiB before the runs, %.1f MiB after\n", rss0,
           rss_mib("VmRSS:"));
    PQfinish(db);

    /* the binary's peak memory for the same window: mark it dirty, run --once, read rusage */
    {
        PGconn *d2 = db_connect(cfg, err, sizeof(err));
        char ws[TM_RFC3339_LEN], sql[256];
        snprintf(sql, sizeof(sql), "UPDATE window_state SET dirty = true WHERE window_start = '%s'",
                 tm_format_rfc3339(W, ws));
        if (!d2 || pgc_exec(d2, sql, err, sizeof(err)) < 0)
            die("%s", err);
        PQfinish(d2);
        char *oargv[] = {
            (char *)th_bin("wanledger"), "--config", g_cfg, "reconcile", "--once", NULL};
        int64_t a = tm_mono_ns();
        pid_t p = th_spawn(oargv, logp);
        int wst;
        struct rusage ru;
        if (p < 0 || wait4(p, &wst, 0, &ru) < 0)
            die("--once");
        printf("   `wanledger reconcile --once` (every due window, incl. W): exit %d, %.3f s, "
               "peak RSS %.1f MiB\n",
               WIFEXITED(wst) ? WEXITSTATUS(wst) : -1, (tm_mono_ns() - a) / 1e9,
               ru.ru_maxrss / 1024.0);
    }
    cfg_free(cfg);
    return 0;
}
