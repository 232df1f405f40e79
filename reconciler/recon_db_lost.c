/* Windows an agent could not count (recon_db_internal.h, rdb_apply_lost_spans). */
#include <stdio.h>
#include <string.h>

#include "recon_db_internal.h"

int rdb_apply_lost_spans(PGconn *db, const struct cfg *cfg, int64_t ws, struct recon_result *res,
                         size_t *n_cells, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN], to[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    rdb_fmt_ts(to, ws + (int64_t)cfg->window_seconds * TM_USEC_PER_SEC);
    const char *p[] = {from, to};
    *n_cells = 0;
    /* the spans agents reported lost and the seq gaps (reports that never arrived, sql/027)
     * that overlap the window */
    PGresult *r = rdb_q(db, "reading the agents' lost spans", err, errlen,
                        "SELECT DISTINCT unnest(sites) FROM agent_gaps"
                        " WHERE lost_from < $2::timestamptz AND lost_to > $1::timestamptz"
                        " AND lost_to > lost_from",
                        2, p);
    if (!r)
        return -1;
    int n = PQntuples(r);
    for (size_t i = 0; i < res->n_cells && n > 0; i++) {
        struct recon_cell *c = &res->cells[i];
        const char *src = rdb_site_name(cfg, c->src_site), *dst = rdb_site_name(cfg, c->dst_site);
        bool hit = false;
        for (int k = 0; k < n && !hit; k++) {
            const char *s = PQgetvalue(r, k, 0);
            hit = strcmp(s, src) == 0 || strcmp(s, dst) == 0;
        }
        /* no_counter stays: nothing was measured to compare with */
        if (!hit || c->status == CELL_NO_COUNTER)
            continue;
        c->status = CELL_INCOMPLETE;
        c->has_coverage = false; /* attributed bytes are short by what the agent lost */
        c->coverage = 0;
        (*n_cells)++;
    }
    PQclear(r);
    return 0;
}
