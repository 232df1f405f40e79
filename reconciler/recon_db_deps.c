/* Writing one window's dependency map (dependency_rollup; docs/design.md "Dependency map"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "recon_db_internal.h"

static const struct rdb_diff_table deps_table = {
    "dependency_rollup",
    "window_start, local_site, workflow, user_name, program, remote_site, kind, endpoint, "
    "bytes_out, bytes_in, connections",
    "window_start, local_site, workflow, user_name, program, remote_site, kind, endpoint",
    "bytes_out, bytes_in, connections",
    false,
    NULL,
    NULL,
    false, /* no primary key since sql/020 */
};

int rdb_write_deps(PGconn *db, const struct cfg *cfg, int64_t ws, const struct recon_result *res,
                   long long *changed, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], tsbuf[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    tm_format_rfc3339(ws, tsbuf);
    struct rdb_sbuf b = {0};
    for (size_t i = 0; i < res->n_deps; i++) {
        const struct recon_dep *d = &res->deps[i];
        const char *fields[] = {rdb_site_name(cfg, d->local_site),
                                d->workflow,
                                d->user,
                                d->program,
                                rdb_site_name(cfg, d->remote_site),
                                recon_dep_kind_name(d->kind),
                                d->endpoint};
        rdb_sb_printf(&b, "%s", tsbuf);
        for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
            rdb_sb_add(&b, "\t", 1);
            rdb_sb_copy_text(&b, fields[k]);
        }
        rdb_sb_printf(&b, "\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", d->bytes_out, d->bytes_in,
                      d->connections);
    }
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
