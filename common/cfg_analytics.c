/* $.analytics: where raw flow records go besides PostgreSQL (docs/design.md "ClickHouse store").
 *   "analytics": {"clickhouse": {"url": "http://127.0.0.1:8123",   HTTP interface, required
 *                                "database": "wanledger",          default wanledger
 *                                "cluster": null,                  a remote_servers cluster name:
 *                                                                  a Distributed table over it
 *                                "shard_urls": [URL, ...],         with a cluster, optional: each
 *                                                                  shard's HTTP interface in the
 *                                                                  cluster's shard order (one
 *                                                                  replica per shard): inserts go
 *                                                                  straight to the shard's local
 *                                                                  table (reconciler/chshard.h)
 *                                "user": "default",                default "default"
 *                                "password_file": "ch.pass",       optional, relative to the file
 *                                "batch_rows": 1000000,            rows per INSERT (1000..10^7)
 *                                "timeout_ms": 10000}}             per HTTP request
 * Absent (or "clickhouse": null): PostgreSQL only, as before. */
#include "cfg_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* A ClickHouse identifier we put in SQL unquoted: [A-Za-z_][A-Za-z0-9_]*. */
static int plain_ident(const char *s)
{
    if (!s || !*s || isdigit((unsigned char)*s))
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return 0;
    return 1;
}

void cfg_parse_analytics(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg_clickhouse *ch = &c->cfg->clickhouse;
    memset(ch, 0, sizeof *ch);
    const cJSON *an = cfg_get_obj(c, root, "analytics", "$", 0);
    if (!an)
        return;
    static const char *const ka[] = {"clickhouse", NULL};
    cfg_check_keys(c, an, "$.analytics", ka);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(an, "clickhouse");
    if (!o || cJSON_IsNull(o))
        return;
    const char *p = "$.analytics.clickhouse";
    o = cfg_get_obj(c, an, "clickhouse", "$.analytics", 0);
    if (!o)
        return;
    static const char *const k[] = {"url",        "database",   "cluster",
                                    "shard_urls", "user",       "password_file",
                                    "batch_rows", "timeout_ms", NULL};
    cfg_check_keys(c, o, p, k);
    ch->enabled = true;
    ch->url = cfg_get_str(c, o, "url", p, 1, "");
    if (*ch->url && !cfg_valid_http_url(ch->url))
        cfg_err(c, "$.analytics.clickhouse.url", "expected an http:// or https:// URL, got \"%s\"",
                ch->url);
    size_t n = strlen(ch->url);
    while (n && ch->url[n - 1] == '/')
        ch->url[--n] = 0;
    ch->database = cfg_get_str(c, o, "database", p, 0, "wanledger");
    if (!plain_ident(ch->database))
        cfg_err(c, "$.analytics.clickhouse.database",
                "expected a name of letters, digits and _, got \"%s\"", ch->database);
    const cJSON *cl = cJSON_GetObjectItemCaseSensitive(o, "cluster");
    if (cl && !cJSON_IsNull(cl)) {
        ch->cluster = cfg_get_str(c, o, "cluster", p, 1, NULL);
        if (ch->cluster && !plain_ident(ch->cluster))
            cfg_err(c, "$.analytics.clickhouse.cluster",
                    "expected null or a name of letters, digits and _, got \"%s\"", ch->cluster);
    }
    const cJSON *su = cfg_get_arr(c, o, "shard_urls", p, 0);
    if (su && !ch->cluster)
        cfg_err(c, "$.analytics.clickhouse.shard_urls",
                "shard URLs need a cluster (\"cluster\": the remote_servers name)");
    ch->shard_urls =
        cfg_get_str_list(c, su, "$.analytics.clickhouse.shard_urls", &ch->n_shard_urls);
    for (size_t i = 0; i < ch->n_shard_urls; i++) {
        char *u = ch->shard_urls[i], jp[128];
        if (!cfg_valid_http_url(u))
            cfg_err(c, cfg_jp_idx(jp, sizeof jp, "$.analytics.clickhouse.shard_urls", (int)i),
                    "expected an http:// or https:// URL, got \"%s\"", u);
        for (size_t n = strlen(u); n && u[n - 1] == '/';)
            u[--n] = 0;
    }
    if (su && ch->n_shard_urls == 0)
        cfg_err(c, "$.analytics.clickhouse.shard_urls", "expected at least one URL");
    ch->user = cfg_get_str(c, o, "user", p, 0, "default");
    ch->password = cfg_load_secret(c, o, "password_file", p, &ch->password_file);
    ch->batch_rows = (int)cfg_get_num(c, o, "batch_rows", p, 1000, 1e7, 1000000, 1);
    ch->timeout_ms = (int)cfg_get_num(c, o, "timeout_ms", p, 100, 600000, 10000, 1);
}

void cfg_free_analytics(struct cfg *cfg)
{
    struct cfg_clickhouse *ch = &cfg->clickhouse;
    free(ch->url);
    free(ch->database);
    free(ch->cluster);
    for (size_t i = 0; i < ch->n_shard_urls; i++)
        free(ch->shard_urls[i]);
    free(ch->shard_urls);
    free(ch->user);
    if (ch->password)
        memset(ch->password, 0, strlen(ch->password));
    free(ch->password);
    free(ch->password_file);
    memset(ch, 0, sizeof *ch);
}

void cfg_dump_analytics(const struct cfg *cfg, cJSON *root)
{
    const struct cfg_clickhouse *ch = &cfg->clickhouse;
    if (!ch->enabled)
        return;
    cJSON *o = cJSON_AddObjectToObject(cJSON_AddObjectToObject(root, "analytics"), "clickhouse");
    cJSON_AddStringToObject(o, "url", ch->url);
    cJSON_AddStringToObject(o, "database", ch->database);
    if (ch->cluster)
        cJSON_AddStringToObject(o, "cluster", ch->cluster);
    else
        cJSON_AddNullToObject(o, "cluster");
    if (ch->n_shard_urls) {
        cJSON *a = cJSON_AddArrayToObject(o, "shard_urls");
        for (size_t i = 0; i < ch->n_shard_urls; i++)
            cJSON_AddItemToArray(a, cJSON_CreateString(ch->shard_urls[i]));
    }
    cJSON_AddStringToObject(o, "user", ch->user);
    if (ch->password_file) /* its file, never the password */
        cJSON_AddStringToObject(o, "password_file", ch->password_file);
    cJSON_AddNumberToObject(o, "batch_rows", ch->batch_rows);
    cJSON_AddNumberToObject(o, "timeout_ms", ch->timeout_ms);
}
