/* Straight-to-shard inserts (see chshard.h). */
#include "chshard.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chhash.h"
#include "chstore.h"

uint64_t chshard_key(const char *agent_id, size_t len, uint64_t seq)
{
    return chhash_city64_str_u64(agent_id, len, seq);
}

size_t chshard_of(const struct chshard *m, uint64_t key)
{
    return m->slot[key % m->n_slots];
}

void chshard_free(struct chshard *m)
{
    free(m->node);
    free(m->slot);
    memset(m, 0, sizeof *m);
}

/* The rows of a TabSeparated answer, as unsigned numbers per line (first column first). */
static int query_rows(const struct cfg_clickhouse *node, const char *sql, unsigned long *cells,
                      size_t ncols, size_t max_rows, size_t *rows, char *err, size_t errlen)
{
    struct httpc_response r;
    if (chstore_exec(node, sql, NULL, 0, NULL, &r, err, errlen) < 0)
        return -1;
    *rows = 0;
    const char *p = r.body ? r.body : "";
    while (*p && *rows < max_rows) {
        for (size_t c = 0; c < ncols; c++) {
            char *end;
            cells[*rows * ncols + c] = strtoul(p, &end, 10);
            p = end + (*end == '\t');
        }
        p += strcspn(p, "\n");
        p += *p == '\n';
        (*rows)++;
    }
    httpc_response_free(&r);
    return 0;
}

#define MAX_SHARDS 256

int chshard_resolve(const struct cfg_clickhouse *ch, struct chshard *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    size_t n = ch->n_shard_urls;
    if (n == 0 || n > MAX_SHARDS || !ch->cluster) {
        snprintf(err, errlen, "clickhouse shards: %zu shard URLs (1..%d, with a cluster)", n,
                 MAX_SHARDS);
        return -1;
    }
    m->node = calloc(n, sizeof *m->node);
    if (!m->node) {
        snprintf(err, errlen, "clickhouse shards: out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        m->node[i] = *ch;
        m->node[i].url = ch->shard_urls[i];
    }
    m->n = n;
    char sql[512];
    /* shard number, weight and replica count, in shard order */
    snprintf(sql, sizeof sql,
             "SELECT shard_num, any(shard_weight), count() FROM system.clusters WHERE cluster ="
             " '%s' GROUP BY shard_num ORDER BY shard_num FORMAT TabSeparated",
             ch->cluster);
    unsigned long cells[(MAX_SHARDS + 1) * 3];
    size_t rows = 0;
    if (query_rows(&m->node[0], sql, cells, 3, MAX_SHARDS + 1, &rows, err, errlen) < 0)
        goto fail;
    if (rows != n) {
        snprintf(err, errlen,
                 "analytics.clickhouse.shard_urls: %zu URLs, but cluster %s has %zu shards (%s)", n,
                 ch->cluster, rows, ch->shard_urls[0]);
        goto fail;
    }
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (cells[i * 3] != i + 1 || cells[i * 3 + 2] != 1) {
            snprintf(err, errlen,
                     "analytics.clickhouse.shard_urls: cluster %s's shard %lu has %lu replicas;"
                     " straight-to-shard inserts need one replica per shard",
                     ch->cluster, cells[i * 3], cells[i * 3 + 2]);
            goto fail;
        }
        total += cells[i * 3 + 1];
    }
    if (total == 0 || total > 1000000) {
        snprintf(err, errlen, "clickhouse shards: cluster %s's weights add up to %zu", ch->cluster,
                 total);
        goto fail;
    }
    m->slot = malloc(total * sizeof *m->slot);
    if (!m->slot) {
        snprintf(err, errlen, "clickhouse shards: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n; i++)
        for (unsigned long w = 0; w < cells[i * 3 + 1]; w++)
            m->slot[m->n_slots++] = (uint32_t)i;
    /* every URL is the server its shard calls local */
    snprintf(sql, sizeof sql,
             "SELECT shard_num FROM system.clusters WHERE cluster = '%s' AND is_local"
             " FORMAT TabSeparated",
             ch->cluster);
    for (size_t i = 0; i < n; i++) {
        unsigned long local[MAX_SHARDS];
        size_t nl = 0;
        if (query_rows(&m->node[i], sql, local, 1, MAX_SHARDS, &nl, err, errlen) < 0)
            goto fail;
        if (nl != 1 || local[0] != i + 1) {
            snprintf(err, errlen,
                     "analytics.clickhouse.shard_urls[%zu]: %s is %s%lu of cluster %s, not shard"
                     " %zu (list every shard's URL in the cluster's order)",
                     i, ch->shard_urls[i], nl == 1 ? "shard " : "not one shard (local to ",
                     nl == 1 ? local[0] : (unsigned long)nl, ch->cluster, i + 1);
            goto fail;
        }
    }
    return 0;
fail:
    chshard_free(m);
    return -1;
}

struct one_insert {
    const struct cfg_clickhouse *node;
    const char *sql, *params, *data;
    size_t len;
    int rc;
    char err[400];
    pthread_t th;
    bool started;
};

static void *insert_one(void *arg)
{
    struct one_insert *o = arg;
    struct httpc_response r;
    o->rc = chstore_exec(o->node, o->sql, o->data, o->len, o->params, &r, o->err, sizeof o->err);
    if (o->rc == 0)
        httpc_response_free(&r);
    return NULL;
}

int chshard_insert(const struct chshard *m, const char *sql, const char *url_params,
                   char *const *data, const size_t *len, char *err, size_t errlen)
{
    struct one_insert *o = calloc(m->n, sizeof *o);
    if (!o) {
        snprintf(err, errlen, "clickhouse shards: out of memory");
        return -1;
    }
    size_t last = m->n;
    for (size_t i = 0; i < m->n; i++) {
        o[i] = (struct one_insert){
            .node = &m->node[i], .sql = sql, .params = url_params, .data = data[i], .len = len[i]};
        if (len[i])
            last = i;
    }
    /* every shard with rows but the last on a thread of its own, the last on this one */
    for (size_t i = 0; i < m->n; i++)
        if (len[i] && i != last)
            o[i].started = pthread_create(&o[i].th, NULL, insert_one, &o[i]) == 0;
    for (size_t i = 0; i < m->n; i++)
        if (len[i] && (i == last || !o[i].started))
            insert_one(&o[i]);
    int rc = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (o[i].started)
            pthread_join(o[i].th, NULL);
        if (len[i] && o[i].rc != 0 && rc == 0) {
            snprintf(err, errlen, "shard %zu (%s): %s", i + 1, m->node[i].url, o[i].err);
            rc = -1;
        }
    }
    free(o);
    return rc;
}
