/* Configuration: every invalid case (one per file: tests/unit/config_reject/NN-name.case) is
 * rejected with its exact JSON path; the example loads with the values its file states. Expected
 * paths are written by hand from docs/design.md's contract. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "config.h"
#include "timeutil.h"
#include "harness.h"

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    const char *d = th_tmpdir("cfg");
    snprintf(g_dir, sizeof(g_dir), "%s", d);
    th_sh("printf 'public\\n' > %s/community; printf 'auth-password-1\\n' > %s/authpw", g_dir,
          g_dir);
    /* secret files may not be group/world readable: a checkout's examples are 0644 */
    th_sh("chmod 600 %s/community %s/authpw && cp -r %s/examples %s/ && "
          "chmod 600 %s/examples/tokens.json %s/examples/community %s/examples/snmp-*",
          g_dir, g_dir, getenv("WL_SOURCE_DIR"), g_dir, g_dir, g_dir, g_dir);
    return 0;
}

/* One rejected configuration per file in tests/unit/config_reject/ (data, read by this one
 * driver): "# NAME", "# error-at: JSONPATH", then the configuration text. The relative secret
 * files the cases name (community, authpw) are made in the test's directory by setup(). */
static char *read_case(const char *file, char *name, size_t nlen, char *want, size_t wlen)
{
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    char line[512];
    name[0] = want[0] = '\0';
    long body = 0;
    for (int k = 0; k < 2 && fgets(line, sizeof line, f); k++) {
        line[strcspn(line, "\n")] = '\0';
        if (k == 0 && strncmp(line, "# ", 2) == 0)
            th_strfmt(name, nlen, "%s", line + 2);
        if (k == 1 && strncmp(line, "# error-at: ", 12) == 0)
            th_strfmt(want, wlen, "%s", line + 12);
        body = ftell(f);
    }
    if (!name[0] || !want[0])
        fail_msg("%s: expected \"# NAME\" and \"# error-at: PATH\" lines first", file);
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    fseek(f, body, SEEK_SET);
    char *json = calloc(1, (size_t)(end - body) + 1);
    assert_non_null(json);
    assert_int_equal(fread(json, 1, (size_t)(end - body), f), (size_t)(end - body));
    fclose(f);
    return json;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_each_bad_config_names_its_path(void **state)
{
    (void)state;
    char path[512], dir[1024];
    snprintf(path, sizeof(path), "%s/config.json", g_dir);
    snprintf(dir, sizeof(dir), "%s/tests/unit/config_reject", getenv("WL_SOURCE_DIR"));
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *files[256];
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".case") == 0)
            files[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(files, n, sizeof files[0], cmp_names);
    assert_true(n >= 30);
    for (size_t i = 0; i < n; i++) {
        char file[1400], name[256], want[256];
        snprintf(file, sizeof file, "%s/%s", dir, files[i]);
        char *json = read_case(file, name, sizeof name, want, sizeof want);
        struct cfg_errors errs;
        struct cfg *cfg = cfg_parse(path, json, &errs);
        if (cfg)
            fail_msg("%s (%s): accepted, expected an error at %s", files[i], name, want);
        int found = 0;
        for (size_t k = 0; k < errs.n; k++)
            if (strcmp(errs.items[k].jpath, want) == 0)
                found = 1;
        if (!found) {
            cfg_errors_print(NULL, path, &errs, stderr);
            fail_msg("%s (%s): no error at %s", files[i], name, want);
        }
        assert_true(errs.items[0].msg && *errs.items[0].msg);
        cfg_errors_free(&errs);
        free(json);
        free(files[i]);
    }
}

static void test_example_config_loads_with_its_values(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/examples/config.json", g_dir);
    struct cfg_errors errs;
    struct cfg *cfg = cfg_load(path, &errs);
    if (!cfg)
        cfg_errors_print(NULL, path, &errs, stderr);
    assert_non_null(cfg);
    assert_int_equal(cfg->window_seconds, 60);
    assert_int_equal(cfg->grace_seconds, 90);
    assert_int_equal(cfg->tick_seconds, 5); /* default */
    assert_int_equal(cfg->n_sites, 3);
    assert_string_equal(cfg->sites[0].name, "nyc");
    assert_int_equal(cfg->sites[0].n_prefixes, 2);
    assert_int_equal(cfg->sites[0].prefixes[1].family, AF_INET6);
    assert_int_equal(cfg->sites[0].prefixes[1].len, 48);
    assert_int_equal(cfg->n_devices, 3);
    assert_true(cfg->devices[0].has_snmp);
    assert_string_equal(cfg->devices[0].snmp.community, "public");
    assert_int_equal(cfg->devices[0].snmp.version, 2);
    assert_true(cfg->devices[1].has_gnmi);
    assert_string_equal(cfg->devices[1].gnmi_source, "chi-border-1");
    assert_int_equal(cfg->devices[2].snmp.version, 3);
    assert_string_equal(cfg->devices[2].snmp.priv_password, "example-priv-pass");
    assert_int_equal(cfg->n_links, 4);
    assert_int_equal(cfg->links[0].capacity_bps, 100000000000ull);
    assert_int_equal(cfg->links[3].site_idx, 2);
    assert_int_equal(cfg->links[3].peer_site_idx, 1);
    assert_int_equal(cfg->n_routes, 2);
    int path_sites[8];
    assert_int_equal(cfg_path(cfg, 0, 2, path_sites, 8), 3);
    assert_int_equal(path_sites[1], 1); /* nyc -> chi -> osl */
    assert_int_equal(cfg_path(cfg, 0, 1, path_sites, 8), 2);
    assert_true(cfg_is_dedup_port(cfg, 2049));
    assert_true(cfg_is_dedup_port(cfg, 7100));
    assert_false(cfg_is_dedup_port(cfg, 5201));
    assert_int_equal(cfg_service_of_user(cfg, "dupedog"), 0);
    assert_int_equal(cfg_site_of_addr(cfg, "10.2.7.9"), 1);
    assert_int_equal(cfg_site_of_addr(cfg, "fd00:1::17"), 0);
    assert_int_equal(cfg_site_of_addr(cfg, "192.0.2.1"), -1);
    assert_true(cfg->green == 0.95 && cfg->red == 0.80 && cfg->over == 1.05);
    assert_int_equal(cfg->min_gap_bytes, 100000000ull);
    assert_int_equal(cfg->n_webhooks, 1);
    assert_int_equal(cfg->tokens.n_agent, 1);
    assert_string_equal(cfg->tokens.poller[0], "example-poller-token-0001");
    assert_string_equal(cfg->reconciler_url, "http://127.0.0.1:7070");
    cfg_free(cfg);
}

/* Parse -> JSON -> parse gives the same configuration: the second serialisation equals the
 * first byte for byte, and the values the test checked above survive. */
static void test_example_config_round_trips(void **state)
{
    (void)state;
    char path[1024], path2[1024];
    snprintf(path, sizeof(path), "%s/examples/config.json", g_dir);
    struct cfg_errors errs;
    struct cfg *cfg = cfg_load(path, &errs);
    assert_non_null(cfg);
    char *json1 = cfg_to_json(cfg);
    snprintf(path2, sizeof(path2), "%s/roundtrip.json", g_dir);
    struct cfg *cfg2 = cfg_parse(path2, json1, &errs);
    if (!cfg2)
        cfg_errors_print(NULL, path2, &errs, stderr);
    assert_non_null(cfg2);
    char *json2 = cfg_to_json(cfg2);
    assert_string_equal(json1, json2);
    assert_int_equal(cfg2->n_links, 4);
    assert_int_equal(cfg2->links[0].capacity_bps, 100000000000ull);
    assert_string_equal(cfg2->devices[2].snmp.priv_password, "example-priv-pass");
    assert_int_equal(cfg2->sites[0].prefixes[1].len, 48);
    assert_null(strstr(json1, "example-priv-pass")); /* secrets never serialised */
    free(json1);
    free(json2);
    cfg_free(cfg);
    cfg_free(cfg2);
}

/* $.analytics.clickhouse: read, its password from a file, dumped without the password and parsed
 * back to the same configuration. */
static void test_analytics_round_trips(void **state)
{
    (void)state;
    char pw[600], path[600];
    snprintf(pw, sizeof(pw), "%s/ch.pass", g_dir);
    FILE *f = fopen(pw, "w");
    assert_non_null(f);
    fputs("ch-secret-0001\n", f);
    fclose(f);
    chmod(pw, 0600);
    snprintf(path, sizeof(path), "%s/analytics.json", g_dir);
    char *json = NULL;
    assert_true(asprintf(&json,
                         "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]}],"
                         " \"analytics\": {\"clickhouse\": {\"url\": \"http://127.0.0.1:8123/\","
                         " \"database\": \"wl_ch\", \"cluster\": \"two_shards\","
                         " \"shard_urls\": [\"http://10.0.0.1:8123/\", \"http://10.0.0.2:8123\"],"
                         " \"password_file\": \"ch.pass\", \"batch_rows\": 5000}}}") > 0);
    struct cfg_errors errs;
    struct cfg *cfg = cfg_parse(path, json, &errs);
    if (!cfg)
        cfg_errors_print(NULL, path, &errs, stderr);
    assert_non_null(cfg);
    assert_true(cfg->clickhouse.enabled);
    assert_string_equal(cfg->clickhouse.url, "http://127.0.0.1:8123"); /* no trailing / */
    assert_string_equal(cfg->clickhouse.cluster, "two_shards");
    assert_int_equal(cfg->clickhouse.n_shard_urls, 2);
    assert_string_equal(cfg->clickhouse.shard_urls[0], "http://10.0.0.1:8123"); /* no trailing / */
    assert_string_equal(cfg->clickhouse.shard_urls[1], "http://10.0.0.2:8123");
    assert_string_equal(cfg->clickhouse.user, "default");
    assert_string_equal(cfg->clickhouse.password, "ch-secret-0001");
    assert_int_equal(cfg->clickhouse.batch_rows, 5000);
    assert_int_equal(cfg->clickhouse.timeout_ms, 10000);
    char *json1 = cfg_to_json(cfg);
    assert_null(strstr(json1, "ch-secret-0001"));
    struct cfg *cfg2 = cfg_parse(path, json1, &errs);
    assert_non_null(cfg2);
    char *json2 = cfg_to_json(cfg2);
    assert_string_equal(json1, json2);
    assert_string_equal(cfg2->clickhouse.password, "ch-secret-0001");
    /* the defaults: a million rows per INSERT at most (one insert a second per shard at the
     * fleet's rate, docs/design.md), 10 s per request */
    struct cfg *cfg3 =
        cfg_parse(path,
                  "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]}],"
                  " \"analytics\": {\"clickhouse\": {\"url\": \"http://127.0.0.1:8123\"}}}",
                  &errs);
    assert_non_null(cfg3);
    assert_int_equal(cfg3->clickhouse.batch_rows, 1000000);
    assert_int_equal(cfg3->clickhouse.timeout_ms, 10000);
    cfg_free(cfg3);
    free(json);
    free(json1);
    free(json2);
    cfg_free(cfg);
    cfg_free(cfg2);
}

/* One configuration whose tokens_file is tokens; the first error's message, or "" when it loads. */
static const char *load_with_tokens(const char *tokens)
{
    static char msg[1024];
    char path[512];
    snprintf(path, sizeof(path), "%s/secret-cfg.json", g_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f,
            "{\"tokens_file\": \"%s\", \"sites\": [{\"name\": \"a\", \"prefixes\": "
            "[\"10.0.0.0/8\"]}]}\n",
            tokens);
    fclose(f);
    struct cfg_errors errs;
    struct cfg *cfg = cfg_load(path, &errs);
    msg[0] = 0;
    if (!cfg)
        snprintf(msg, sizeof(msg), "%s: %s", errs.items[0].jpath, errs.items[0].msg);
    cfg_free(cfg);
    cfg_errors_free(&errs);
    return msg;
}

static void test_secret_files(void **state)
{
    (void)state;
    char t[512];
    snprintf(t, sizeof(t), "%s/tok.json", g_dir);
    th_sh("printf '{\"agent\": [\"agent-token-0123456789\"]}' > %s && chmod 600 %s", t, t);
    assert_string_equal(load_with_tokens(t), "");
    /* group/world readable: refused with the path and the mode */
    th_sh("chmod 644 %s", t);
    const char *m = load_with_tokens(t);
    fprintf(stderr, "# %s\n", m);
    assert_non_null(strstr(m, "mode 0644"));
    assert_non_null(strstr(m, t));
    th_sh("chmod 640 %s", t);
    assert_non_null(strstr(load_with_tokens(t), "mode 0640"));
    /* a FIFO without a writer (used to hang), /dev/zero (used to eat memory), a directory */
    char fifo[512];
    snprintf(fifo, sizeof(fifo), "%s/fifo", g_dir);
    th_sh("mkfifo -m 600 %s", fifo);
    assert_non_null(strstr(load_with_tokens(fifo), "not a regular file"));
    assert_non_null(strstr(load_with_tokens("/dev/zero"), "not a regular file"));
    assert_non_null(strstr(load_with_tokens(g_dir), "not a regular file"));
    /* larger than the bound */
    th_sh("head -c 2000000 /dev/zero | tr '\\0' ' ' > %s && chmod 600 %s", t, t);
    assert_non_null(strstr(load_with_tokens(t), "larger than 1048576 bytes"));
    /* the same token under two roles */
    th_sh(
        "printf '{\"agent\": [\"shared-token-0123456789\"], \"reader\": [\"r-token-0123456789ab\", "
        "\"shared-token-0123456789\"]}' > %s && chmod 600 %s",
        t, t);
    m = load_with_tokens(t);
    fprintf(stderr, "# %s\n", m);
    assert_non_null(strstr(m, "$.reader[1]"));
    assert_non_null(strstr(m, "also listed under agent[0]"));
    assert_null(strstr(m, "shared-token")); /* the token itself is not printed */
}

/* 100,000 sites, devices and links: every check is hashed or sorted (the quadratic checks took
 * 55 s for the sites alone; this run takes about 4 s in the sanitizer build). */
static void test_large_config_is_linear(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof(path), "%s/big.json", g_dir);
    assert_int_equal(
        th_sh("python3 -c 'import json\n"
              "n=100000\n"
              "s=[{\"name\":\"s%%d\"%%i,\"prefixes\":[\"10.%%d.%%d.0/24\"%%(i//256%%256,i%%256) "
              "if i<65536 else \"fd00:%%x:%%x::/48\"%%(i>>16,i&0xffff)]} for i in range(n)]\n"
              "d=[{\"name\":\"d%%d\"%%i,\"site\":\"s%%d\"%%i,\"gnmi\":{}} for i in range(n)]\n"
              "l=[{\"device\":\"d%%d\"%%i,\"interface\":\"e1\",\"site\":\"s%%d\"%%i,"
              "\"peer_site\":\"s%%d\"%%(i^1),\"circuit\":\"c%%d\"%%(i>>1)} for i in range(n)]\n"
              "json.dump({\"sites\":s,\"devices\":d,\"links\":l},open(\"%s\",\"w\"))'",
              path),
        0);
    int64_t t0 = tm_mono_ns();
    struct cfg_errors errs;
    struct cfg *cfg = cfg_load(path, &errs);
    double secs = (double)(tm_mono_ns() - t0) / 1e9;
    fprintf(stderr, "# 100,000 sites, devices and links checked in %.2f s\n", secs);
    if (!cfg)
        cfg_errors_print(NULL, path, &errs, stderr);
    assert_non_null(cfg);
    assert_int_equal(cfg->n_sites, 100000);
    assert_int_equal(cfg_site_index(cfg, "s99999"), 99999);
    assert_int_equal(cfg_device_index(cfg, "d4242"), 4242);
    assert_true(secs < 30);
    cfg_free(cfg);
}

static void test_check_config_exit_codes(void **state)
{
    (void)state;
    const char *bin = th_bin("wanledger");
    char good[1024];
    snprintf(good, sizeof(good), "%s/examples/config.json", g_dir);
    assert_int_equal(th_sh("%s check-config %s > %s/summary.txt", bin, good, g_dir), 0);
    assert_int_equal(th_sh("grep -q 'sites (3)' %s/summary.txt", g_dir), 0);
    assert_int_equal(th_sh("grep -q 'nyc -> chi -> osl' %s/summary.txt", g_dir), 0);
    /* two errors in one file: both printed, exit 2 */
    th_sh("printf '{\"sites\": [], \"window_seconds\": \"x\"}' > %s/bad.json", g_dir);
    assert_int_equal(th_sh("%s check-config %s/bad.json > %s/out.txt", bin, g_dir, g_dir), 2);
    assert_int_equal(
        th_sh("grep -q 'bad.json: \\$.window_seconds: expected an integer' %s/out.txt", g_dir), 0);
    assert_int_equal(
        th_sh("grep -q 'bad.json: \\$.sites: expected at least one site' %s/out.txt", g_dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_bad_config_names_its_path),
        cmocka_unit_test(test_example_config_loads_with_its_values),
        cmocka_unit_test(test_example_config_round_trips),
        cmocka_unit_test(test_analytics_round_trips),
        cmocka_unit_test(test_check_config_exit_codes),
        cmocka_unit_test(test_secret_files),
        cmocka_unit_test(test_large_config_is_linear),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
