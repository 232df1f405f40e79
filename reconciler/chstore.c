/* ClickHouse over HTTP: statements, schema (see chstore.h). */
#include "chstore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chhttp.h"
#include "flow_row.h"

const char *chstore_table(const struct cfg_clickhouse *ch)
{
    static _Thread_local char t[160];
    snprintf(t, sizeof t, "%s.flow_records", ch->database);
    return t;
}

int chstore_exec(const struct cfg_clickhouse *ch, const char *sql, const char *data, size_t len,
                 const char *url_params, struct httpc_response *resp, char *err, size_t errlen)
{
    return chhttp_exec(ch, sql, data, len, url_params, resp, err, errlen);
}

static int exec_simple(const struct cfg_clickhouse *ch, const char *sql, char *err, size_t errlen)
{
    struct httpc_response r;
    if (chstore_exec(ch, sql, NULL, 0, NULL, &r, err, errlen) < 0)
        return -1;
    httpc_response_free(&r);
    return 0;
}

/* The schema upgrade of a table created by an older version: the columns added to flow_row.h
 * since the first one (FR_NAMESPACE.. from sql/015_kube_owner.sql), added where
 * system.columns does not list them (18.16 has no ADD COLUMN IF NOT EXISTS); old parts read
 * them as the type's default (''). */
static int add_later_columns(const struct cfg_clickhouse *ch, const char *table, char *err,
                             size_t errlen)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT name FROM system.columns WHERE database = '%s' AND table = '%s'"
             " FORMAT TabSeparated",
             ch->database, table);
    struct httpc_response r;
    if (chstore_exec(ch, sql, NULL, 0, NULL, &r, err, errlen) < 0)
        return -1;
    int rc = 0;
    for (int c = FR_NAMESPACE; c < FR_NCOLS && rc == 0; c++) {
        const char *n = flow_cols[c].name, *b = r.body ? r.body : "";
        size_t len = strlen(n);
        bool have = false;
        for (const char *p = b; *p && !have; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : "")
            have = strncmp(p, n, len) == 0 && (p[len] == '\n' || p[len] == 0);
        if (have)
            continue;
        snprintf(sql, sizeof sql, "ALTER TABLE %s.%s ADD COLUMN %s %s", ch->database, table, n,
                 flow_cols[c].ch_type);
        rc = exec_simple(ch, sql, err, errlen);
    }
    httpc_response_free(&r);
    return rc;
}

static int ensure_node(const struct cfg_clickhouse *ch, char *err, size_t errlen)
{
    char cols[2048], sql[4096];
    if (flow_row_list(cols, sizeof cols, FRL_CH_DEFS, FLOW_ROW_ALL, NULL, NULL) < 0) {
        snprintf(err, errlen, "clickhouse: column list too long");
        return -1;
    }
    snprintf(sql, sizeof sql, "CREATE DATABASE IF NOT EXISTS %s", ch->database);
    if (exec_simple(ch, sql, err, errlen) < 0)
        return -1;
    const char *db = ch->database;
    snprintf(sql, sizeof sql,
             "CREATE TABLE IF NOT EXISTS %s.%s (%s) ENGINE = ReplacingMergeTree"
             " PARTITION BY toYYYYMMDD(window_start) ORDER BY (window_start, agent_id, seq, idx)",
             db, ch->cluster ? "flow_records_local" : "flow_records", cols);
    if (exec_simple(ch, sql, err, errlen) < 0 ||
        add_later_columns(ch, ch->cluster ? "flow_records_local" : "flow_records", err, errlen) < 0)
        return -1;
    if (!ch->cluster)
        return 0;
    snprintf(sql, sizeof sql,
             "CREATE TABLE IF NOT EXISTS %s.flow_records AS %s.flow_records_local"
             " ENGINE = Distributed(%s, %s, flow_records_local, cityHash64(agent_id, seq))",
             db, db, ch->cluster, db);
    if (exec_simple(ch, sql, err, errlen) < 0)
        return -1;
    return add_later_columns(ch, "flow_records", err, errlen);
}

/* The configured node, then every shard of shard_urls (each with its own URL). */
static int on_every_node(const struct cfg_clickhouse *ch,
                         int (*fn)(const struct cfg_clickhouse *, void *, char *, size_t),
                         void *arg, char *err, size_t errlen)
{
    if (fn(ch, arg, err, errlen) < 0)
        return -1;
    for (size_t i = 0; i < ch->n_shard_urls; i++) {
        struct cfg_clickhouse node = *ch;
        node.url = ch->shard_urls[i];
        if (strcmp(node.url, ch->url) != 0 && fn(&node, arg, err, errlen) < 0)
            return -1;
    }
    return 0;
}

static int ensure_fn(const struct cfg_clickhouse *ch, void *arg, char *err, size_t errlen)
{
    (void)arg;
    return ensure_node(ch, err, errlen);
}

int chstore_ensure_schema(const struct cfg_clickhouse *ch, char *err, size_t errlen)
{
    return on_every_node(ch, ensure_fn, NULL, err, errlen);
}

struct prune_arg {
    int keep_days;
    int64_t now_us;
    int *dropped;
};

static int prune_node(const struct cfg_clickhouse *ch, void *arg, char *err, size_t errlen)
{
    const struct prune_arg *a = arg;
    int keep_days = a->keep_days;
    int64_t now_us = a->now_us;
    int *dropped = a->dropped;
    const char *table = ch->cluster ? "flow_records_local" : "flow_records";
    time_t cut = (time_t)(now_us / 1000000) - (time_t)keep_days * 86400;
    struct tm tm;
    gmtime_r(&cut, &tm);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT DISTINCT partition FROM system.parts WHERE database = '%s' AND table = '%s'"
             " AND active AND toUInt32(partition) < %04d%02d%02d ORDER BY partition",
             ch->database, table, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
    struct httpc_response r;
    if (chstore_exec(ch, sql, NULL, 0, NULL, &r, err, errlen) < 0)
        return -1;
    int rc = 0;
    for (char *line = r.body, *next; line && *line && rc == 0; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        if (strspn(line, "0123456789") != 8 || line[8]) /* toYYYYMMDD: 8 digits */
            continue;
        snprintf(sql, sizeof sql, "ALTER TABLE %s.%s DROP PARTITION %s", ch->database, table, line);
        rc = exec_simple(ch, sql, err, errlen);
        if (rc == 0)
            (*dropped)++;
    }
    httpc_response_free(&r);
    return rc;
}

int chstore_prune(const struct cfg_clickhouse *ch, int keep_days, int64_t now_us, int *dropped,
                  char *err, size_t errlen)
{
    *dropped = 0;
    struct prune_arg a = {keep_days, now_us, dropped};
    return on_every_node(ch, prune_node, &a, err, errlen);
}
