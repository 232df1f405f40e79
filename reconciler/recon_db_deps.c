/* Writing one window's dependency map (dependency_rollup; docs/design.md "Dependency map"). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "recon_db_internal.h"

int rdb_write_deps(PGconn *db, const struct cfg *cfg, int64_t ws, const struct recon_result *res,
                   char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], tsbuf[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    tm_format_rfc3339(ws, tsbuf);
    const char *params[] = {from};
    PGresult *r =
        rdb_q(db, "clearing the window's dependency map", err, errlen,
              "DELETE FROM dependency_rollup WHERE window_start = $1::timestamptz", 1, params);
    if (!r)
        return -1;
    PQclear(r);
    if (res->n_deps == 0)
        return 0;
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
    int rc = -1;
    if (b.oom)
        snprintf(err, errlen, "writing dependency_rollup: out of memory");
    else
        rc = rdb_copy_in(db,
                         "COPY dependency_rollup (window_start, local_site, workflow, user_name, "
                         "program, remote_site, kind, endpoint, bytes_out, bytes_in, connections) "
                         "FROM STDIN",
                         &b, err, errlen);
    free(b.p);
    return rc;
}
