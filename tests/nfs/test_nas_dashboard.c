/* deploy/grafana/dashboards/wanledger-nas.json against the agent's real /metrics text: every
 * panel query parses as PromQL (`promtool check rules` on a rules file made of the queries, with
 * Grafana's variables replaced), and every metric and label a query names exists in the text
 * agentmetrics_render() writes for NFS records of a pod (which `promtool check metrics` also
 * accepts). Labels Prometheus adds at scrape time (instance, job) are the only exception. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "agentmetrics.h"
#include "harness.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        fail_msg("cannot open %s", path);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strdup(buf);
}

/* The NFS part of the agent's /metrics for two records of a pod and one of a plain process. */
static char *render_metrics(void)
{
    static struct flow_meta pod, plain;
    memset(&pod, 0, sizeof(pod));
    memset(&plain, 0, sizeof(plain));
    snprintf(pod.workflow, sizeof(pod.workflow), "wf-1");
    snprintf(pod.user, sizeof(pod.user), "alice");
    snprintf(pod.kube.namespace_, sizeof(pod.kube.namespace_), "nas-test");
    snprintf(pod.kube.pod, sizeof(pod.kube.pod), "loader-0");
    snprintf(pod.kube.container, sizeof(pod.kube.container), "loader");
    snprintf(plain.user, sizeof(plain.user), "bob");
    struct nfsops o = {0};
    const char *opn[] = {"read", "write", "commit"};
    for (int i = 0; i < 3; i++) {
        struct nfsop_detail *d;
        struct flow_rec *r = nfsops_add(&o, &d);
        assert_non_null(r);
        r->source = FLOW_SRC_NFS;
        snprintf(r->server, sizeof(r->server), "10.0.0.5:2049");
        snprintf(r->export_path, sizeof(r->export_path), "/vol/a");
        snprintf(r->op, sizeof(r->op), "%s", opn[i]);
        r->ops = 3;
        r->bytes = i == 2 ? 0 : 3 * 65536;
        d->errors = i == 1;
        r->meta = i == 2 ? &plain : &pod;
        llhist_record(&d->latency, 150, 2);
        llhist_record(&d->latency, 4000, 1);
    }
    struct agentmetrics m;
    memset(&m, 0, sizeof(m));
    m.nfs = "nfs";
    agentmetrics_nfs_window(&m, &o);
    char *text = agentmetrics_render(&m);
    assert_non_null(text);
    agentmetrics_free(&m);
    nfsops_free(&o);
    char *nfs = strstr(text, "# HELP wanledger_nfs_");
    assert_non_null(nfs);
    char *out = strdup(nfs);
    free(text);
    return out;
}

static bool has_metric(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = text; (p = strstr(p, name)); p += n)
        if ((p == text || p[-1] == '\n') && (p[n] == '{' || p[n] == ' '))
            return true;
    return false;
}

static bool has_label(const char *text, const char *label)
{
    char a[80], b[80];
    snprintf(a, sizeof(a), "{%s=\"", label);
    snprintf(b, sizeof(b), ",%s=\"", label);
    return strstr(text, a) || strstr(text, b);
}

static char bad[512]; /* the first name not found, or why an expression was not read */

static void check_label(const char *text, const char *label, size_t n, const char *expr)
{
    char l[64];
    snprintf(l, sizeof(l), "%.*s", (int)n, label);
    if (strcmp(l, "instance") == 0 || strcmp(l, "job") == 0)
        return; /* added by Prometheus at scrape time */
    if (!has_label(text, l) && !bad[0])
        snprintf(bad, sizeof(bad), "label \"%s\" of %s is not in the agent's /metrics", l, expr);
}

#define note_bad(...) (bad[0] ? (void)0 : (void)snprintf(bad, sizeof(bad), __VA_ARGS__))

/* Metric names (wanledger_*), the labels of by (...) / without (...) and of {...} matchers.
 * Returns false with bad filled at the first one missing. */
static bool check_names(const char *text, const char *expr)
{
    bad[0] = '\0';
    for (const char *p = expr; *p;) {
        if (strncmp(p, "wanledger_", 10) == 0 &&
            (p == expr || !(isalnum((unsigned char)p[-1]) || p[-1] == '_'))) {
            size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789_");
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)n, p);
            if (!has_metric(text, name))
                note_bad("metric %s of %s is not in the agent's /metrics", name, expr);
            p += n;
            continue;
        }
        if (*p == '{') { /* matchers: name op "value", ... */
            const char *q = p + 1;
            while (*q && *q != '}') {
                q += strspn(q, " ,");
                size_t n = strspn(q, "abcdefghijklmnopqrstuvwxyz0123456789_");
                if (!n) {
                    note_bad("unreadable matcher in %s", expr);
                    return false;
                }
                check_label(text, q, n, expr);
                q = strchr(q, '"');
                q = q ? strchr(q + 1, '"') : NULL;
                if (!q) {
                    note_bad("unterminated matcher in %s", expr);
                    return false;
                }
                q++;
                q += strspn(q, " ");
            }
            p = *q ? q + 1 : q;
            continue;
        }
        if ((strncmp(p, "by (", 4) == 0 || strncmp(p, "without (", 9) == 0) &&
            (p == expr || p[-1] == ' ')) {
            const char *q = strchr(p, '(') + 1, *end = strchr(q, ')');
            if (!end) {
                note_bad("unterminated grouping in %s", expr);
                return false;
            }
            while (q < end) {
                q += strspn(q, " ,");
                size_t n = strspn(q, "abcdefghijklmnopqrstuvwxyz0123456789_");
                if (!n)
                    break;
                check_label(text, q, n, expr);
                q += n;
            }
            p = end + 1;
            continue;
        }
        p++;
    }
    return !bad[0];
}
#undef note_bad

/* Grafana's variables as Prometheus would see them after Grafana's substitution. */
static char *substitute(const char *expr)
{
    char *out = malloc(strlen(expr) * 2 + 16), *w = out;
    assert_non_null(out);
    for (const char *p = expr; *p;) {
        if (strncmp(p, "$__rate_interval", 16) == 0) {
            w += sprintf(w, "1m");
            p += 16;
        } else if (strncmp(p, "$server", 7) == 0) {
            w += sprintf(w, ".*");
            p += 7;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
    return out;
}

static void test_dashboard(void **state)
{
    (void)state;
    th_require(th_sh("command -v promtool >/dev/null") == 0,
               "promtool (Debian prometheus) is needed");
    const char *src = getenv("WL_SOURCE_DIR");
    assert_non_null(src);
    const char *tmp = th_tmpdir("nasdash");
    assert_non_null(tmp);
    char path[512];

    char *metrics = render_metrics();
    snprintf(path, sizeof(path), "%s/metrics.txt", tmp);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(metrics, f);
    fclose(f);
    assert_int_equal(th_sh("promtool check metrics < %s", path), 0);

    snprintf(path, sizeof(path), "%s/deploy/grafana/dashboards/wanledger-nas.json", src);
    char *json = slurp(path);
    cJSON *d = cJSON_Parse(json);
    free(json);
    if (!d)
        fail_msg("%s is not JSON", path);
    snprintf(path, sizeof(path), "%s/rules.yml", tmp);
    f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "groups:\n  - name: nas_dashboard\n    rules:\n");
    int n_expr = 0;
    const cJSON *panel, *target;
    cJSON_ArrayForEach(panel, cJSON_GetObjectItem(d, "panels"))
    {
        const cJSON *ds = cJSON_GetObjectItem(panel, "datasource");
        assert_string_equal(cJSON_GetStringValue(cJSON_GetObjectItem(ds, "uid")), "wanledger-prom");
        cJSON_ArrayForEach(target, cJSON_GetObjectItem(panel, "targets"))
        {
            const char *expr = cJSON_GetStringValue(cJSON_GetObjectItem(target, "expr"));
            if (!expr)
                fail_msg("panel \"%s\" has a target without expr",
                         cJSON_GetStringValue(cJSON_GetObjectItem(panel, "title")));
            if (!check_names(metrics, expr))
                fail_msg("%s", bad);
            char *e = substitute(expr);
            fprintf(f, "      - record: nas_dashboard_query_%d\n        expr: |\n          %s\n",
                    n_expr, e);
            free(e);
            n_expr++;
        }
    }
    fclose(f);
    printf("%d panel queries\n", n_expr);
    assert_true(n_expr >= 8);
    assert_int_equal(th_sh("promtool check rules %s", path), 0);
    /* the instance variable: label_values(METRIC, LABEL) */
    const cJSON *var =
        cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "templating"), "list"), 0);
    const char *def = cJSON_GetStringValue(cJSON_GetObjectItem(var, "definition"));
    assert_non_null(def);
    char metric[128], label[64];
    assert_int_equal(sscanf(def, "label_values(%127[a-z_], %63[a-z_])", metric, label), 2);
    assert_true(has_metric(metrics, metric));
    assert_true(has_label(metrics, label));
    /* a query naming something the agent does not write is caught */
    assert_false(check_names(metrics, "sum by (nope) (wanledger_nfs_ops_total)"));
    assert_false(check_names(metrics, "rate(wanledger_nfs_ops{server=\"x\"}[1m])"));
    assert_false(check_names(metrics, "wanledger_nfs_ops_total{pod_name=\"x\"}"));
    assert_true(check_names(metrics, "sum by (pod) (wanledger_nfs_ops_total{namespace=\"x\"})"));
    cJSON_Delete(d);
    free(metrics);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_dashboard)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
