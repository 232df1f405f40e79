/* Configuration: every invalid case is rejected with its exact JSON path; the example loads with
 * the values its file states. Expected paths are written by hand from DESIGN.md's contract. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "config.h"
#include "harness.h"

static char g_dir[256];

/* A valid base; cases below replace one piece of it. */
#define SITES                                                                                      \
    "\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"                            \
    " {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},"                                       \
    " {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}]"
#define DEVICES                                                                                    \
    "\"devices\": [{\"name\": \"r-nyc\", \"site\": \"nyc\", \"snmp\": {\"address\": "              \
    "\"udp:127.0.0.1:161\", \"community_file\": \"community\"}},"                                  \
    " {\"name\": \"r-chi\", \"site\": \"chi\", \"gnmi\": {}},"                                     \
    " {\"name\": \"r-osl\", \"site\": \"osl\", \"gnmi\": {}}]"
#define LINK(dev, ifc, s, p, c)                                                                    \
    "{\"device\": \"" dev "\", \"interface\": \"" ifc "\", \"site\": \"" s                         \
    "\", \"peer_site\": \"" p "\", \"circuit\": \"" c "\"}"
#define LINKS                                                                                      \
    "\"links\": [" LINK("r-nyc", "e1", "nyc", "chi", "nc") "," LINK(                               \
        "r-chi", "e1", "chi", "nyc", "nc") "," LINK("r-chi", "e2", "chi", "osl", "co") "]"

struct bad_case {
    const char *name;
    const char *json;
    const char *path; /* the exact JSON path the error must name */
};

static const struct bad_case bad[] = {
    {"not json", "{\"sites\": [", "$"},
    {"not an object", "[1,2]", "$"},
    {"unknown top-level key", "{" SITES ", \"windw_seconds\": 60}", "$.windw_seconds"},
    {"window not a number", "{" SITES ", \"window_seconds\": \"60\"}", "$.window_seconds"},
    {"window zero", "{" SITES ", \"window_seconds\": 0}", "$.window_seconds"},
    {"window not dividing a day", "{" SITES ", \"window_seconds\": 7}", "$.window_seconds"},
    {"sites missing", "{\"window_seconds\": 60}", "$.sites"},
    {"duplicate site name",
     "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
     " {\"name\": \"nyc\", \"prefixes\": [\"10.9.0.0/16\"]}]}",
     "$.sites[1].name"},
    {"bad prefix",
     "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\", \"10.300.0.0/16\"]}]}",
     "$.sites[0].prefixes[1]"},
    {"host bits set", "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.1/16\"]}]}",
     "$.sites[0].prefixes[0]"},
    {"overlapping prefixes between sites",
     "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.0.0.0/8\"]},"
     " {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}]}",
     "$.sites[1].prefixes[0]"},
    {"device unknown site",
     "{" SITES ", \"devices\": [{\"name\": \"r\", \"site\": \"lax\", \"gnmi\": {}}]}",
     "$.devices[0].site"},
    {"snmp bad version",
     "{" SITES ", \"devices\": [{\"name\": \"r\", \"site\": \"nyc\", \"snmp\": {\"address\": "
     "\"udp:127.0.0.1:161\", \"version\": \"4\", \"community_file\": \"community\"}}]}",
     "$.devices[0].snmp.version"},
    {"unreadable community file",
     "{" SITES ", \"devices\": [{\"name\": \"r\", \"site\": \"nyc\", \"snmp\": {\"address\": "
     "\"udp:127.0.0.1:161\", \"community_file\": \"no-such-file\"}}]}",
     "$.devices[0].snmp.community_file"},
    {"secret inline",
     "{" SITES ", \"devices\": [{\"name\": \"r\", \"site\": \"nyc\", \"snmp\": {\"address\": "
     "\"udp:127.0.0.1:161\", \"community\": \"public\", \"community_file\": \"community\"}}]}",
     "$.devices[0].snmp.community"},
    {"link unknown device",
     "{" SITES ", " DEVICES ", \"links\": [" LINK("r-lax", "e1", "nyc", "chi", "x") "]}",
     "$.links[0].device"},
    {"link unknown peer site",
     "{" SITES ", " DEVICES ", \"links\": [" LINK("r-nyc", "e1", "nyc", "chi", "a") "," LINK(
         "r-chi", "e1", "chi", "nyc", "a") "," LINK("r-chi", "e2", "chi", "lax", "b") "]}",
     "$.links[2].peer_site"},
    {"link site differs from device site",
     "{" SITES ", " DEVICES ", \"links\": [" LINK("r-nyc", "e1", "chi", "osl", "a") "]}",
     "$.links[0].site"},
    {"circuit with three ends",
     "{" SITES ", " DEVICES ", \"links\": [" LINK("r-nyc", "e1", "nyc", "chi", "a") "," LINK(
         "r-chi", "e1", "chi", "nyc", "a") "," LINK("r-nyc", "e2", "nyc", "chi", "a") "]}",
     "$.links[2].circuit"},
    {"circuit ends not mirrored",
     "{" SITES ", " DEVICES ", \"links\": [" LINK("r-nyc", "e1", "nyc", "chi", "a") "," LINK(
         "r-chi", "e1", "chi", "osl", "a") "]}",
     "$.links[1].circuit"},
    {"route does not connect",
     "{" SITES ", " DEVICES ", " LINKS ", \"routes\": [{\"src\": \"nyc\", \"dst\": \"osl\", "
     "\"via\": [\"nyc\"]}]}",
     "$.routes[0].via"},
    {"route unknown via",
     "{" SITES ", " DEVICES ", " LINKS ", \"routes\": [{\"src\": \"nyc\", \"dst\": \"osl\", "
     "\"via\": [\"lax\"]}]}",
     "$.routes[0].via[0]"},
    {"red above green", "{" SITES ", \"thresholds\": {\"green\": 0.8, \"red\": 0.9}}",
     "$.thresholds.red"},
    {"threshold out of range", "{" SITES ", \"thresholds\": {\"saturation\": -1}}",
     "$.thresholds.saturation"},
    {"bad nfs port", "{" SITES ", \"dedup\": {\"nfs_ports\": [70000]}}", "$.dedup.nfs_ports[0]"},
    {"webhook not http", "{" SITES ", \"alerts\": {\"webhooks\": [\"ftp://x/\"]}}",
     "$.alerts.webhooks[0]"},
    {"listen without port", "{" SITES ", \"listen\": \"127.0.0.1\"}", "$.listen"},
    {"unknown compression", "{" SITES ", \"delivery\": {\"compress\": \"lz4\"}}",
     "$.delivery.compress"},
    {"client key without cert", "{" SITES ", \"delivery\": {\"client_key\": \"k.pem\"}}",
     "$.delivery.client_key"},
    {"https webhook (webhook.c speaks plain HTTP)",
     "{" SITES ", \"alerts\": {\"webhooks\": [\"https://am:9093/\"]}}", "$.alerts.webhooks[0]"},
    {"unreadable tokens file", "{" SITES ", \"tokens_file\": \"nope.json\"}", "$.tokens_file"},
    {"capacity negative",
     "{" SITES ", " DEVICES ", \"links\": [{\"device\": \"r-nyc\", \"interface\": \"e1\", "
     "\"peer_site\": \"chi\", \"circuit\": \"c\", \"capacity_bps\": -5}]}",
     "$.links[0].capacity_bps"},
    {"v3 without priv password",
     "{" SITES ", \"devices\": [{\"name\": \"r\", \"site\": \"nyc\", \"snmp\": {\"address\": "
     "\"udp:127.0.0.1:161\", \"version\": \"3\", \"user\": \"u\", \"auth_password_file\": "
     "\"authpw\"}}]}",
     "$.devices[0].snmp.priv_password_file"},
};

static int setup(void **state)
{
    (void)state;
    const char *d = th_tmpdir("cfg");
    snprintf(g_dir, sizeof(g_dir), "%s", d);
    th_sh("printf 'public\\n' > %s/community; printf 'auth-password-1\\n' > %s/authpw", g_dir,
          g_dir);
    return 0;
}

static void test_each_bad_config_names_its_path(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof(path), "%s/config.json", g_dir);
    size_t n = sizeof(bad) / sizeof(bad[0]);
    assert_true(n >= 15);
    for (size_t i = 0; i < n; i++) {
        struct cfg_errors errs;
        struct cfg *cfg = cfg_parse(path, bad[i].json, &errs);
        if (cfg) {
            fail_msg("case \"%s\": accepted, expected an error at %s", bad[i].name, bad[i].path);
        }
        int found = 0;
        for (size_t k = 0; k < errs.n; k++)
            if (strcmp(errs.items[k].jpath, bad[i].path) == 0)
                found = 1;
        if (!found) {
            cfg_errors_print(NULL, path, &errs, stderr);
            fail_msg("case \"%s\": no error at %s", bad[i].name, bad[i].path);
        }
        assert_true(errs.items[0].msg && *errs.items[0].msg);
        cfg_errors_free(&errs);
    }
}

static void test_example_config_loads_with_its_values(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/examples/config.json", getenv("WL_SOURCE_DIR"));
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
    snprintf(path, sizeof(path), "%s/examples/config.json", getenv("WL_SOURCE_DIR"));
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

static void test_check_config_exit_codes(void **state)
{
    (void)state;
    const char *bin = th_bin("wanledger");
    char good[1024];
    snprintf(good, sizeof(good), "%s/examples/config.json", getenv("WL_SOURCE_DIR"));
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
        cmocka_unit_test(test_check_config_exit_codes),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
