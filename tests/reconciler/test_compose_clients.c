/* docker-compose wired for real clients, checked with the real tools: `docker-compose config`
 * (Debian's docker-compose) resolves the file with Alertmanager and Prometheus, the reconciler
 * published on every interface, the gnmic listener port published; `promtool check config`
 * accepts deploy/compose/prometheus.yml (with the agents' file_sd list, no warning) and
 * `amtool check-config` deploy/compose/alertmanager.yml; and the pieces point at each other:
 * the reconciler's webhook is Alertmanager's API on its service port, Prometheus scrapes the
 * reconciler on its listen port, the poller's gNMI listen port is the one published. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"

static const char *src(const char *rel)
{
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s", getenv("WL_SOURCE_DIR"), rel);
    return buf[k];
}

/* Output of a shell command (exit code in *rc). */
static char *capture(const char *cmd, int *rc)
{
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += r;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    buf[n] = 0;
    *rc = pclose(p);
    return buf;
}

static void test_compose_config(void **state)
{
    (void)state;
    th_require(access("/usr/bin/docker-compose", X_OK) == 0,
               "docker-compose is needed (scripts/install-deps.sh)");
    int rc;
    char *cmd = fx_fmt("cd '%s' && docker-compose -f docker-compose.yml config 2>&1",
                       getenv("WL_SOURCE_DIR"));
    char *out = capture(cmd, &rc);
    free(cmd);
    if (rc != 0)
        fail_msg("docker-compose config failed:\n%s", out);
    static const char *const want[] = {
        "\n  alertmanager:\n", "\n  prometheus:\n", "prom/alertmanager:v0.25.0",
        "prom/prometheus:v2.42.0", "/etc/alertmanager/alertmanager.yml",
        "/etc/prometheus/prometheus.yml", "/etc/prometheus/agents",
        /* published: the reconciler on every interface, the gnmic listener */
        "published: 7070", "published: 57400"};
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(out, want[i]))
            fail_msg("\"%s\" missing from docker-compose config:\n%s", want[i], out);
    /* 7070 is not bound to loopback only: no host_ip 127.0.0.1 right before it */
    const char *p7070 = strstr(out, "published: 7070");
    const char *host_ip = p7070;
    while (host_ip > out && strncmp(host_ip, "- ", 2) != 0 && strncmp(host_ip, "ports:", 6) != 0)
        host_ip--;
    char *entry = strndup(host_ip, (size_t)(p7070 - host_ip));
    if (strstr(entry, "127.0.0.1"))
        fail_msg("the reconciler's port is bound to loopback: %s", entry);
    free(entry);
    free(out);
}

static void test_prometheus_and_alertmanager_configs(void **state)
{
    (void)state;
    th_require(system("command -v promtool >/dev/null && command -v amtool >/dev/null") == 0,
               "promtool and amtool are needed (packages prometheus, prometheus-alertmanager)");
    /* the container path of the agents' file_sd list pointed at the checkout's copy */
    const char *dir = th_tmpdir("compose-clients");
    assert_int_equal(th_sh("sed 's|/etc/prometheus/agents|%s|' '%s' > '%s/prometheus.yml'",
                           src("deploy/compose/prometheus-agents"),
                           src("deploy/compose/prometheus.yml"), dir),
                     0);
    int rc;
    char *cmd = fx_fmt("promtool check config '%s/prometheus.yml' 2>&1", dir);
    char *out = capture(cmd, &rc);
    fprintf(stderr, "%s", out);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "WARNING"));
    free(out);
    free(cmd);
    cmd = fx_fmt("amtool check-config '%s' 2>&1", src("deploy/compose/alertmanager.yml"));
    out = capture(cmd, &rc);
    fprintf(stderr, "%s", out);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "SUCCESS"));
    free(out);
    free(cmd);
    /* resolve_timeout is left at its default (wanledger sends endsAt) */
    assert_int_not_equal(
        th_sh("grep -q '^ *resolve_timeout' '%s'", src("deploy/compose/alertmanager.yml")), 0);
}

static void test_pieces_point_at_each_other(void **state)
{
    (void)state;
    struct {
        const char *file, *text;
    } links[] = {
        /* the reconciler's webhook: Alertmanager's v2 API on the compose service */
        {"deploy/compose/wanledger.json", "\"http://alertmanager:9093/api/v2/alerts\""},
        {"deploy/compose/wanledger.json", "\"listen\": \"0.0.0.0:7070\""},
        {"deploy/compose/wanledger.json", "\"gnmi_tcp_listen\": \"0.0.0.0:57400\""},
        {"deploy/compose/prometheus.yml", "targets: ['reconciler:7070']"},
        {"deploy/compose/prometheus.yml", "targets: ['alertmanager:9093']"},
        {"deploy/compose/prometheus.yml", "targets: ['poller:"},
        {"deploy/compose/prometheus-agents/agents.json", ":9464\""},
        {"docker-compose.yml", "\"--metrics\", \"0.0.0.0:9464\""},
    };
    for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
        FILE *f = fopen(src(links[i].file), "r");
        assert_non_null(f);
        char text[16384];
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = 0;
        fclose(f);
        if (!strstr(text, links[i].text))
            fail_msg("%s does not contain %s", links[i].file, links[i].text);
    }
    /* and the compose configuration of wanledger is valid with those members */
    const char *dir = th_tmpdir("compose-clients-cfg");
    assert_int_equal(th_sh("cp '%s' '%s/tokens.json' && cp '%s' '%s/community' && sed "
                           "'s|/etc/wanledger|%s|g' '%s' > '%s/wanledger.json'",
                           src("deploy/compose/tokens.example.json"), dir,
                           src("deploy/compose/community.example"), dir, dir,
                           src("deploy/compose/wanledger.json"), dir),
                     0);
    assert_int_equal(th_sh("chmod 600 '%s/tokens.json' '%s/community'; '%s' check-config "
                           "'%s/wanledger.json'",
                           dir, dir, th_bin("wanledger"), dir),
                     0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_compose_config),
                                       cmocka_unit_test(test_prometheus_and_alertmanager_configs),
                                       cmocka_unit_test(test_pieces_point_at_each_other)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
