/* The deployment files: docker-compose.yml validated by Debian's docker-compose, the Dockerfile's
 * Debian packages known to apt, the compose configuration accepted by wanledger's own parser,
 * and every query of the Grafana dashboard run against a real PostgreSQL after expanding
 * Grafana's macros ($__timeFilter, $__timeGroupAlias, $__interval…) the way its PostgreSQL data
 * source documents them: time-series panels must return a "time" column first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <ctype.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "harness.h"
#include "hm_seed.h"

static char g_src[1024];

static const char *src_path(const char *rel)
{
    static char p[4][1200];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", g_src, rel);
    return p[k];
}

static int setup(void **state)
{
    (void)state;
    const char *s = getenv("WL_SOURCE_DIR");
    snprintf(g_src, sizeof g_src, "%s", s ? s : ".");
    return 0;
}

/* Output of a shell command (at most 64 KiB). */
static char *capture(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 65536, n = 0, got;
    char *buf = malloc(cap + 1);
    while ((got = fread(buf + n, 1, cap - n, p)) > 0)
        n += got;
    buf[n] = 0;
    int rc = pclose(p);
    if (rc != 0)
        fail_msg("%s exited %d:\n%s", cmd, rc, buf);
    return buf;
}

static void test_compose_config(void **state)
{
    (void)state;
    th_require(access("/usr/bin/docker-compose", X_OK) == 0,
               "docker-compose (Debian package) is not installed");
    /* one run (it is slow): `config` validates the file and prints it resolved */
    char cmd[2600];
    snprintf(cmd, sizeof cmd, "cd '%s' && docker-compose -f docker-compose.yml config 2>&1", g_src);
    char *full = capture(cmd);
    const char *services = strstr(full, "services:\n");
    assert_non_null(services);
    static const char *const want[] = {"\n  postgres:\n", "\n  reconciler:\n", "\n  poller:\n",
                                       "\n  grafana:\n"};
    for (size_t i = 0; i < 4; i++)
        if (!strstr(services, want[i]))
            fail_msg("service %s missing from:\n%s", want[i] + 3, full);
    /* the reconciler migrates before it serves; Grafana gets the provisioning */
    const char *rec = strstr(full, "  reconciler:");
    assert_non_null(rec);
    const char *mig = strstr(rec, "migrate");
    assert_non_null(mig);
    assert_non_null(strstr(mig, "reconcile"));
    assert_non_null(strstr(full, "/etc/grafana/provisioning"));
    free(full);
    /* the commented agent service, privileged with the host's PID and network namespaces */
    char *raw = hm_test_slurp(src_path("docker-compose.yml"), NULL);
    assert_non_null(raw);
    static const char *const agent[] = {"#   privileged: true", "#   pid: host",
                                        "#   network_mode: host", "/sys/kernel/btf:/sys/kernel/btf",
                                        "/sys/fs/bpf:/sys/fs/bpf"};
    for (size_t i = 0; i < sizeof agent / sizeof agent[0]; i++)
        if (!strstr(raw, agent[i]))
            fail_msg("agent service lacks \"%s\"", agent[i]);
    free(raw);
}

static void test_dockerfile_packages(void **state)
{
    (void)state;
    char *df = hm_test_slurp(src_path("Dockerfile"), NULL);
    assert_non_null(df);
    assert_non_null(strstr(df, "FROM debian:12 AS build"));
    assert_non_null(strstr(df, "AS server"));
    assert_non_null(strstr(df, "AS agent"));
    /* every package after "--no-install-recommends" up to "&&" must be known to apt: one
     * apt-cache run for all (it is slow), one per package only to name a missing one */
    int checked = 0;
    char *pkgs[64];
    for (const char *p = strstr(df, "--no-install-recommends"); p;
         p = strstr(p + 1, "--no-install-recommends")) {
        const char *q = p + strlen("--no-install-recommends");
        const char *end = strstr(q, "&&");
        assert_non_null(end);
        while (q < end) {
            while (q < end && (isspace((unsigned char)*q) || *q == '\\'))
                q++;
            const char *w = q;
            while (q < end && !isspace((unsigned char)*q) && *q != '\\')
                q++;
            if (q > w && checked < 64)
                pkgs[checked++] = strndup(w, (size_t)(q - w));
        }
    }
    struct evbuffer *all = evbuffer_new();
    evbuffer_add_printf(all, "apt-cache show --no-all-versions");
    for (int i = 0; i < checked; i++)
        evbuffer_add_printf(all, " '%s'", pkgs[i]);
    evbuffer_add_printf(all, " 2>/dev/null | grep '^Package: ' || true");
    evbuffer_add(all, "", 1);
    char *found = capture((char *)evbuffer_pullup(all, -1));
    for (int i = 0; i < checked; i++) {
        char line[160];
        snprintf(line, sizeof line, "Package: %s\n", pkgs[i]);
        if (!strstr(found, line))
            fail_msg("Dockerfile package %s is not a Debian package here", pkgs[i]);
    }
    free(found);
    evbuffer_free(all);
    for (int i = 0; i < checked; i++)
        free(pkgs[i]);
    assert_true(checked >= 20);
    free(df);
}

static void test_compose_wanledger_config(void **state)
{
    (void)state;
    /* the compose config with its /etc/wanledger paths pointed at copies of the examples */
    const char *dir = th_tmpdir("hm-compose-cfg");
    assert_int_equal(th_sh("cp '%s' '%s/tokens.json' && cp '%s' '%s/community' && "
                           "chmod 600 '%s/tokens.json' '%s/community'",
                           src_path("deploy/compose/tokens.example.json"), dir,
                           src_path("deploy/compose/community.example"), dir, dir, dir),
                     0);
    char *json = hm_test_slurp(src_path("deploy/compose/wanledger.json"), NULL);
    assert_non_null(json);
    struct evbuffer *b = evbuffer_new();
    for (const char *p = json; *p;) {
        const char *m = strstr(p, "/etc/wanledger");
        if (!m) {
            evbuffer_add(b, p, strlen(p));
            break;
        }
        evbuffer_add(b, p, (size_t)(m - p));
        evbuffer_add_printf(b, "%s", dir);
        p = m + strlen("/etc/wanledger");
    }
    evbuffer_add(b, "", 1);
    struct cfg_errors errs = {0};
    struct cfg *cfg =
        cfg_parse("deploy/compose/wanledger.json", (char *)evbuffer_pullup(b, -1), &errs);
    if (!cfg)
        cfg_errors_print(NULL, "deploy/compose/wanledger.json", &errs, stderr);
    assert_non_null(cfg);
    assert_true(cfg->n_sites >= 2);
    cfg_free(cfg);
    cfg_errors_free(&errs);
    evbuffer_free(b);
    free(json);
}

/* Grafana's PostgreSQL macros for the range [FROM, TO) and a 5-minute interval. */
#define FROM "'2026-11-29T18:00:00Z'"
#define TO   "'2026-11-29T19:00:00Z'"

static void expand(struct evbuffer *out, const char *sql)
{
    const char *p = sql;
    while (*p) {
        const char *m = strstr(p, "$__");
        if (!m) {
            evbuffer_add(out, p, strlen(p));
            return;
        }
        evbuffer_add(out, p, (size_t)(m - p));
        const char *n = m + 3;
        size_t len = 0;
        while (isalnum((unsigned char)n[len]) || n[len] == '_')
            len++;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)len, n);
        const char *after = n + len;
        char args[4][256] = {{0}};
        int nargs = 0;
        if (*after == '(') {
            int depth = 0;
            const char *a = after + 1, *q = a;
            for (; *q; q++) {
                if (*q == '(')
                    depth++;
                else if (*q == ')' && depth-- == 0)
                    break;
                else if (*q == ',' && depth == 0) {
                    snprintf(args[nargs++], sizeof args[0], "%.*s", (int)(q - a), a);
                    a = q + 1;
                }
            }
            assert_int_equal(*q, ')');
            snprintf(args[nargs++], sizeof args[0], "%.*s", (int)(q - a), a);
            after = q + 1;
        }
        if (strcmp(name, "timeFilter") == 0)
            evbuffer_add_printf(out, "%s BETWEEN " FROM " AND " TO, args[0]);
        else if (strcmp(name, "timeGroupAlias") == 0)
            evbuffer_add_printf(out, "floor(extract(epoch from %s)/300)*300 AS \"time\"", args[0]);
        else if (strcmp(name, "time") == 0)
            evbuffer_add_printf(out, "%s AS \"time\"", args[0]);
        else if (strcmp(name, "timeFrom") == 0)
            evbuffer_add_printf(out, FROM);
        else if (strcmp(name, "timeTo") == 0)
            evbuffer_add_printf(out, TO);
        else if (strcmp(name, "interval_ms") == 0)
            evbuffer_add_printf(out, "300000");
        else if (strcmp(name, "interval") == 0)
            evbuffer_add_printf(out, "'5m'");
        else
            fail_msg("unknown Grafana macro $__%s", name);
        p = after;
    }
}

static const char seed_sql[] =
    "INSERT INTO heatmap_cells (window_start, window_seconds, src_site, dst_site, observed_bytes,"
    " observed_payload_bytes, attributed_bytes, socket_bytes, nfs_bytes, service_bytes,"
    " unattributed_bytes, coverage, status)"
    " SELECT t, 60, 'nyc', 'chi', 1050000000, 1000000000, 700000000, 500000000, 150000000,"
    "  50000000, 300000000, 0.7, 'red'"
    " FROM generate_series(timestamptz " FROM ", timestamptz " TO " - interval '1 minute',"
    "  interval '1 minute') AS t;"
    "INSERT INTO attribution_rollup (window_start, src_site, dst_site, source, workflow,"
    " user_name, program, host, bytes) VALUES"
    " ('2026-11-29T18:10:00Z', 'nyc', 'chi', 'socket', 'train-42', 'alice', 'python3', 'h1', 5);"
    "INSERT INTO gap_alerts (kind, src_site, dst_site, state, opened_at, first_window,"
    " last_window, peak_unattributed_bytes, peak_ratio, summary) VALUES ('gap', 'nyc', 'chi',"
    " 'open', '2026-11-29T18:03:00Z', '2026-11-29T18:00:00Z', '2026-11-29T18:59:00Z', 300000000,"
    " 0.7, 'test');";

static void test_grafana_dashboard(void **state)
{
    (void)state;
    char *ds =
        hm_test_slurp(src_path("deploy/grafana/provisioning/datasources/wanledger.yml"), NULL);
    assert_non_null(ds);
    assert_non_null(strstr(ds, "uid: wanledger-pg"));
    assert_non_null(strstr(ds, "type: grafana-postgresql-datasource"));
    free(ds);
    char *prov =
        hm_test_slurp(src_path("deploy/grafana/provisioning/dashboards/wanledger.yml"), NULL);
    assert_non_null(prov);
    assert_non_null(strstr(prov, "path: /var/lib/grafana/dashboards"));
    free(prov);

    char *text = hm_test_slurp(src_path("deploy/grafana/dashboards/wanledger.json"), NULL);
    assert_non_null(text);
    cJSON *dash = cJSON_Parse(text);
    assert_non_null(dash);
    const char *conninfo = th_pg_default();
    char err[256];
    PGconn *db = db_connect_str(conninfo, err, sizeof err);
    assert_non_null(db);
    hm_test_exec(db, seed_sql);
    int n_state = 0, n_series = 0, n_table = 0;
    cJSON *panel;
    cJSON_ArrayForEach(panel, cJSON_GetObjectItem(dash, "panels"))
    {
        const char *type = cJSON_GetStringValue(cJSON_GetObjectItem(panel, "type"));
        const char *title = cJSON_GetStringValue(cJSON_GetObjectItem(panel, "title"));
        assert_non_null(type);
        cJSON *t;
        cJSON_ArrayForEach(t, cJSON_GetObjectItem(panel, "targets"))
        {
            const char *uid = cJSON_GetStringValue(
                cJSON_GetObjectItem(cJSON_GetObjectItem(t, "datasource"), "uid"));
            assert_non_null(uid);
            assert_string_equal(uid, "wanledger-pg");
            const char *raw = cJSON_GetStringValue(cJSON_GetObjectItem(t, "rawSql"));
            assert_non_null(raw);
            bool timed = strcmp(type, "timeseries") == 0 || strcmp(type, "state-timeline") == 0;
            if (timed && !strstr(raw, "$__timeFilter("))
                fail_msg("panel \"%s\": a time-series query without $__timeFilter", title);
            struct evbuffer *b = evbuffer_new();
            expand(b, raw);
            evbuffer_add(b, "", 1);
            const char *sql = (const char *)evbuffer_pullup(b, -1);
            PGresult *r = PQexec(db, sql);
            if (PQresultStatus(r) != PGRES_TUPLES_OK)
                fail_msg("panel \"%s\": %s\n%s", title, PQresultErrorMessage(r), sql);
            if (PQntuples(r) == 0)
                fail_msg("panel \"%s\": no rows from the seeded data\n%s", title, sql);
            if (timed) {
                assert_string_equal(PQfname(r, 0), "time");
                n_series += strcmp(type, "timeseries") == 0;
                n_state += strcmp(type, "state-timeline") == 0;
            }
            n_table += strcmp(type, "table") == 0;
            PQclear(r);
            evbuffer_free(b);
        }
    }
    assert_true(n_state >= 1);
    assert_true(n_series >= 2);
    assert_true(n_table >= 1);
    PQfinish(db);
    cJSON_Delete(dash);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compose_config),
        cmocka_unit_test(test_dockerfile_packages),
        cmocka_unit_test(test_compose_wanledger_config),
        cmocka_unit_test(test_grafana_dashboard),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
