/* The NAS view (docs/design.md "NAS view") against the real reconciler and PostgreSQL:
 * - reports made by the agent's own encoder (agentlib/report.c) with hand-built NFS records,
 *   each carrying a log-linear histogram of latencies the test drew itself, are stored once in
 *   nas_windows; GET /api/v1/nas gives per instance, per operation, per owner and per window
 *   IOPS and throughput equal to the test's own sums over the span, and p50/p99/p999/max equal
 *   to the test's quantiles of the raw latencies within the bucket error (true <= reported <=
 *   true * 17/16, or true + 1 below 16 us), with the sample count;
 * - a resent report changes nothing (same answer byte for byte, same table);
 * - a report with a malformed latency histogram is refused (422 naming the member), nothing of
 *   it stored;
 * - /heatmap/nas (reader token) parsed by xmllint: the busiest pod first, its p99 the API's;
 *   after `reconcile --once` the cell page of chi -> nyc (the reads: client 10.1.0.7 in nyc)
 *   links the NAS view over its window.
 *
 * Windows W0 = 3 windows ago and W1 = 4 windows ago, 60 s each. Filer 10.2.0.50:2049 /data:
 *   host k8s-a, pod ml/train-7f9c/trainer, workflow train-42, alice, python3: W0 reads 3000
 *     (two processes, 1800 + 1200: one row), writes 400 with 9 errors; W1 reads 500;
 *   host k8s-b, pod etl/ingest-0/loader, workflow etl-nightly, bob, rsync: W0 reads 1500
 *     (another agent: its histogram merges with the first's);
 *   on k8s-a outside any pod, workflow backup, root, tar: W0 writes 250, no latency kept.
 * Filer 10.2.0.51:2049 /scratch: k8s-b's loader, W0 reads 100. */
#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "fixture.h"
#include "flowset.h"
#include "harness.h"
#include "hm_seed.h"
#include "llhist.h"
#include "report.h"
#include "timeutil.h"

static struct fx F;

/* The raw latencies (us) the test drew, per owner and window, to check against. */
struct lat_set {
    uint64_t *v;
    size_t n, cap;
};

static void lat_add(struct lat_set *s, uint64_t v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1024;
        s->v = realloc(s->v, s->cap * sizeof(*s->v));
        assert_non_null(s->v);
    }
    s->v[s->n++] = v;
}

static void lat_join(struct lat_set *dst, const struct lat_set *src)
{
    for (size_t i = 0; i < src->n; i++)
        lat_add(dst, src->v[i]);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The value of rank ceil(q * n) (1-based) of the raw latencies, sorted here. */
static uint64_t true_quantile(struct lat_set *s, double q)
{
    qsort(s->v, s->n, sizeof(*s->v), cmp_u64);
    size_t rank = (size_t)ceil(q * (double)s->n);
    if (rank < 1)
        rank = 1;
    return s->v[rank - 1];
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;
static double rnd01(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* n latencies log-uniform in [lo, hi) us, plus a slow tail: 1% at 20-120 x lo. */
static void draw(struct lat_set *s, struct llhist *h, size_t n, double lo, double hi)
{
    for (size_t i = 0; i < n; i++) {
        double v = lo * pow(hi / lo, rnd01());
        if (rnd01() < 0.01)
            v = lo * (20 + 100 * rnd01());
        uint64_t us = (uint64_t)v;
        lat_add(s, us);
        llhist_record(h, us, 1);
    }
}

static struct flow_meta POD_A, POD_B, BARE;

static void meta(struct flow_meta *m, const char *user, const char *wf, const char *ns,
                 const char *pod, const char *container)
{
    memset(m, 0, sizeof(*m));
    snprintf(m->user, sizeof m->user, "%s", user);
    snprintf(m->workflow, sizeof m->workflow, "%s", wf);
    snprintf(m->kube.namespace_, sizeof m->kube.namespace_, "%s", ns);
    snprintf(m->kube.pod, sizeof m->kube.pod, "%s", pod);
    snprintf(m->kube.container, sizeof m->kube.container, "%s", container);
}

static struct flow_rec *nfs(struct flowset *fs, const char *server, const char *export_path,
                            const char *op, const char *comm, uint32_t pid, uint64_t ops,
                            const struct llhist *lat, uint64_t errors, const struct flow_meta *m)
{
    struct flow_rec *r = flowset_add(fs);
    assert_non_null(r);
    r->source = FLOW_SRC_NFS;
    snprintf(r->server, sizeof r->server, "%s", server);
    snprintf(r->export_path, sizeof r->export_path, "%s", export_path);
    snprintf(r->op, sizeof r->op, "%s", op);
    r->ops = ops;
    r->bytes = (ops - errors) * 65536;
    r->latency = lat;
    r->errors = errors;
    r->owner.pid = pid;
    snprintf(r->owner.comm, sizeof r->owner.comm, "%s", comm);
    r->meta = m;
    r->family = AF_INET; /* the client, in nyc (fixture.h): the reads load chi -> nyc */
    assert_int_equal(inet_pton(AF_INET, "10.1.0.7", r->laddr), 1);
    return r;
}

static char *encode(const char *host, const char *agent, uint64_t seq, int64_t ws,
                    const struct flowset *fs)
{
    struct report_header h = {.host = host,
                              .agent_id = agent,
                              .seq = seq,
                              .window_start_us = ws,
                              .window_seconds = 60,
                              .k = 1000,
                              .flows_seen = fs->n};
    char err[256];
    char *json = report_json(&h, fs, err, sizeof err);
    if (!json)
        fail_msg("report_json: %s", err);
    return json;
}

static int post(const char *body, char **resp)
{
    return fx_http(&F, "POST", "/v1/attributions", FX_TOKEN_AGENT, NULL, body, strlen(body), resp);
}

static void post_ok(const char *body, const char *want)
{
    char *resp = NULL;
    int st = post(body, &resp);
    if (st != 200 || !strstr(resp, want))
        fail_msg("POST: %d %s (wanted %s)", st, resp ? resp : "", want);
    free(resp);
}

/* Expected figures, from the test's own sums and raw latencies. */
struct want {
    uint64_t ops, bytes, errors, errors_of_ops;
    struct lat_set lat;
};

static void want_add(struct want *w, uint64_t ops, uint64_t errors, bool detail,
                     const struct lat_set *lat)
{
    w->ops += ops;
    w->bytes += (ops - errors) * 65536;
    w->errors += errors;
    w->errors_of_ops += detail ? ops : 0;
    if (lat)
        lat_join(&w->lat, lat);
}

static uint64_t num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        fail_msg("member %s is not a number", k);
    return (uint64_t)v->valuedouble;
}

/* The reported quantile lies in the bucket of the true one: true < reported <= true * 17/16
 * (true + 1 below 16 us, where buckets are 1 us wide). */
static double worst_rel_error; /* the largest (reported - true) / true seen, printed at the end */
static int n_quantiles;

static void check_quantile(const char *what, const cJSON *lat, const char *key, uint64_t truth)
{
    uint64_t got = num(lat, key);
    double rel = truth ? (double)(got - truth) / (double)truth : 0;
    worst_rel_error = rel > worst_rel_error ? rel : worst_rel_error;
    n_quantiles++;
    uint64_t hi = truth < 16 ? truth + 1 : truth + truth / 16;
    if (got <= truth || got > hi)
        fail_msg("%s %s: reported %llu us, true %llu us (bucket error allows (%llu, %llu])", what,
                 key, (unsigned long long)got, (unsigned long long)truth, (unsigned long long)truth,
                 (unsigned long long)hi);
}

static void check_figures(const char *what, const cJSON *o, struct want *w, int64_t seconds)
{
    assert_int_equal(num(o, "ops"), w->ops);
    assert_int_equal(num(o, "bytes"), w->bytes);
    assert_int_equal(num(o, "errors"), w->errors);
    assert_int_equal(num(o, "errors_of_ops"), w->errors_of_ops);
    double iops = cJSON_GetObjectItem(o, "iops")->valuedouble;
    double bps = cJSON_GetObjectItem(o, "bytes_per_second")->valuedouble;
    assert_true(fabs(iops - (double)w->ops / (double)seconds) < 1e-9 * (1 + iops));
    assert_true(fabs(bps - (double)w->bytes / (double)seconds) < 1e-9 * (1 + bps));
    const cJSON *lat = cJSON_GetObjectItem(o, "latency_us");
    assert_non_null(lat);
    assert_int_equal(num(lat, "count"), w->lat.n);
    if (w->lat.n == 0) {
        assert_true(cJSON_IsNull(cJSON_GetObjectItem(lat, "p99")));
        return;
    }
    check_quantile(what, lat, "p50", true_quantile(&w->lat, 0.5));
    check_quantile(what, lat, "p99", true_quantile(&w->lat, 0.99));
    check_quantile(what, lat, "p999", true_quantile(&w->lat, 0.999));
    check_quantile(what, lat, "max", true_quantile(&w->lat, 1.0));
}

static const cJSON *find(const cJSON *arr, const char *k1, const char *v1, const char *k2,
                         const char *v2)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, arr)
    {
        const cJSON *a = cJSON_GetObjectItem(e, k1), *b = k2 ? cJSON_GetObjectItem(e, k2) : NULL;
        if (cJSON_IsString(a) && strcmp(a->valuestring, v1) == 0 &&
            (!k2 || (cJSON_IsString(b) && strcmp(b->valuestring, v2) == 0)))
            return e;
    }
    fail_msg("no element with %s=%s", k1, v1);
    return NULL;
}

static int setup(void **state)
{
    (void)state;
    th_require(access("/usr/bin/xmllint", X_OK) == 0, "xmllint (libxml2-utils) is not installed");
    th_require(access("/usr/bin/chromium", X_OK) == 0, "Debian's chromium is not installed");
    fx_setup(&F, "nas", " \"open_on_loopback\": true,"); /* Chromium sends no token */
    fx_start(&F);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fx_stop(&F);
    return 0;
}

static char *get(const char *path, const char *token, int want_status)
{
    char *resp = NULL;
    int st = fx_http(&F, "GET", path, token, NULL, NULL, 0, &resp);
    if (st != want_status)
        fail_msg("GET %s: %d %s", path, st, resp ? resp : "");
    return resp;
}

static void test_nas_view(void **state)
{
    (void)state;
    int64_t w0 = fx_window_ago(3, 60), w1 = fx_window_ago(4, 60);
    meta(&POD_A, "alice", "train-42", "ml", "train-7f9c", "trainer");
    meta(&POD_B, "bob", "etl-nightly", "etl", "ingest-0", "loader");
    meta(&BARE, "root", "backup", "", "", "");

    static struct llhist h_a1, h_a2, h_aw, h_a_w1, h_b, h_s;
    struct lat_set a_read0 = {0}, a_write0 = {0}, a_read1 = {0}, b_read0 = {0}, s_read0 = {0};
    draw(&a_read0, &h_a1, 1800, 150, 4000);
    draw(&a_read0, &h_a2, 1200, 150, 4000);
    draw(&a_write0, &h_aw, 400, 600, 30000);
    draw(&a_read1, &h_a_w1, 500, 150, 4000);
    draw(&b_read0, &h_b, 1500, 2000, 90000); /* the slow pod */
    draw(&s_read0, &h_s, 100, 40, 900);

    struct flowset fa0 = {0}, fa1 = {0}, fb0 = {0};
    nfs(&fa0, "10.2.0.50:2049", "/data", "read", "python3", 4001, 1800, &h_a1, 0, &POD_A);
    nfs(&fa0, "10.2.0.50:2049", "/data", "read", "python3", 4002, 1200, &h_a2, 0, &POD_A);
    nfs(&fa0, "10.2.0.50:2049", "/data", "write", "python3", 4001, 400, &h_aw, 9, &POD_A);
    nfs(&fa0, "10.2.0.50:2049", "/data", "write", "tar", 77, 250, NULL, 0, &BARE);
    nfs(&fa1, "10.2.0.50:2049", "/data", "read", "python3", 4001, 500, &h_a_w1, 0, &POD_A);
    nfs(&fb0, "10.2.0.50:2049", "/data", "read", "rsync", 5001, 1500, &h_b, 0, &POD_B);
    nfs(&fb0, "10.2.0.51:2049", "/scratch", "read", "rsync", 5001, 100, &h_s, 0, &POD_B);
    char *ra0 = encode("k8s-a", "agent-a", 7, w0, &fa0);
    char *ra1 = encode("k8s-a", "agent-a", 6, w1, &fa1);
    char *rb0 = encode("k8s-b", "agent-b", 3, w0, &fb0);
    post_ok(ra0, "\"stored\":4");
    post_ok(ra1, "\"stored\":1");
    post_ok(rb0, "\"stored\":2");

    /* expected, from the test's own sums */
    struct want data = {0}, data_read = {0}, data_write = {0}, pod_a = {0}, pod_b = {0}, bare = {0},
                data_w0 = {0}, data_w1 = {0}, scratch = {0};
    want_add(&data, 3000, 0, true, &a_read0);
    want_add(&data, 400, 9, true, &a_write0);
    want_add(&data, 250, 0, false, NULL);
    want_add(&data, 500, 0, true, &a_read1);
    want_add(&data, 1500, 0, true, &b_read0);
    want_add(&data_read, 3000, 0, true, &a_read0);
    want_add(&data_read, 500, 0, true, &a_read1);
    want_add(&data_read, 1500, 0, true, &b_read0);
    want_add(&data_write, 400, 9, true, &a_write0);
    want_add(&data_write, 250, 0, false, NULL);
    want_add(&pod_a, 3000, 0, true, &a_read0);
    want_add(&pod_a, 400, 9, true, &a_write0);
    want_add(&pod_a, 500, 0, true, &a_read1);
    want_add(&pod_b, 1500, 0, true, &b_read0);
    want_add(&bare, 250, 0, false, NULL);
    want_add(&data_w0, 3000, 0, true, &a_read0);
    want_add(&data_w0, 400, 9, true, &a_write0);
    want_add(&data_w0, 250, 0, false, NULL);
    want_add(&data_w0, 1500, 0, true, &b_read0);
    want_add(&data_w1, 500, 0, true, &a_read1);
    want_add(&scratch, 100, 0, true, &s_read0);

    /* the span: window starts in [w1, w0 + 60 s) = 2 windows = 120 s */
    char *path = fx_fmt("/api/v1/nas?from=%s&to=%s", fx_ts(w1), fx_ts(w0 + 60 * TM_USEC_PER_SEC));
    char *all = get(path, FX_TOKEN_READER, 200);
    cJSON *doc = cJSON_Parse(all);
    assert_non_null(doc);
    assert_int_equal(num(doc, "span_seconds"), 120);
    const cJSON *insts = cJSON_GetObjectItem(doc, "instances");
    assert_int_equal(cJSON_GetArraySize(insts), 2);
    const cJSON *d = cJSON_GetArrayItem(insts, 0); /* the busiest first */
    assert_string_equal(cJSON_GetObjectItem(d, "server")->valuestring, "10.2.0.50");
    assert_string_equal(cJSON_GetObjectItem(d, "export")->valuestring, "/data");
    assert_int_equal(num(d, "port"), 2049);
    check_figures("/data", d, &data, 120);
    const cJSON *by_op = cJSON_GetObjectItem(d, "by_op");
    check_figures("/data read", find(by_op, "op", "read", NULL, NULL), &data_read, 120);
    check_figures("/data write", find(by_op, "op", "write", NULL, NULL), &data_write, 120);
    const cJSON *owners = cJSON_GetObjectItem(d, "owners");
    assert_int_equal(cJSON_GetArraySize(owners), 3);
    assert_int_equal(num(d, "owners_total"), 3);
    const cJSON *oa = cJSON_GetArrayItem(owners, 0); /* by ops: pod A */
    assert_string_equal(cJSON_GetObjectItem(oa, "pod")->valuestring, "train-7f9c");
    assert_string_equal(cJSON_GetObjectItem(oa, "namespace")->valuestring, "ml");
    assert_string_equal(cJSON_GetObjectItem(oa, "container")->valuestring, "trainer");
    assert_string_equal(cJSON_GetObjectItem(oa, "workflow")->valuestring, "train-42");
    assert_string_equal(cJSON_GetObjectItem(oa, "user")->valuestring, "alice");
    assert_string_equal(cJSON_GetObjectItem(oa, "host")->valuestring, "k8s-a");
    check_figures("pod A", oa, &pod_a, 120);
    check_figures("pod B", find(owners, "pod", "ingest-0", NULL, NULL), &pod_b, 120);
    const cJSON *ob = find(owners, "workflow", "backup", NULL, NULL);
    assert_string_equal(cJSON_GetObjectItem(ob, "pod")->valuestring, "");
    check_figures("bare", ob, &bare, 120);
    const cJSON *wins = cJSON_GetObjectItem(d, "windows");
    assert_int_equal(cJSON_GetArraySize(wins), 2);
    check_figures("/data W0", find(wins, "window_start", fx_ts(w0), NULL, NULL), &data_w0, 60);
    check_figures("/data W1", find(wins, "window_start", fx_ts(w1), NULL, NULL), &data_w1, 60);
    check_figures("/scratch", cJSON_GetArrayItem(insts, 1), &scratch, 120);
    /* the slow pod's p99 is far above the fast one's: the view tells them apart */
    assert_true(num(cJSON_GetObjectItem(find(owners, "pod", "ingest-0", NULL, NULL), "latency_us"),
                    "p99") > num(cJSON_GetObjectItem(oa, "latency_us"), "p99"));

    printf("NAS quantiles: %d checked (p50/p99/p999/max of 8 sets of 100-5,400 samples), "
           "largest error %.2f %% above the true value (bucket bound 6.25 %%)\n",
           n_quantiles, 100 * worst_rel_error);
    /* one instance by server and export */
    char *one_path = fx_fmt("/api/v1/nas?server=10.2.0.51&export=/scratch&from=%s&to=%s", fx_ts(w1),
                            fx_ts(w0 + 60 * TM_USEC_PER_SEC));
    char *one = get(one_path, FX_TOKEN_READER, 200);
    cJSON *od = cJSON_Parse(one);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(od, "instances")), 1);
    cJSON_Delete(od);
    free(one);

    /* resends: duplicates, nothing changes */
    long long rows = fx_num(&F, "SELECT count(*) FROM nas_windows");
    long long ops = fx_num(&F, "SELECT sum(ops) FROM nas_windows");
    post_ok(ra0, "\"duplicate\":4");
    post_ok(rb0, "\"duplicate\":2");
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM nas_windows"), rows);
    assert_int_equal(fx_num(&F, "SELECT sum(ops) FROM nas_windows"), ops);
    assert_int_equal(ops, 3000 + 400 + 250 + 500 + 1500 + 100);
    char *again = get(path, FX_TOKEN_READER, 200);
    assert_string_equal(again, all);
    free(again);

    /* the page: the busiest pod first, with the p99 the API gives */
    char *page_path = fx_fmt("/heatmap/nas?server=10.2.0.50&export=/data&from=%s&to=%s", fx_ts(w1),
                             fx_ts(w0 + 60 * TM_USEC_PER_SEC));
    free(get(path, FX_TOKEN_AGENT, 403)); /* the API: reader role only, also from loopback */
    free(get(path, NULL, 401));
    char *page = get(page_path, FX_TOKEN_READER, 200);
    const char *dir = th_tmpdir("nas-page");
    char *file = fx_fmt("%s/nas.html", dir);
    FILE *fp = fopen(file, "w");
    assert_non_null(fp);
    fputs(page, fp);
    fclose(fp);
    char *out = fx_fmt("%s/xpath.txt", dir);
    assert_int_equal(th_sh("xmllint --html --xpath \"concat(count(//table[@class='nas-owners']"
                           "//tr[@class='owner']),'|',string(//table[@class='nas-owners']//"
                           "tr[@class='owner'][1]/td[2]),'|',string(//table[@class='nas-owners']"
                           "//tr[@class='owner'][1]/td[contains(@class,'lat')]/@data-p99-us))\" "
                           "'%s' > '%s' 2>/dev/null",
                           file, out),
                     0);
    fp = fopen(out, "r");
    char got[256] = {0};
    assert_non_null(fgets(got, sizeof got, fp));
    fclose(fp);
    got[strcspn(got, "\n")] = 0;
    char want_line[256];
    snprintf(want_line, sizeof want_line, "3|train-7f9c|%llu",
             (unsigned long long)num(cJSON_GetObjectItem(oa, "latency_us"), "p99"));
    assert_string_equal(got, want_line);
    /* in headless Chromium (as the other pages are loaded, tests/heatmap/hm_seed.c): the owners
     * table rendered with both pods, no script */
    char *url = fx_fmt("http://127.0.0.1:%d%s", F.port, page_path);
    char *png = fx_fmt("%s/nas-page.png", hm_test_artifacts());
    char *dom = fx_fmt("%s/nas-page.dom.html", hm_test_artifacts());
    hm_test_chromium(url, png, dom, 1400, 1200);
    char *html = hm_test_slurp(dom, NULL);
    assert_non_null(html);
    assert_int_equal(hm_test_count(html, "<tr class=\"owner\">"), 3);
    assert_non_null(strstr(html, "<td>train-7f9c</td>"));
    assert_non_null(strstr(html, "<td>ingest-0</td>"));
    assert_null(strstr(html, "<script"));
    free(html);
    free(url);
    free(png);
    free(dom);
    /* every instance is listed without a filter */
    char *list = get("/heatmap/nas", FX_TOKEN_READER, 200);
    assert_non_null(strstr(list, "Which pods and workflows load"));
    assert_non_null(strstr(list, "href=\"nas?server=10.2.0.50&amp;export=%2Fdata&amp;from="));
    free(list);
    free(get("/api/v1/nas?server=not-an-address", FX_TOKEN_READER, 400));

    /* `wanledger nas`: the same JSON as the API, and the owners as text for a terminal */
    char *cli = NULL, *args = fx_fmt("nas --from %s --to %s --json", fx_ts(w1),
                                     fx_ts(w0 + 60 * TM_USEC_PER_SEC));
    assert_int_equal(fx_run(&F, args, &cli), 0);
    assert_string_equal(cli, all);
    free(cli);
    free(args);
    args = fx_fmt("nas --server 10.2.0.50 --export /data --from %s --to %s", fx_ts(w1),
                  fx_ts(w0 + 60 * TM_USEC_PER_SEC));
    assert_int_equal(fx_run(&F, args, &cli), 0);
    if (!strstr(cli, "ml/train-7f9c/trainer train-42 alice python3 @k8s-a") ||
        !strstr(cli, "(no pod) backup root tar @k8s-a") || strstr(cli, "/scratch"))
        fail_msg("wanledger nas printed:\n%s", cli);
    free(cli);
    free(args);
    assert_int_equal(fx_run(&F, "nas --server nope", NULL), 2);

    /* the cell page of a pair with NFS bytes links the NAS view over the same windows */
    char *rec = NULL;
    assert_int_equal(fx_run(&F, "reconcile --once", &rec), 0);
    free(rec);
    char *cell_path = fx_fmt("/heatmap/cell?src=chi&dst=nyc&window=%s", fx_ts(w0));
    char *cell = get(cell_path, FX_TOKEN_READER, 200);
    char *link =
        fx_fmt("<a href=\"nas?from=%s&amp;to=%s\">", fx_ts(w0), fx_ts(w0 + 60 * TM_USEC_PER_SEC));
    if (!strstr(cell, link))
        fail_msg("the cell page lacks %s", link);
    free(link);
    free(cell);
    free(cell_path);

    cJSON_Delete(doc);
    free(all);
    free(path);
    free(one_path);
    free(page_path);
    free(page);
    free(file);
    free(out);
    free(ra0);
    free(ra1);
    free(rb0);
    flowset_free(&fa0);
    flowset_free(&fa1);
    flowset_free(&fb0);
    struct lat_set *sets[] = {&a_read0,  &a_write0,      &a_read1,        &b_read0,    &s_read0,
                              &data.lat, &data_read.lat, &data_write.lat, &pod_a.lat,  &pod_b.lat,
                              &bare.lat, &data_w0.lat,   &data_w1.lat,    &scratch.lat};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        free(sets[i]->v);
}

/* A histogram that is not one: refused whole, with the member's path; nothing stored. */
static void test_nas_bad_latency(void **state)
{
    (void)state;
    int64_t ws = fx_window_ago(5, 60);
    long long reports = fx_num(&F, "SELECT count(*) FROM flow_reports");
    long long rows = fx_num(&F, "SELECT count(*) FROM nas_windows");
    static const char *const cases[][2] = {
        /* 33 us is inside the bucket [32, 34) */
        {"{\"count\":1,\"buckets\":[[33,1]]}", "$.flows[0].latency_us.buckets[0]"},
        {"{\"count\":3,\"buckets\":[[40,1],[32,2]]}", "$.flows[0].latency_us.buckets[1]"},
        {"{\"count\":5,\"buckets\":[[32,2]]}", "$.flows[0].latency_us.count"},
        {"{\"buckets\":[[32,-1]]}", "$.flows[0].latency_us.buckets[0]"},
        {"[1,2]", "$.flows[0].latency_us"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *body = fx_fmt("{\"version\":1,\"host\":\"h\",\"agent_id\":\"bad-lat\",\"seq\":%zu,"
                            "\"window_start\":\"%s\",\"window_seconds\":60,\"flows\":[{"
                            "\"source\":\"nfs\",\"server\":\"10.2.0.50:2049\",\"export\":\"/d\","
                            "\"op\":\"read\",\"bytes\":1,\"ops\":3,\"latency_us\":%s}]}",
                            i + 1, fx_ts(ws), cases[i][0]);
        char *resp = NULL;
        int st = post(body, &resp);
        char *want = fx_fmt("\"path\":\"%s\"", cases[i][1]);
        if (st != 422 || !strstr(resp, want))
            fail_msg("case %zu: %d %s (wanted 422 %s)", i, st, resp, want);
        free(want);
        free(resp);
        free(body);
    }
    char *body = fx_fmt("{\"version\":1,\"host\":\"h\",\"agent_id\":\"bad-lat\",\"seq\":9,"
                        "\"window_start\":\"%s\",\"window_seconds\":60,\"flows\":[{"
                        "\"source\":\"nfs\",\"server\":\"10.2.0.50:2049\",\"op\":\"read\","
                        "\"bytes\":1,\"ops\":3,\"errors\":4}]}",
                        fx_ts(ws));
    char *resp = NULL;
    assert_int_equal(post(body, &resp), 422);
    assert_non_null(strstr(resp, "\"path\":\"$.flows[0].errors\""));
    free(resp);
    free(body);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM flow_reports"), reports);
    assert_int_equal(fx_num(&F, "SELECT count(*) FROM nas_windows"), rows);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* A figure, not a bound: 3 reports of 1,000 NFS records (1,000 pods, 64 latency buckets each)
 * posted one after another (wall time of each POST, answer included), then the API over the
 * 3,000 rows; every record is stored and counted. */
static void test_nas_load(void **state)
{
    (void)state;
    enum { REPORTS = 3, RECORDS = 1000 };
    int64_t ws = fx_window_ago(6, 60);
    static struct flow_meta m[RECORDS];
    static struct llhist h;
    memset(&h, 0, sizeof h);
    for (size_t b = 0; b < 64; b++)
        h.c[100 + b] = 3; /* 192 requests in 64 buckets */
    int64_t took[REPORTS];
    for (int r = 0; r < REPORTS; r++) {
        struct flowset fs = {0};
        for (int i = 0; i < RECORDS; i++) {
            char pod[64];
            snprintf(pod, sizeof pod, "worker-%d-%d", r, i);
            meta(&m[i], "svc", "sweep", "batch", pod, "main");
            nfs(&fs, "10.2.0.60:2049", "/load", "read", "worker", 100 + (uint32_t)i, 192, &h, 0,
                &m[i]);
        }
        char agent[32];
        snprintf(agent, sizeof agent, "load-%d", r);
        char *body = encode("k8s-load", agent, 1, ws, &fs);
        int64_t t0 = tm_now_us();
        post_ok(body, "\"stored\":1000");
        took[r] = tm_now_us() - t0;
        free(body);
        flowset_free(&fs);
    }
    char *path = fx_fmt("/api/v1/nas?server=10.2.0.60&from=%s&to=%s", fx_ts(ws),
                        fx_ts(ws + 60 * TM_USEC_PER_SEC));
    int64_t t0 = tm_now_us();
    char *resp = get(path, FX_TOKEN_READER, 200);
    int64_t api_us = tm_now_us() - t0;
    cJSON *doc = cJSON_Parse(resp);
    const cJSON *in = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "instances"), 0);
    assert_int_equal(num(in, "ops"), (uint64_t)REPORTS * RECORDS * 192);
    assert_int_equal(num(in, "owners_total"), REPORTS * RECORDS);
    assert_int_equal(num(cJSON_GetObjectItem(in, "latency_us"), "count"),
                     (uint64_t)REPORTS * RECORDS * 192);
    qsort(took, REPORTS, sizeof took[0], cmp_i64);
    printf("NAS ingest (sanitizer build): POST of a report with %d NFS records, n=%d: min %.1f ms, "
           "median %.1f ms, max %.1f ms; GET /api/v1/nas over %d rows: %.1f ms\n",
           RECORDS, REPORTS, took[0] / 1e3, took[REPORTS / 2] / 1e3, took[REPORTS - 1] / 1e3,
           REPORTS * RECORDS, api_us / 1e3);
    cJSON_Delete(doc);
    free(resp);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nas_view),
        cmocka_unit_test(test_nas_load),
        cmocka_unit_test(test_nas_bad_latency),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
