/* A window's flows from ClickHouse (see recon_db_internal.h): summed per connection and owner
 * where the rows are, read only when every report of the window has reached ClickHouse. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "chstore.h"
#include "recon_db_internal.h"

static void parse_inet(const char *s, struct recon_addr *a)
{
    memset(a, 0, sizeof *a);
    if (!s)
        return;
    if (inet_pton(AF_INET, s, a->addr) == 1)
        a->family = AF_INET;
    else if (inet_pton(AF_INET6, s, a->addr) == 1)
        a->family = AF_INET6;
}

static uint64_t parse_u64(const char *s)
{
    return s ? strtoull(s, NULL, 10) : 0;
}

/* The query: every column the reconciliation reads, the byte counts summed over the rows that
 * agree on all the others (one connection side of one owner), ordered by (seq, agent, idx) of
 * their first row. Order matters only where recon.c keeps the first owner it meets for a
 * connection side reported under several owners by one agent (a forked process): the
 * PostgreSQL path meets rows in heap (arrival) order, which for one agent is seq order too. */
static int build_query(const struct cfg *cfg, int64_t ws, char *sql, size_t len, int pos[FR_NCOLS])
{
    char sel[1536], grp[1024];
    size_t a = 0, g = 0;
    int k = 0;
    for (int c = 0; c < FR_NCOLS; c++) {
        pos[c] = -1;
        if (!(RDB_FLOW_COLS & RDB_FR(c)))
            continue;
        const char *n = flow_cols[c].name;
        int w = flow_cols[c].summed
                    ? snprintf(sel + a, sizeof sel - a, "%ssum(%s)", k ? ", " : "", n)
                    : snprintf(sel + a, sizeof sel - a, "%s%s", k ? ", " : "", n);
        if (w < 0 || (size_t)w >= sizeof sel - a)
            return -1;
        a += (size_t)w;
        if (!flow_cols[c].summed) {
            w = snprintf(grp + g, sizeof grp - g, "%s%s", g ? ", " : "", n);
            if (w < 0 || (size_t)w >= sizeof grp - g)
                return -1;
            g += (size_t)w;
        }
        pos[c] = k++;
    }
    int w = snprintf(sql, len,
                     "SELECT %s FROM %s FINAL WHERE window_start = toDateTime(%" PRId64 ")"
                     " GROUP BY %s ORDER BY min(seq), min(agent_id), min(idx) FORMAT TabSeparated",
                     sel, chstore_table(&cfg->clickhouse), (int64_t)(ws / TM_USEC_PER_SEC), grp);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

int rdb_ch_pending(PGconn *db, int64_t ws, long long *n, char *err, size_t errlen)
{
    char from[TM_RFC3339_LEN];
    rdb_fmt_ts(from, ws);
    const char *p[] = {from};
    PGresult *r = rdb_q(db, "checking the ClickHouse outbox", err, errlen,
                        "SELECT count(*) FROM flow_reports WHERE window_start = $1::timestamptz"
                        " AND ch_pending",
                        1, p);
    if (!r)
        return -1;
    *n = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return 0;
}

/* Splits the TabSeparated answer in place into in->flows. */
static int parse_rows(char *body, const int pos[FR_NCOLS], struct rdb_inputs *in, char *err,
                      size_t errlen)
{
    size_t lines = 0;
    for (const char *p = body; *p; p++)
        lines += *p == '\n';
    in->flows = calloc(lines + 1, sizeof *in->flows);
    if (!in->flows) {
        snprintf(err, errlen, "loading flows from ClickHouse: out of memory");
        return -1;
    }
    int nf = 0;
    for (int c = 0; c < FR_NCOLS; c++)
        nf += pos[c] >= 0;
    char *line = body;
    while (*line) {
        char *eol = strchr(line, '\n');
        if (!eol)
            break;
        *eol = 0;
        char *v[FR_NCOLS];
        int k = 0;
        for (char *f = line; k < nf; k++) {
            v[k] = f;
            char *tab = strchr(f, '\t');
            if (tab)
                *tab = 0, f = tab + 1;
            else
                f = eol;
            if (!flow_row_unescape(v[k]))
                v[k] = NULL;
        }
        line = eol + 1;
        struct recon_flow *fl = &in->flows[in->n_flows++];
#define V(c) v[pos[c]]
        fl->host = V(FR_HOST);
        fl->user = V(FR_USER_NAME);
        fl->program = V(FR_PROGRAM);
        fl->workflow = V(FR_WORKFLOW);
        fl->kube = (struct recon_kube){V(FR_NAMESPACE), V(FR_POD), V(FR_CONTAINER_NAME)};
        rdb_flow_kinds(fl, V(FR_SOURCE), V(FR_PROTO), V(FR_ROLE), V(FR_NFS_OP));
        parse_inet(V(FR_LOCAL_ADDR), &fl->local);
        if (fl->source == RECON_FLOW_NFS) {
            parse_inet(V(FR_NFS_SERVER), &fl->nfs_server);
            fl->nfs_port = (uint16_t)parse_u64(V(FR_NFS_PORT));
            fl->nfs_bytes = parse_u64(V(FR_NFS_BYTES));
            fl->nfs_export = V(FR_NFS_EXPORT);
            continue;
        }
        fl->local_port = (uint16_t)parse_u64(V(FR_LOCAL_PORT));
        parse_inet(V(FR_REMOTE_ADDR), &fl->remote);
        fl->remote_port = (uint16_t)parse_u64(V(FR_REMOTE_PORT));
        fl->tx_bytes = parse_u64(V(FR_TX_BYTES));
        fl->rx_bytes = parse_u64(V(FR_RX_BYTES));
#undef V
    }
    return 0;
}

int rdb_load_flows_ch(PGconn *db, const struct cfg *cfg, int64_t ws, struct rdb_inputs *in,
                      char *err, size_t errlen)
{
    long long pending = 0;
    if (rdb_ch_pending(db, ws, &pending, err, errlen) < 0)
        return -1;
    if (pending > 0) {
        snprintf(err, errlen, "%lld report(s) of the window are not in ClickHouse yet", pending);
        return 1;
    }
    char sql[4096];
    int pos[FR_NCOLS];
    if (build_query(cfg, ws, sql, sizeof sql, pos) < 0) {
        snprintf(err, errlen, "loading flows from ClickHouse: query too long");
        return -1;
    }
    struct httpc_response resp;
    char e[512];
    /* a 5 M window's GROUP BY needs ~2 GiB: past 1 GiB it spills to disk rather than failing at
     * the server's max_memory_usage (1.86 GiB in the tests' server, 10 GB by default) */
    static const char spill[] = "max_bytes_before_external_group_by=1000000000"
                                "&max_bytes_before_external_sort=1000000000";
    if (chstore_exec(&cfg->clickhouse, sql, NULL, 0, spill, &resp, e, sizeof e) < 0) {
        snprintf(err, errlen, "loading flows from ClickHouse: %s", e);
        return -1;
    }
    in->flows_text = resp.body ? resp.body : calloc(1, 1);
    resp.body = NULL;
    if (!in->flows_text) {
        snprintf(err, errlen, "loading flows from ClickHouse: out of memory");
        return -1;
    }
    return parse_rows(in->flows_text, pos, in, err, errlen);
}
