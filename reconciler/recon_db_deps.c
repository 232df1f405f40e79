/* Writing one window's dependency map (dependency_rollup; docs/design.md "Dependency map"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_db_internal.h"

static const struct rdb_diff_table deps_table = {
    "dependency_rollup",
    "window_start, local_site, workflow, user_name, program, remote_site, kind, endpoint, "
    "bytes_out, bytes_in, connections",
    "window_start, local_site, workflow, user_name, program, remote_site, kind, endpoint",
    "bytes_out, bytes_in, connections",
    true, /* binary COPY: no timestamps or numbers parsed by the server (500,000 rows at 5 M) */
    NULL,
    NULL,
    false, /* no primary key since sql/020 */
    false,
    NULL,
    NULL,
};

/* The window's dependency rows as binary COPY data of deps_table.cols. */
static void fill_deps(struct rdb_sbuf *b, const struct cfg *cfg, int64_t ws,
                      const struct recon_result *res)
{
    rdb_sb_add(b, "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0", 19);
    uint64_t ws_pg = (uint64_t)(ws - RDB_PG_EPOCH_OFFSET_US);
    for (size_t i = 0; i < res->n_deps; i++) {
        const struct recon_dep *d = &res->deps[i];
        const char *fields[] = {rdb_site_name(cfg, d->local_site),
                                d->workflow,
                                d->user,
                                d->program,
                                rdb_site_name(cfg, d->remote_site),
                                recon_dep_kind_name(d->kind),
                                d->endpoint};
        const uint64_t nums[] = {d->bytes_out, d->bytes_in, d->connections};
        rdb_sb_be(b, 11, 2);
        rdb_sb_be(b, 8, 4);
        rdb_sb_be(b, ws_pg, 8);
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
            size_t len = strlen(fields[k]);
            rdb_sb_be(b, len, 4);
            rdb_sb_add(b, fields[k], len);
        }
        for (size_t k = 0; k < sizeof nums / sizeof nums[0]; k++) {
            rdb_sb_be(b, 8, 4);
            rdb_sb_be(b, nums[k], 8);
        }
    }
    rdb_sb_be(b, 0xffff, 2);
}

int rdb_write_deps(PGconn *db, const struct cfg *cfg, int64_t ws, const struct recon_result *res,
                   long long *changed, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    struct rdb_sbuf b = {0};
    fill_deps(&b, cfg, ws, res);
    struct rdb_diff_counts dc = {0};
    int rc = -1;
    if (b.oom) {
        snprintf(err, errlen, "writing dependency_rollup: out of memory");
    } else {
        /* only the rows that differ from the stored ones (recon_db_diff.c) */
        rc = rdb_diff_write(db, &deps_table, from, &b, (long long)res->n_deps, &dc, err, errlen);
        *changed += dc.written + dc.removed;
    }
    free(b.p);
    return rc;
}
