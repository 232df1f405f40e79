/* Helper connections of one reconciliation (recon_db_internal.h): the split load's readers
 * (recon_db_flows_split.c) and the side write of the owner and dependency rows
 * (recon_db_side.c), connected with the main connection's own parameters. */
#include <stdlib.h>
#include <string.h>

#include "recon_db_internal.h"

const char *rdb_load_helper_conninfo;

int rdb_conn_params_of(PGconn *db, struct rdb_conn_params *p)
{
    memset(p, 0, sizeof *p);
    p->opts = PQconninfo(db);
    size_t n = 0;
    for (PQconninfoOption *o = p->opts; o && o->keyword; o++)
        n += o->val != NULL;
    p->keys = calloc(n + 1, sizeof *p->keys);
    p->vals = calloc(n + 1, sizeof *p->vals);
    if (!p->opts || !p->keys || !p->vals) {
        rdb_conn_params_free(p);
        return -1;
    }
    n = 0;
    for (PQconninfoOption *o = p->opts; o->keyword; o++)
        if (o->val) {
            p->keys[n] = o->keyword;
            p->vals[n++] = o->val;
        }
    return 0;
}

PGconn *rdb_conn_helper(const struct rdb_conn_params *p)
{
    return rdb_load_helper_conninfo ? PQconnectdb(rdb_load_helper_conninfo)
                                    : PQconnectdbParams(p->keys, p->vals, 0);
}

void rdb_conn_params_free(struct rdb_conn_params *p)
{
    PQconninfoFree(p->opts);
    free(p->keys);
    free(p->vals);
    memset(p, 0, sizeof *p);
}
