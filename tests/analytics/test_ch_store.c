/* The ClickHouse store against a real clickhouse-server and PostgreSQL, in process:
 *  - every reconciliation scenario (tests/recon_core/scenarios, every .scn) is loaded into
 * PostgreSQL and reconciled window by window twice: PostgreSQL only, then with its flows shipped
 * through the outbox into ClickHouse and summed there; heatmap_cells, attribution_rollup,
 *    link_windows, dependency_rollup and gap_alerts (minus ids and timestamps) must be equal;
 *  - an INSERT that ClickHouse applied but whose answer never came (the client timed out behind
 *    a proxy that holds it) is re-sent; ClickHouse then holds the block twice, and every read
 *    with FINAL — so the reconciliation — sees each flow once;
 *  - an exception ClickHouse writes into its answer after the 200 fails the window's load. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "chstore.h"
#include "chstore_flush.h"
#include "config.h"
#include "db.h"
#include "flow_row.h"
#include "harness.h"
#include "th_db.h"
#include "recon_db.h"
#include "scn_kv.h"
#include "th_clickhouse.h"
#include "timeutil.h"

#define T0 INT64_C(1795978380) /* the scenarios' offset 0 (tests/recon_core/driver.c) */

/* tests/recon_core/driver.c's default configuration (scenarios without a config block) */
static const char default_config[] =
    "{\"window_seconds\": 60,\n"
    " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\", \"fd00:1::/48\"]},\n"
    "             {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},\n"
    "             {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],\n"
    " \"devices\": [{\"name\": \"nyc-border-1\", \"site\": \"nyc\", \"gnmi\": {}},\n"
    "               {\"name\": \"chi-border-1\", \"site\": \"chi\", \"gnmi\": {}}],\n"
    " \"links\": [{\"device\": \"nyc-border-1\", \"interface\": \"et-0/0/1\", \"site\": \"nyc\",\n"
    "             \"peer_site\": \"chi\", \"circuit\": \"nyc-chi-1\", \"capacity_bps\": "
    "1000000}],\n"
    " \"dedup\": {\"nfs_ports\": [2049],\n"
    "           \"services\": [{\"name\": \"dupedog\", \"ports\": [7100], \"users\": "
    "[\"dupedog\"]}]},\n"
    " \"overhead\": {\"bytes_per_packet\": 66, \"ratio_without_packets\": 0.95},\n"
    " \"thresholds\": {\"green\": 0.95, \"red\": 0.80, \"min_gap_bytes\": 1000, \"over\": 1.05,\n"
    "                \"alert_windows\": 3, \"resolve_windows\": 2, \"saturation\": 0.90}}\n";

static PGconn *db;
static struct th_ch CH;

/* a statement on db that must succeed (th_db.h) */
#define exec(...) th_db_exec(db, __VA_ARGS__)

static char *one(const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    char *v = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static long long num(const char *sql)
{
    char *v = one(sql);
    long long n = atoll(v);
    free(v);
    return n;
}

/* ---- a scenario's lines as rows (tokenized by scn_kv.h, as the core's driver does) ---- */

/* A SQL literal of v ('…', NULL when absent); rotating static buffers. */
static const char *lit(const char *v)
{
    static char b[16][256];
    static int i;
    i = (i + 1) % 16;
    if (!v)
        return "NULL";
    snprintf(b[i], sizeof b[i], "'%s'", v); /* scenario values hold no quotes */
    return b[i];
}

static const char *at(const char *offset)
{
    static char b[8][64];
    static int i;
    i = (i + 1) % 8;
    snprintf(b[i], sizeof b[i], "to_timestamp(%.6f)", (double)T0 + atof(offset));
    return b[i];
}

/* "10.1.0.2:41522", "[fd00:1::2]:5201", "10.1.0.50" -> address and port ("NULL" when none) */
static void addr_port(const char *v, char *addr, size_t alen, char *port, size_t plen)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    char *host = buf, *p = NULL;
    if (buf[0] == '[') {
        host = buf + 1;
        char *close = strchr(host, ']');
        *close = 0;
        if (close[1] == ':')
            p = close + 2;
    } else if (strchr(buf, ':') && strchr(buf, ':') == strrchr(buf, ':')) {
        p = strchr(buf, ':');
        *p++ = 0;
    }
    th_strfmt(addr, alen, "'%s'", host);
    th_strfmt(port, plen, "%s", p ? p : "0");
}

static int seq;

static void put_sample(const struct scn_kv *kv)
{
    const char *cols[] = {"uptime", "in", "out", "in_pkts", "out_pkts", "speed", "bits", "disc"};
    const char *v[8];
    for (int i = 0; i < 8; i++) /* bits and disc have column defaults */
        v[i] = scn_kv_get(kv, cols[i]) ? scn_kv_get(kv, cols[i]) : i >= 6 ? "DEFAULT" : "NULL";
    exec("INSERT INTO counter_samples (device, interface, at, uptime_cs, in_octets, out_octets,"
         " in_pkts, out_pkts, speed_bps, counter_bits, discontinuity_cs)"
         " VALUES ('%s', '%s', %s, %s, %s, %s, %s, %s, %s, %s, %s)",
         kv->pos[1], kv->pos[2], at(kv->pos[3]), v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
}

static const char *names_of(const struct scn_kv *kv)
{
    static char b[800];
    /* the Kubernetes identity (sql/015) is '' outside pods, as ingest writes it */
    const char *ns = scn_kv_get(kv, "namespace"), *pod = scn_kv_get(kv, "pod"),
               *ctr = scn_kv_get(kv, "container");
    snprintf(b, sizeof b, "%s, %s, %s, %s, %s, %s", lit(scn_kv_get(kv, "user")),
             lit(scn_kv_get(kv, "program")), lit(scn_kv_get(kv, "workflow")), ns ? lit(ns) : "''",
             pod ? lit(pod) : "''", ctr ? lit(ctr) : "''");
    return b;
}

/* One report per flow (agent = host, seq in line order), pending for ClickHouse. */
static void put_flow(const struct scn_kv *kv)
{
    const char *host = scn_kv_get(kv, "host") ? scn_kv_get(kv, "host") : "unnamed";
    const char *ws = at(kv->pos[1]);
    seq++;
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows,"
         " ch_pending) VALUES ('%s', %d, '%s', %s, 60, 1, true)",
         host, seq, host, ws);
    char la[80] = "NULL", lp[16] = "NULL", ra[80] = "NULL", rp[16] = "NULL";
    const char *who = "user_name, program, workflow, namespace, pod, container_name";
    const char *names = names_of(kv);
    if (strcmp(kv->pos[2], "socket") == 0) {
        addr_port(scn_kv_get(kv, "local"), la, sizeof la, lp, sizeof lp);
        addr_port(scn_kv_get(kv, "remote"), ra, sizeof ra, rp, sizeof rp);
        exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto,"
             " local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, %s)"
             " VALUES (%s, '%s', %d, 0, '%s', 'socket', %s, %s, %s, %s, %s, %s, %s, %s, %s)",
             who, ws, host, seq, host,
             scn_kv_get(kv, "proto") ? lit(scn_kv_get(kv, "proto")) : "'tcp'", la, lp, ra, rp,
             lit(scn_kv_get(kv, "role")), scn_kv_get(kv, "tx") ? scn_kv_get(kv, "tx") : "0",
             scn_kv_get(kv, "rx") ? scn_kv_get(kv, "rx") : "0", names);
    } else {
        char sa[80], sp[16];
        if (scn_kv_get(kv, "local"))
            addr_port(scn_kv_get(kv, "local"), la, sizeof la, lp, sizeof lp);
        addr_port(scn_kv_get(kv, "server"), sa, sizeof sa, sp, sizeof sp);
        exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, local_addr,"
             " nfs_server, nfs_port, nfs_op, nfs_bytes, %s)"
             " VALUES (%s, '%s', %d, 0, '%s', 'nfs', %s, %s, %s, %s, %s, %s)",
             who, ws, host, seq, host, la, sa, sp,
             scn_kv_get(kv, "op") ? lit(scn_kv_get(kv, "op")) : "'read'",
             scn_kv_get(kv, "bytes") ? scn_kv_get(kv, "bytes") : "0", names);
    }
}

static int transfer_id;

static void put_transfer(const struct scn_kv *kv)
{
    exec("INSERT INTO transfers (service, id, requester, workflow, src, dst, bytes, start_at,"
         " end_at) VALUES (%s, 't%d', %s, %s, %s, %s, %s, %s, %s)",
         scn_kv_get(kv, "service") ? lit(scn_kv_get(kv, "service")) : "'svc'", ++transfer_id,
         lit(scn_kv_get(kv, "requester")), lit(scn_kv_get(kv, "workflow")),
         lit(scn_kv_get(kv, "src")), lit(scn_kv_get(kv, "dst")), scn_kv_get(kv, "bytes"),
         at(scn_kv_get(kv, "start")), at(scn_kv_get(kv, "end")));
}

static const char *const result_tables[] = {"heatmap_cells", "attribution_rollup", "link_windows",
                                            "dependency_rollup", "gap_alerts"};

static void reset_db(void)
{
    /* DELETE, not TRUNCATE: a few rows, and TRUNCATE locks and rewrites every partition */
    static const char *const t[] = {
        "counter_samples",    "flow_reports", "flow_packed",       "transfers",  "heatmap_cells",
        "attribution_rollup", "link_windows", "dependency_rollup", "gap_alerts", "window_state"};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        exec("DELETE FROM %s", t[i]);
    seq = transfer_id = 0;
}

/* Every result row but its ids and timestamps, sorted, as text. */
static char *snapshot(void)
{
    char *all = strdup("");
    for (size_t i = 0; i < sizeof result_tables / sizeof *result_tables; i++) {
        char sql[512];
        snprintf(sql, sizeof sql,
                 "SELECT '%s' || E':\\n' || coalesce(string_agg(t, E'\\n' ORDER BY t), '') FROM"
                 " (SELECT (SELECT jsonb_object_agg(k, v) FROM jsonb_each(to_jsonb(x)) e(k, v)"
                 "  WHERE k NOT LIKE '%%\\_at' AND k <> 'id')::text AS t FROM %s x) s",
                 result_tables[i], result_tables[i]);
        char *part = one(sql), *joined;
        assert_true(asprintf(&joined, "%s%s\n", all, part) > 0);
        free(all);
        free(part);
        all = joined;
    }
    return all;
}

static void reconcile(struct cfg *cfg, int64_t ws_s, const char *file)
{
    char err[512];
    if (cfg->clickhouse.enabled && chflush_drain(db, cfg, err, sizeof err) < 0)
        fail_msg("%s: outbox: %s", file, err);
    int rc = recon_db_reconcile_window(db, cfg, ws_s * TM_USEC_PER_SEC, NULL, err, sizeof err);
    if (rc != 0)
        fail_msg("%s: window %" PRId64 ": %d %s", file, ws_s, rc, err);
}

static void use_clickhouse(struct cfg *cfg, const char *url)
{
    /* as cfg_analytics.c would set them from an "analytics" section (cfg_free frees them) */
    cfg->clickhouse.enabled = true;
    cfg->clickhouse.url = strdup(url);
    cfg->clickhouse.database = strdup("wanledger");
    cfg->clickhouse.user = strdup("default");
    cfg->clickhouse.password = strdup(TH_CH_PASSWORD);
    cfg->clickhouse.batch_rows = 1000;
    cfg->clickhouse.timeout_ms = 10000;
}

/* Loads and reconciles one scenario file; returns the results' snapshot. */
static char *run_scenario(const char *path, bool ch, size_t *n_windows)
{
    reset_db();
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[2048], *config = NULL;
    size_t config_len = 0;
    bool in_config = false;
    struct cfg *cfg = NULL;
    *n_windows = 0;
    while (fgets(line, sizeof line, f)) {
        if (in_config) {
            if (strncmp(line, "end", 3) == 0 && (line[3] == '\n' || !line[3])) {
                in_config = false;
                continue;
            }
            size_t l = strlen(line);
            config = realloc(config, config_len + l + 1);
            memcpy(config + config_len, line, l + 1);
            config_len += l;
            continue;
        }
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || !*p)
            continue;
        if (strncmp(p, "config", 6) == 0 && (p[6] == '\n' || p[6] == ' ')) {
            in_config = true;
            continue;
        }
        if (!cfg) {
            struct cfg_errors errs = {0};
            cfg = cfg_parse(path, config ? config : default_config, &errs);
            assert_non_null(cfg);
            if (ch) {
                use_clickhouse(cfg, CH.url);
                char err[512];
                if (chstore_ensure_schema(&cfg->clickhouse, err, sizeof err) != 0)
                    fail_msg("%s", err);
            }
        }
        struct scn_kv kv;
        scn_kv_split(p, &kv);
        const char *w = kv.pos[0];
        if (strcmp(w, "sample") == 0) {
            put_sample(&kv);
        } else if (strcmp(w, "flow") == 0) {
            put_flow(&kv);
        } else if (strcmp(w, "transfer") == 0) {
            put_transfer(&kv);
        } else if (strcmp(w, "window") == 0) {
            reconcile(cfg, T0 + (int64_t)atof(kv.pos[1]), path);
            (*n_windows)++;
        } /* expectations are test_recon_core's business */
    }
    fclose(f);
    free(config);
    cfg_free(cfg);
    return snapshot();
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_paths_identical(void **state)
{
    (void)state;
    DIR *d = opendir(SCENARIO_DIR);
    assert_non_null(d);
    char *files[128];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 128;)
        if (strstr(e->d_name, ".scn"))
            files[n++] = strdup(e->d_name);
    closedir(d);
    qsort(files, n, sizeof *files, by_name);
    assert_true(n >= 20); /* the scenarios are there */
    size_t cells = 0;
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", SCENARIO_DIR, files[i]);
        size_t nw_pg, nw_ch;
        int64_t t0 = tm_mono_ns();
        char *pg = run_scenario(path, false, &nw_pg);
        int64_t t1 = tm_mono_ns();
        cells += (size_t)num("SELECT count(*) FROM heatmap_cells");
        free(th_ch_query(&CH, "DROP TABLE IF EXISTS wanledger.flow_records"));
        int64_t t2 = tm_mono_ns();
        char *ch = run_scenario(path, true, &nw_ch);
        int64_t t3 = tm_mono_ns();
        /* every pending report went through ClickHouse */
        assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE ch_pending"), 0);
        assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records FINAL"),
                         num("SELECT count(*) FROM flow_records"));
        if (strcmp(pg, ch) != 0)
            fail_msg("%s: PostgreSQL and ClickHouse paths differ:\n--- postgres\n%s\n--- "
                     "clickhouse\n%s",
                     files[i], pg, ch);
        print_message("%s: %zu window(s) identical on both paths (%.2f s, drop %.2f s, %.2f s)\n",
                      files[i], nw_pg, (t1 - t0) / 1e9, (t2 - t1) / 1e9, (t3 - t2) / 1e9);
        free(pg);
        free(ch);
        free(files[i]);
    }
    assert_true(cells > 20); /* the comparison compared something */
}

/* ---- a proxy in front of ClickHouse that swallows answers ---- */

struct proxy {
    int listen_fd, port, target_port;
    atomic_int hold;      /* answers still to swallow */
    const char *settings; /* when set, "k=v&…" put into every request's URL ("POST /?…") */
    atomic_bool stop;
    pthread_t thread;
};

/* Reads one HTTP request (headers and Content-Length body) or response (to EOF). */
static char *read_msg(int fd, size_t *len, bool request)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (n + 4096 > cap)
            b = realloc(b, cap *= 2);
        ssize_t r = recv(fd, b + n, cap - n - 1, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
        b[n] = 0;
        char *end = request ? strstr(b, "\r\n\r\n") : NULL;
        if (end) {
            char *cl = strcasestr(b, "Content-Length:");
            size_t want = (size_t)(end + 4 - b) + (cl ? strtoul(cl + 15, NULL, 10) : 0);
            if (n >= want)
                break;
        }
    }
    *len = n;
    return b;
}

static void *proxy_run(void *arg)
{
    struct proxy *px = arg;
    while (!atomic_load(&px->stop)) {
        struct pollfd pfd = {.fd = px->listen_fd, .events = POLLIN};
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        int c = accept(px->listen_fd, NULL, NULL);
        if (c < 0)
            continue;
        size_t qn, an = 0;
        char *req = read_msg(c, &qn, true), *ans = NULL;
        if (px->settings && strncmp(req, "POST / ", 7) == 0) {
            size_t sl = strlen(px->settings);
            char *nq = malloc(qn + sl + 2);
            memcpy(nq, "POST /?", 7);
            memcpy(nq + 7, px->settings, sl);
            memcpy(nq + 7 + sl, req + 6, qn - 6);
            free(req);
            req = nq;
            qn += sl + 1;
        }
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(px->target_port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (connect(s, (struct sockaddr *)&a, sizeof a) == 0 && send(s, req, qn, 0) == (ssize_t)qn)
            ans = read_msg(s, &an, false); /* ClickHouse has done the work when it answers */
        close(s);
        if (atomic_load(&px->hold) > 0) {
            atomic_fetch_sub(&px->hold, 1);
            struct timespec ts = {1, 500 * 1000000L}; /* past the client's 1 s timeout */
            nanosleep(&ts, NULL);
        } else if (ans) {
            ssize_t w = send(c, ans, an, MSG_NOSIGNAL);
            (void)w;
        }
        close(c);
        free(req);
        free(ans);
    }
    return NULL;
}

static void proxy_start(struct proxy *px, int target_port)
{
    memset(px, 0, sizeof *px);
    px->target_port = target_port;
    px->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(px->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    assert_int_equal(bind(px->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    getsockname(px->listen_fd, (struct sockaddr *)&a, &al);
    px->port = ntohs(a.sin_port);
    assert_int_equal(listen(px->listen_fd, 16), 0);
    assert_int_equal(pthread_create(&px->thread, NULL, proxy_run, px), 0);
}

static void proxy_stop(struct proxy *px)
{
    atomic_store(&px->stop, true);
    pthread_join(px->thread, NULL);
    close(px->listen_fd);
}

/* Three reports of 1,000 flows each in one window (one report per block: batch_rows 1,000);
 * the first block's answer is swallowed, so the flusher fails, leaves the reports pending and
 * sends the block again. Flow k of report r has tx_bytes 1000 * r + k. */
static void test_retry_after_timeout_not_doubled(void **state)
{
    (void)state;
    reset_db();
    free(th_ch_query(&CH, "DROP TABLE IF EXISTS wanledger.flow_records"));
    const int64_t ws = T0 + 600;
    char ts[TM_RFC3339_LEN];
    tm_format_rfc3339(ws * TM_USEC_PER_SEC, ts);
    for (int r = 1; r <= 3; r++) {
        exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows,"
             " ch_pending) VALUES ('agent-r', %d, 'nyc-gpu-1', '%s', 60, 1000, true)",
             r, ts);
        exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto,"
             " local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes,"
             " user_name) SELECT '%s', 'agent-r', %d, k, 'nyc-gpu-1', 'socket', 'tcp', '10.1.0.2',"
             " 20000 + k, '10.2.0.2', 5201, 'client', 1000 * %d + k, 0, 'alice'"
             " FROM generate_series(0, 999) k",
             ts, r, r);
    }
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("retry.json", default_config, &errs);
    assert_non_null(cfg);
    static struct proxy px; /* outlives a failed assertion's longjmp */
    proxy_start(&px, CH.http_port);
    char url[64], err[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", px.port);
    use_clickhouse(cfg, url);
    cfg->clickhouse.timeout_ms = 1000;
    if (chstore_ensure_schema(&cfg->clickhouse, err, sizeof err) != 0)
        fail_msg("%s", err);
    atomic_store(&px.hold, 1);
    struct chflush_batch b;
    assert_int_equal(chflush_once(db, cfg, &b, err, sizeof err), -1); /* timed out */
    print_message("first insert: %s\n", err);
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE ch_pending"), 3);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records"), 1000);
    cfg->clickhouse.timeout_ms = 10000; /* the retry waits as long as it takes (the proxy */
    if (chflush_drain(db, cfg, err, sizeof err) != 0) /* may still be holding the old answer) */
        fail_msg("retry: %s", err);
    assert_int_equal(num("SELECT count(*) FROM flow_reports WHERE ch_pending"), 0);
    /* the block is stored twice (unless a merge already collapsed it) ... */
    long long raw = th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records");
    assert_true(raw == 4000 || raw == 3000);
    /* ... and read once: 3,000 flows, tx = sum over r, k of 1000 r + k
     * = 1000 x 1000 x (1 + 2 + 3) + 3 x (999 x 1000 / 2) = 6,000,000 + 1,498,500 */
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records FINAL"), 3000);
    assert_int_equal(th_ch_num(&CH, "SELECT sum(tx_bytes) FROM wanledger.flow_records FINAL"),
                     7498500);
    /* and the reconciler's per-connection sums see every flow once */
    char *pg_cells, *ch_cells;
    struct cfg *pg_cfg = cfg_parse("retry.json", default_config, &errs);
    assert_int_equal(
        recon_db_reconcile_window(db, pg_cfg, ws * TM_USEC_PER_SEC, NULL, err, sizeof err), 0);
    pg_cells = snapshot();
    atomic_store(&px.hold, 0);
    assert_int_equal(
        recon_db_reconcile_window(db, cfg, ws * TM_USEC_PER_SEC, NULL, err, sizeof err), 0);
    ch_cells = snapshot();
    assert_string_equal(pg_cells, ch_cells);
    assert_non_null(strstr(pg_cells, "\"attributed_bytes\": 7498500"));
    free(pg_cells);
    free(ch_cells);
    proxy_stop(&px);
    cfg_free(cfg);
    cfg_free(pg_cfg);
}

/* An exception after ClickHouse's 200: 18.16 writes it into the answer once ~1 MiB of rows went
 * out (here: a row limit hit at the 13th block of 1,000 rows, through a proxy that adds the limit
 * to every request). The window's load must fail, naming the line, and write nothing; read again
 * without the limit, it is the PostgreSQL path's. */
static void test_exception_inside_the_answer(void **state)
{
    (void)state;
    reset_db();
    free(th_ch_query(&CH, "DROP TABLE IF EXISTS wanledger.flow_records"));
    const int64_t ws = T0 + 900;
    char ts[TM_RFC3339_LEN];
    tm_format_rfc3339(ws * TM_USEC_PER_SEC, ts);
    for (int r = 1; r <= 14; r++) { /* 14,000 flows: 14 blocks, past the limit at the 13th */
        exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows,"
             " ch_pending) VALUES ('agent-x', %d, 'nyc-gpu-1', '%s', 60, 1000, true)",
             r, ts);
        exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto,"
             " local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes,"
             " user_name) SELECT '%s', 'agent-x', %d, k, 'nyc-gpu-1', 'socket', 'tcp', '10.1.0.2',"
             " 20000 + k, ('10.2.0.' || (1 + %d))::inet, 5201, 'client', 100 * %d + k, 0, 'alice'"
             " FROM generate_series(0, 999) k",
             ts, r, r, r);
    }
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("exc.json", default_config, &errs);
    struct cfg *pg_cfg = cfg_parse("exc.json", default_config, &errs);
    assert_non_null(cfg);
    assert_non_null(pg_cfg);
    char err[512];
    static struct proxy px; /* outlives a failed assertion's longjmp */
    proxy_start(&px, CH.http_port);
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d", px.port);
    use_clickhouse(cfg, url);
    if (chstore_ensure_schema(&cfg->clickhouse, err, sizeof err) != 0 ||
        chflush_drain(db, cfg, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records"), 14000);
    px.settings = "max_result_rows=12000&result_overflow_mode=throw&max_block_size=1000";
    assert_int_equal(
        recon_db_reconcile_window(db, cfg, ws * TM_USEC_PER_SEC, NULL, err, sizeof err), -1);
    print_message("with the limit: %s\n", err);
    /* the row after the rows sent: 12,001 while each block is one insert's 1,000 rows */
    assert_non_null(strstr(err, "row 12001 of the answer is not a flow record"));
    assert_non_null(strstr(err, "Limit for result exceeded"));
    assert_int_equal(num("SELECT count(*) FROM heatmap_cells"), 0);
    assert_int_equal(num("SELECT count(*) FROM attribution_rollup"), 0);
    assert_int_equal(num("SELECT count(*) FROM dependency_rollup"), 0);
    px.settings = NULL;
    assert_int_equal(
        recon_db_reconcile_window(db, cfg, ws * TM_USEC_PER_SEC, NULL, err, sizeof err), 0);
    char *ch_cells = snapshot();
    /* the PostgreSQL path over the same rows rewrites whatever differs: nothing may */
    assert_int_equal(
        recon_db_reconcile_window(db, pg_cfg, ws * TM_USEC_PER_SEC, NULL, err, sizeof err), 0);
    char *pg_cells = snapshot();
    assert_string_equal(pg_cells, ch_cells);
    /* 14 reports x 1,000 flows, tx 100 r + k: 100 x 1000 x 105 + 14 x 499,500 */
    assert_non_null(strstr(pg_cells, "\"attributed_bytes\": 17493000"));
    free(pg_cells);
    free(ch_cells);
    proxy_stop(&px);
    cfg_free(cfg);
    cfg_free(pg_cfg);
}

/* Strings and NULLs as RowBinary carries them (recon_db_ch.c reads the answer by its ClickHouse
 * types): a user name of 20,000 bytes (a 3-byte LEB128 length), a workflow of 300 with a tab, a
 * backslash, a newline and UTF-8, a program that is empty; an NFS flow (its socket ports NULL)
 * and a socket flow without a role (NULL). The window reconciled from ClickHouse and, its
 * results deleted, from PostgreSQL's own rows: the same rows, and the odd names are in them. */
static void test_strings_and_nulls_read_back(void **state)
{
    (void)state;
    reset_db();
    free(th_ch_query(&CH, "DROP TABLE IF EXISTS wanledger.flow_records"));
    const int64_t ws = T0 + 1200;
    char ts[TM_RFC3339_LEN];
    tm_format_rfc3339(ws * TM_USEC_PER_SEC, ts);
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows,"
         " ch_pending) VALUES ('agent-s', 1, 'nyc-gpu-1', '%s', 60, 3, true)",
         ts);
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto,"
         " local_addr, local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, user_name,"
         " workflow, program) VALUES"
         " ('%s', 'agent-s', 1, 0, 'nyc-gpu-1', 'socket', 'tcp', '10.1.0.2', 40000, '10.2.0.2',"
         " 5201, 'client', 7000, 0, repeat('u', 20000),"
         " repeat('w', 290) || E'\\t\\\\\\n' || 'café', ''),"
         " ('%s', 'agent-s', 1, 1, 'nyc-gpu-1', 'socket', 'udp', '10.1.0.2', 40001, '10.2.0.3',"
         " 53, NULL, 300, 0, 'bob', NULL, 'dig')",
         ts, ts);
    exec("INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, local_addr,"
         " nfs_server, nfs_port, nfs_export, nfs_op, nfs_bytes, user_name, program) VALUES"
         " ('%s', 'agent-s', 1, 2, 'nyc-gpu-1', 'nfs', '10.1.0.2', '10.2.0.9', 2049, '/export',"
         " 'write', 5000, 'carol', 'cp')",
         ts);
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("strings.json", default_config, &errs);
    struct cfg *pg_cfg = cfg_parse("strings.json", default_config, &errs);
    assert_non_null(cfg);
    assert_non_null(pg_cfg);
    use_clickhouse(cfg, CH.url);
    char err[512];
    if (chstore_ensure_schema(&cfg->clickhouse, err, sizeof err) != 0 ||
        chflush_drain(db, cfg, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records WHERE"
                                    " length(user_name) = 20000"),
                     1);
    reconcile(cfg, ws, "strings");
    char *ch_rows = snapshot();
    for (size_t i = 0; i < sizeof result_tables / sizeof *result_tables; i++)
        exec("DELETE FROM %s", result_tables[i]);
    reconcile(pg_cfg, ws, "strings");
    char *pg_rows = snapshot();
    assert_string_equal(pg_rows, ch_rows);
    /* the owners as read back: the long name, the odd workflow, the NFS flow's and the
     * role-less flow's users */
    char *owners = one("SELECT string_agg(concat_ws(',', length(user_name), workflow = repeat('w',"
                       " 290) || E'\\t\\\\\\n' || 'café', program, bytes), ';' ORDER BY bytes) FROM"
                       " attribution_rollup");
    print_message("owners: %s\n", owners);
    assert_string_equal(owners, "3,f,dig,300;5,f,cp,5000;20000,t,,7000");
    free(owners);
    free(pg_rows);
    free(ch_rows);
    cfg_free(cfg);
    cfg_free(pg_cfg);
}

/* Retention without TTL: a day partition older than retention.raw_days is dropped whole, a
 * recent one stays. */
static void test_prune_drops_old_days(void **state)
{
    (void)state;
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("prune.json", default_config, &errs);
    assert_non_null(cfg);
    use_clickhouse(cfg, CH.url);
    char err[512], sql[512];
    free(th_ch_query(&CH, "DROP TABLE IF EXISTS wanledger.flow_records"));
    assert_int_equal(chstore_ensure_schema(&cfg->clickhouse, err, sizeof err), 0);
    int64_t now = tm_now_us() / TM_USEC_PER_SEC;
    snprintf(sql, sizeof sql,
             "INSERT INTO wanledger.flow_records (window_start, agent_id, seq, idx, host, source)"
             " VALUES (toDateTime(%" PRId64 "), 'a', 1, 0, 'h', 'socket'),"
             " (toDateTime(%" PRId64 "), 'a', 2, 0, 'h', 'socket')",
             now - 40 * 86400, now - 3600);
    char *v = th_ch_query(&CH, sql);
    assert_non_null(v);
    free(v);
    int dropped = -1;
    assert_int_equal(chstore_prune(&cfg->clickhouse, 30, tm_now_us(), &dropped, err, sizeof err),
                     0);
    assert_int_equal(dropped, 1);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records"), 1);
    assert_int_equal(th_ch_num(&CH, "SELECT max(seq) FROM wanledger.flow_records"), 2);
    cfg_free(cfg);
}

/* A table created before sql/015 (no Kubernetes columns) gets them from chstore_ensure_schema;
 * its old rows read ''; a second run changes nothing. */
static void test_schema_upgrade_adds_kube_columns(void **state)
{
    (void)state;
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("upgrade.json", default_config, &errs);
    assert_non_null(cfg);
    use_clickhouse(cfg, CH.url);
    char err[512], cols[2048], sql[2600];
    free(th_ch_query(&CH, "DROP TABLE IF EXISTS wanledger.flow_records"));
    assert_true(flow_row_list(cols, sizeof cols, FRL_CH_DEFS, (UINT64_C(1) << FR_NAMESPACE) - 1,
                              NULL, NULL) > 0);
    snprintf(sql, sizeof sql,
             "CREATE TABLE wanledger.flow_records (%s) ENGINE = ReplacingMergeTree"
             " PARTITION BY toYYYYMMDD(window_start) ORDER BY (window_start, agent_id, seq, idx)",
             cols);
    char *v = th_ch_query(&CH, sql);
    assert_non_null(v);
    free(v);
    v = th_ch_query(&CH, "INSERT INTO wanledger.flow_records (window_start, agent_id, seq, idx,"
                         " host, source) VALUES (toDateTime(1700000000), 'a', 1, 0, 'h', 'nfs')");
    assert_non_null(v);
    free(v);
    for (int run = 0; run < 2; run++)
        assert_int_equal(chstore_ensure_schema(&cfg->clickhouse, err, sizeof err), 0);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM system.columns WHERE database ="
                                    " 'wanledger' AND table = 'flow_records' AND type = 'String'"
                                    " AND name IN ('namespace', 'pod', 'container_name')"),
                     3);
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records WHERE"
                                    " namespace = '' AND pod = '' AND container_name = ''"),
                     1);
    cfg_free(cfg);
}

static int setup(void **state)
{
    (void)state;
    const char *ci = th_pg_default();
    char err[512];
    db = db_connect_str(ci, err, sizeof err);
    assert_non_null(db);
    th_ch_start(&CH, NULL);
    if (db_ensure_partitions(db, (T0 - 86400) * TM_USEC_PER_SEC, (T0 + 86400) * TM_USEC_PER_SEC,
                             err, sizeof err))
        fail_msg("%s", err);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    th_ch_stop(&CH);
    PQfinish(db);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths_identical),
        cmocka_unit_test(test_retry_after_timeout_not_doubled),
        cmocka_unit_test(test_exception_inside_the_answer),
        cmocka_unit_test(test_strings_and_nulls_read_back),
        cmocka_unit_test(test_prune_drops_old_days),
        cmocka_unit_test(test_schema_upgrade_adds_kube_columns),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
