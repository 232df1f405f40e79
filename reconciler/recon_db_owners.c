/* A window's owner rows, packed one row per site pair (sql/022): the window's distinct owners
 * numbered in `owners` (new ones added), then one attribution_packed row per pair with the
 * owners' numbers and bytes in recon.c's order, written through recon_db_diff.c. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_db_internal.h"

#define OWNER_FIELDS 8
#define OWNER_COLS   "source, workflow, user_name, program, host, namespace, pod, container_name"

static void owner_fields(const struct recon_rollup *r, const char *f[OWNER_FIELDS])
{
    f[0] = r->source;
    f[1] = r->workflow;
    f[2] = r->user;
    f[3] = r->program;
    f[4] = r->host;
    f[5] = r->kube.ns;
    f[6] = r->kube.pod;
    f[7] = r->kube.container;
}

struct owner_set {
    const struct recon_rollup *rows; /* res->rollup */
    size_t *first;                   /* per distinct owner: a rollup row that has it */
};

/* of[i]: the distinct owner of rollup row i, numbered in order of first appearance from
 * recon_run's owner numbers (recon_rollup.owner); s->first, *n: the distinct owners. */
static int distinct_owners(const struct recon_result *res, struct owner_set *s, size_t *of,
                           size_t *n, char *err, size_t errlen)
{
    size_t *num = malloc((res->n_owners + 1) * sizeof *num);
    if (!num) {
        snprintf(err, errlen, "writing attribution_packed: out of memory");
        return -1;
    }
    for (size_t k = 0; k < res->n_owners; k++)
        num[k] = SIZE_MAX;
    *n = 0;
    for (size_t i = 0; i < res->n_rollup; i++) {
        uint32_t k = res->rollup[i].owner;
        if (k >= res->n_owners) {
            snprintf(err, errlen, "writing attribution_packed: row %zu's owner %u of %zu", i,
                     (unsigned)k, res->n_owners);
            free(num);
            return -1;
        }
        if (num[k] == SIZE_MAX) {
            num[k] = *n;
            s->first[(*n)++] = i;
        }
        of[i] = num[k];
    }
    free(num);
    return 0;
}

/* The owners whose last day (sql/029) is before the window's get the window's; ids: "{1,2}". */
static int stamp_owners(PGconn *db, const char *from, const char *ids, char *err, size_t errlen)
{
    const char *p[] = {from, ids};
    return rdb_run(db, "stamping the window's owners",
                   "UPDATE owners SET last_day = ($1::timestamptz AT TIME ZONE 'UTC')::date"
                   " WHERE id = ANY ($2::int[])"
                   " AND last_day < ($1::timestamptz AT TIME ZONE 'UTC')::date",
                   2, p, NULL, err, errlen);
}

/* ids[k]: the number in `owners` of distinct owner k, new owners added in key order (two
 * reconciliations adding the same new owners wait on each other instead of deadlocking), every
 * one stamped with the window's day (sql/029). Holds 'wanledger.owners' shared until the
 * transaction ends, so retention's prune cannot delete an owner this window is about to use. */
static int number_owners(PGconn *db, const struct owner_set *s, size_t n, const char *from,
                         int32_t *ids, char *err, size_t errlen)
{
    static const char join[] =
        "(o.source, o.workflow, o.user_name, o.program, o.host, o.namespace, o.pod, "
        "o.container_name) = (k.source, k.workflow, k.user_name, k.program, k.host, "
        "k.namespace, k.pod, k.container_name)";
    static const char what[] = "numbering the window's owners";
    char sql[1024];
    if (rdb_run(db, what, "SELECT pg_advisory_xact_lock_shared(hashtext('wanledger.owners'))", 0,
                NULL, NULL, err, errlen) ||
        rdb_run(db, what,
                "CREATE TEMP TABLE IF NOT EXISTS wl_owner_keys (ord integer NOT NULL, source text, "
                "workflow text, user_name text, program text, host text, namespace text, pod text, "
                "container_name text) ON COMMIT DELETE ROWS",
                0, NULL, NULL, err, errlen))
        return -1;
    struct rdb_sbuf b = {0}, stale = {0};
    rdb_sb_bin_begin(&b);
    for (size_t k = 0; k < n; k++) {
        const char *f[OWNER_FIELDS];
        owner_fields(&s->rows[s->first[k]], f);
        rdb_sb_be(&b, 1 + OWNER_FIELDS, 2);
        rdb_sb_be(&b, 4, 4);
        rdb_sb_be(&b, (uint32_t)k, 4);
        for (int j = 0; j < OWNER_FIELDS; j++)
            rdb_sb_bin_text(&b, f[j]);
    }
    rdb_sb_bin_end(&b);
    int rc = -1;
    if (b.oom) {
        snprintf(err, errlen, "%s: out of memory", what);
        goto out;
    }
    if (rdb_copy_in(db, "COPY wl_owner_keys (ord, " OWNER_COLS ") FROM STDIN (FORMAT binary)", &b,
                    err, errlen))
        goto out;
    snprintf(sql, sizeof sql,
             "INSERT INTO owners (" OWNER_COLS ", last_day) SELECT " OWNER_COLS
             ", ($1::timestamptz AT TIME ZONE 'UTC')::date FROM wl_owner_keys k "
             "WHERE NOT EXISTS (SELECT 1 FROM owners o WHERE %s) ORDER BY " OWNER_COLS
             " ON CONFLICT DO NOTHING",
             join);
    const char *p[] = {from};
    if (rdb_run(db, what, sql, 1, p, NULL, err, errlen))
        goto out;
    snprintf(sql, sizeof sql,
             "SELECT k.ord, o.id, o.last_day < ($1::timestamptz AT TIME ZONE 'UTC')::date "
             "FROM wl_owner_keys k JOIN owners o ON %s",
             join);
    PGresult *r = rdb_q(db, what, err, errlen, sql, 1, p);
    if (!r)
        goto out;
    if ((size_t)PQntuples(r) != n) {
        snprintf(err, errlen, "%s: %d numbers for %zu owners", what, PQntuples(r), n);
        PQclear(r);
        goto out;
    }
    for (int i = 0; i < PQntuples(r); i++) {
        long long ord = atoll(PQgetvalue(r, i, 0));
        if (ord < 0 || (size_t)ord >= n) {
            snprintf(err, errlen, "%s: owner %lld of %zu", what, ord, n);
            PQclear(r);
            goto out;
        }
        ids[ord] = (int32_t)atol(PQgetvalue(r, i, 1));
        if (PQgetvalue(r, i, 2)[0] == 't') { /* used before, not since the window's day */
            rdb_sb_add(&stale, stale.n ? "," : "{", 1);
            rdb_sb_add(&stale, PQgetvalue(r, i, 1), strlen(PQgetvalue(r, i, 1)));
        }
    }
    PQclear(r);
    if (stale.n) {
        rdb_sb_add(&stale, "}", 2); /* with its NUL */
        if (stale.oom) {
            snprintf(err, errlen, "%s: out of memory", what);
            goto out;
        }
        if (stamp_owners(db, from, stale.p, err, errlen))
            goto out;
    }
    rc = 0;
out:
    free(b.p);
    free(stale.p);
    return rc;
}

/* The window's pair rows as binary COPY data of attribution_packed; true when they come in the
 * primary key's order (see fill_cells in recon_db_write.c). */
static bool fill_packed(struct rdb_sbuf *b, const struct cfg *cfg, int64_t ws,
                        const struct recon_result *res, const size_t *of, const int32_t *ids,
                        size_t *n_pairs)
{
    bool ordered = true;
    *n_pairs = 0;
    rdb_sb_bin_begin(b);
    int64_t ws_pg = ws - RDB_PG_EPOCH_OFFSET_US;
    for (size_t i = 0; i < res->n_rollup;) {
        const struct recon_rollup *r = &res->rollup[i];
        size_t e = i + 1;
        while (e < res->n_rollup && res->rollup[e].src_site == r->src_site &&
               res->rollup[e].dst_site == r->dst_site)
            e++;
        if (*n_pairs && ordered) {
            const struct recon_rollup *p = &res->rollup[i - 1];
            int o = rdb_site_cmp(cfg, p->src_site, r->src_site);
            ordered = (o ? o : rdb_site_cmp(cfg, p->dst_site, r->dst_site)) < 0;
        }
        rdb_sb_be(b, 5, 2);
        rdb_sb_be(b, 8, 4);
        rdb_sb_be(b, (uint64_t)ws_pg, 8);
        rdb_sb_bin_text(b, rdb_site_name(cfg, r->src_site));
        rdb_sb_bin_text(b, rdb_site_name(cfg, r->dst_site));
        rdb_sb_array_head(b, e - i, (e - i) * 8, 23);
        for (size_t k = i; k < e; k++) {
            rdb_sb_be(b, 4, 4);
            rdb_sb_be(b, (uint32_t)ids[of[k]], 4);
        }
        rdb_sb_array_head(b, e - i, (e - i) * 12, 20);
        for (size_t k = i; k < e; k++) {
            rdb_sb_be(b, 8, 4);
            rdb_sb_be(b, res->rollup[k].bytes, 8);
        }
        (*n_pairs)++;
        i = e;
    }
    rdb_sb_bin_end(b);
    return ordered;
}

/* The signed changed pair rows' elements (%s: the temp table, or the window's rows as a
 * subquery), summed per hour, pair and owner into attribution_rollup_hourly, for the hours
 * folded already (sql/020: attribution_hours); in key order, as the cells' (recon_db_write.c). */
static const char packed_hourly[] =
    "INSERT INTO attribution_rollup_hourly AS h (hour_start, src_site, dst_site, source, "
    "workflow, user_name, program, host, namespace, pod, container_name, windows, bytes) "
    "SELECT date_bin('1 hour', p.window_start, timestamptz 'epoch'), p.src_site, p.dst_site, "
    "o.source, o.workflow, o.user_name, o.program, o.host, o.namespace, o.pod, o.container_name, "
    "sum(p.wl_sign), sum(p.wl_sign * u.bytes) FROM (SELECT * FROM %s) p CROSS JOIN LATERAL "
    "unnest(p.owner_ids, p.bytes) AS u(owner_id, bytes) JOIN owners o ON o.id = u.owner_id "
    "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 "
    "ON CONFLICT (hour_start, src_site, dst_site, source, workflow, user_name, program, host, "
    "namespace, pod, container_name) DO UPDATE SET windows = h.windows + EXCLUDED.windows, "
    "bytes = h.bytes + EXCLUDED.bytes";

static const struct rdb_diff_table packed_table = {
    "attribution_packed",
    "window_start, src_site, dst_site, owner_ids, bytes",
    "window_start, src_site, dst_site",
    "owner_ids, bytes",
    true,
    packed_hourly,
    "attribution_hours",
    true,
    false, /* set per window: fill_packed */
    NULL,
    "attribution_rollup_hourly",
};

int rdb_write_owners(PGconn *db, const struct cfg *cfg, const char *from, int64_t ws,
                     const struct recon_result *res, long long *changed, char *err, size_t errlen)
{
    size_t n_rows = res->n_rollup, n_owners = 0, n_pairs = 0;
    size_t *of = malloc((n_rows ? n_rows : 1) * sizeof *of);
    size_t *first = malloc((n_rows ? n_rows : 1) * sizeof *first);
    int32_t *ids = malloc((n_rows ? n_rows : 1) * sizeof *ids);
    struct rdb_sbuf b = {0};
    struct owner_set s = {res->rollup, first};
    struct rdb_diff_table t = packed_table;
    struct rdb_diff_counts dc;
    int rc = -1;
    if (!of || !first || !ids)
        goto oom;
    if (distinct_owners(res, &s, of, &n_owners, err, errlen))
        goto out;
    if (n_owners && number_owners(db, &s, n_owners, from, ids, err, errlen))
        goto out;
    t.ordered = fill_packed(&b, cfg, ws, res, of, ids, &n_pairs);
    if (b.oom)
        goto oom;
    if (rdb_diff_write(db, &t, from, &b, (long long)n_pairs, &dc, err, errlen))
        goto out;
    *changed += dc.written + dc.removed;
    rc = 0;
    goto out;
oom:
    snprintf(err, errlen, "writing attribution_packed: out of memory");
out:
    free(b.p);
    free(of);
    free(first);
    free(ids);
    return rc;
}
