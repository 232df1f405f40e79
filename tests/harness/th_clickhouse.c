/* A throwaway ClickHouse server (see th_clickhouse.h). */
#include "th_clickhouse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "httpc.h"

#define CH_BIN "/usr/sbin/clickhouse-server"

static struct th_ch *g_started[4];
static int g_n;

static void stop_all(void)
{
    for (int i = 0; i < g_n; i++)
        th_ch_stop(g_started[i]);
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fputs(text, f);
    return fclose(f);
}

static int spawn(struct th_ch *ch)
{
    char cfgarg[320], log[300];
    snprintf(cfgarg, sizeof cfgarg, "--config-file=%s/config.xml", ch->dir);
    snprintf(log, sizeof log, "%s/stdout.log", ch->dir);
    char *argv[] = {CH_BIN, cfgarg, NULL};
    ch->pid = th_spawn(argv, log);
    if (ch->pid <= 0)
        return -1;
    for (int i = 0; i < 300; i++) { /* 30 s */
        char *v = th_ch_query(ch, "SELECT 1");
        bool up = v && strcmp(v, "1\n") == 0;
        free(v);
        if (up)
            return 0;
        struct timespec ts = {0, 100 * 1000000L};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "th_ch: clickhouse-server did not answer on %s (see %s)\n", ch->url, log);
    return -1;
}

void th_ch_start(struct th_ch *ch, const char *extra_xml)
{
    th_ch_start_on(ch, extra_xml, 0);
}

void th_ch_start_on(struct th_ch *ch, const char *extra_xml, int tcp_port)
{
    th_require(access(CH_BIN, X_OK) == 0, "clickhouse-server is missing (scripts/install-deps.sh)");
    memset(ch, 0, sizeof *ch);
    const char *d = th_tmpdir("ch");
    th_require(d != NULL, "no temporary directory");
    snprintf(ch->dir, sizeof ch->dir, "%s", d);
    ch->http_port = th_free_port();
    ch->tcp_port = tcp_port ? tcp_port : th_free_port();
    ch->interserver_port = th_free_port();
    snprintf(ch->url, sizeof ch->url, "http://127.0.0.1:%d", ch->http_port);
    snprintf(ch->password_file, sizeof ch->password_file, "%s/password", ch->dir);
    char path[320], *xml = NULL;
    int n = asprintf(
        &xml,
        "<?xml version=\"1.0\"?>\n<yandex>\n"
        " <logger><level>warning</level><log>%1$s/server.log</log>"
        "<errorlog>%1$s/err.log</errorlog><console>0</console></logger>\n"
        " <http_port>%2$d</http_port><tcp_port>%3$d</tcp_port>"
        "<interserver_http_port>%4$d</interserver_http_port>\n"
        " <listen_host>127.0.0.1</listen_host>\n"
        " <path>%1$s/data/</path><tmp_path>%1$s/tmp/</tmp_path>"
        "<user_files_path>%1$s/user_files/</user_files_path>"
        "<format_schema_path>%1$s/format_schemas/</format_schema_path>\n"
        " <mark_cache_size>5368709120</mark_cache_size><max_concurrent_queries>50"
        "</max_concurrent_queries>\n"
        " <users_config>users.xml</users_config><default_profile>default</default_profile>"
        "<default_database>default</default_database><timezone>UTC</timezone>\n%5$s</yandex>\n",
        ch->dir, ch->http_port, ch->tcp_port, ch->interserver_port, extra_xml ? extra_xml : "");
    th_require(n > 0, "out of memory");
    snprintf(path, sizeof path, "%s/config.xml", ch->dir);
    int rc = write_file(path, xml);
    free(xml);
    snprintf(path, sizeof path, "%s/users.xml", ch->dir);
    rc |= write_file(path, "<?xml version=\"1.0\"?>\n<yandex>\n"
                           " <profiles><default><max_memory_usage>2000000000</max_memory_usage>"
                           "</default></profiles>\n"
                           " <users><default><password>" TH_CH_PASSWORD "</password>"
                           "<networks><ip>127.0.0.1</ip></networks><profile>default</profile>"
                           "<quota>default</quota></default></users>\n"
                           " <quotas><default></default></quotas>\n</yandex>\n");
    rc |= write_file(ch->password_file, TH_CH_PASSWORD "\n");
    rc |= chmod(ch->password_file, 0600); /* a secret file: cfg_load_secret refuses others' */
    th_require(rc == 0, "cannot write the ClickHouse config");
    if (g_n == 0)
        atexit(stop_all);
    if (g_n < 4)
        g_started[g_n++] = ch;
    if (spawn(ch) != 0)
        fail_msg("clickhouse-server did not start");
}

void th_ch_stop(struct th_ch *ch)
{
    if (ch->pid > 0)
        th_stop(ch->pid, 10000);
    ch->pid = 0;
}

int th_ch_restart(struct th_ch *ch)
{
    th_ch_stop(ch);
    return spawn(ch);
}

char *th_ch_query(const struct th_ch *ch, const char *sql)
{
    char url[128], err[300];
    snprintf(url, sizeof url, "%s/?user=default&password=%s", ch->url, TH_CH_PASSWORD);
    struct httpc_req rq = {.url = url,
                           .body = sql,
                           .len = strlen(sql),
                           .content_type = "text/plain",
                           .timeout_ms = 30000,
                           .max_response = (size_t)1 << 28};
    struct httpc_response resp;
    if (httpc_do(&rq, &resp, err, sizeof err) != 0)
        return NULL;
    if (resp.status != 200) {
        fprintf(stderr, "th_ch_query: %s: HTTP %d: %s\n", sql, resp.status,
                resp.body ? resp.body : "");
        httpc_response_free(&resp);
        return NULL;
    }
    char *out = resp.body ? resp.body : strdup("");
    return out;
}

long long th_ch_num(const struct th_ch *ch, const char *sql)
{
    char *v = th_ch_query(ch, sql);
    if (!v)
        fail_msg("clickhouse: %s failed", sql);
    char *end;
    long long n = strtoll(v, &end, 10);
    if (end == v)
        fail_msg("clickhouse: %s answered \"%s\"", sql, v);
    free(v);
    return n;
}
