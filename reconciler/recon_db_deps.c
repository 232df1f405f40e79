/* Writing one window's dependency map (dependency_rollup, packed per local site and owner in
 * dependency_packed since sql/023; docs/design.md "Dependency map"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_db_internal.h"

static const struct rdb_diff_table deps_table = {
    "dependency_packed",
    "window_start, local_site, workflow, user_name, program, remote_site, kind, endpoint, "
    "bytes_out, bytes_in, connections",
    "window_start, local_site, workflow, user_name, program",
    "remote_site, kind, endpoint, bytes_out, bytes_in, connections",
    true, /* binary COPY: no timestamps or numbers parsed by the server */
    NULL,
    NULL,
    true,
    false, /* set per window: fill_deps */
    NULL,
    NULL,
};

static bool same_group(const struct recon_dep *a, const struct recon_dep *b)
{
    return a->local_site == b->local_site && strcmp(a->workflow, b->workflow) == 0 &&
           strcmp(a->user, b->user) == 0 && strcmp(a->program, b->program) == 0;
}

static const char *dep_text(const struct cfg *cfg, const struct recon_dep *d, int k)
{
    return k == 0   ? rdb_site_name(cfg, d->remote_site)
           : k == 1 ? recon_dep_kind_name(d->kind)
                    : d->endpoint;
}

static uint64_t dep_num(const struct recon_dep *d, int k)
{
    return k == 0 ? d->bytes_out : k == 1 ? d->bytes_in : d->connections;
}

/* The window's dependency rows packed per local site and owner (sql/023), in recon_deps.c's
 * order (local site, owner, bytes descending), as binary COPY data of deps_table.cols; true
 * when the groups come in the primary key's order (the sites listed in name order). */
static bool fill_deps(struct rdb_sbuf *b, const struct cfg *cfg, int64_t ws,
                      const struct recon_result *res, size_t *n_groups)
{
    bool ordered = true;
    *n_groups = 0;
    rdb_sb_bin_begin(b);
    uint64_t ws_pg = (uint64_t)(ws - RDB_PG_EPOCH_OFFSET_US);
    for (size_t i = 0; i < res->n_deps;) {
        const struct recon_dep *d = &res->deps[i];
        size_t e = i + 1;
        while (e < res->n_deps && same_group(d, &res->deps[e]))
            e++;
        if (i && ordered) {
            const struct recon_dep *p = &res->deps[i - 1];
            int o = rdb_site_cmp(cfg, p->local_site, d->local_site);
            if (!o)
                o = strcmp(p->workflow, d->workflow);
            if (!o)
                o = strcmp(p->user, d->user);
            if (!o)
                o = strcmp(p->program, d->program);
            ordered = o < 0;
        }
        const char *key[] = {rdb_site_name(cfg, d->local_site), d->workflow, d->user, d->program};
        rdb_sb_be(b, 11, 2);
        rdb_sb_be(b, 8, 4);
        rdb_sb_be(b, ws_pg, 8);
        for (size_t k = 0; k < sizeof key / sizeof key[0]; k++)
            rdb_sb_bin_text(b, key[k]);
        for (int k = 0; k < 3; k++) {
            size_t bytes = 0;
            for (size_t j = i; j < e; j++)
                bytes += 4 + strlen(dep_text(cfg, &res->deps[j], k));
            rdb_sb_array_head(b, e - i, bytes, 25);
            for (size_t j = i; j < e; j++)
                rdb_sb_bin_text(b, dep_text(cfg, &res->deps[j], k));
        }
        for (int k = 0; k < 3; k++) {
            rdb_sb_array_head(b, e - i, (e - i) * 12, 20);
            for (size_t j = i; j < e; j++) {
                rdb_sb_be(b, 8, 4);
                rdb_sb_be(b, dep_num(&res->deps[j], k), 8);
            }
        }
        (*n_groups)++;
        i = e;
    }
    rdb_sb_bin_end(b);
    return ordered;
}

int rdb_write_deps(PGconn *db, const struct cfg *cfg, int64_t ws, const struct recon_result *res,
                   long long *changed, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    struct rdb_sbuf b = {0};
    struct rdb_diff_table t = deps_table;
    size_t n_groups = 0;
    t.ordered = fill_deps(&b, cfg, ws, res, &n_groups);
    struct rdb_diff_counts dc = {0};
    int rc = -1;
    if (b.oom) {
        snprintf(err, errlen, "writing dependency_packed: out of memory");
    } else {
        /* only the rows that differ from the stored ones (recon_db_diff.c) */
        rc = rdb_diff_write(db, &t, from, &b, (long long)n_groups, &dc, err, errlen);
        *changed += dc.written + dc.removed;
    }
    free(b.p);
    return rc;
}
