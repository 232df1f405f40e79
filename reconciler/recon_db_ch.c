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
#include "hindex.h"
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
 * agree on all the others (one connection side of one owner), then (seq, agent, idx) of their
 * first row: recon.c keeps the first owner it meets for a connection side reported under several
 * owners by one agent (a forked process) and the first site of a host, and the PostgreSQL path
 * meets rows in heap (arrival) order, which for one agent is seq order too. No ORDER BY: sorting
 * 5 M groups there cost more than the GROUP BY (sort_by_arrival does it here).
 * Last, the rows each group sums (rdb_load_flows_ch checks their total). final: read through
 * FINAL (the window holds duplicates of a retried insert). */
static int build_query(const struct cfg *cfg, int64_t ws, bool final, char *sql, size_t len,
                       int pos[FR_NCOLS])
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
    int w =
        snprintf(sql, len,
                 "SELECT %s, min(seq), min(agent_id), min(idx), count() FROM %s%s"
                 " WHERE window_start = toDateTime(%" PRId64 ") GROUP BY %s FORMAT TabSeparated",
                 sel, chstore_table(&cfg->clickhouse), final ? " FINAL" : "",
                 (int64_t)(ws / TM_USEC_PER_SEC), grp);
    return w < 0 || (size_t)w >= len ? -1 : 0;
}

/* Whether the window's rows in ClickHouse are more than its reports carry (n_reported: the sum
 * of flow_reports.n_flows), i.e. a retried insert left duplicates that only FINAL (or a merge)
 * removes. Every report's flows reached ClickHouse (rdb_ch_pending) and each report carries
 * n_flows distinct keys (agent_id, seq, idx), so as many rows as that means no duplicate, and
 * the GROUP BY can skip FINAL, which 18.16 reads in one stream per partition. */
static int has_duplicates(const struct cfg *cfg, int64_t ws, long long n_reported, bool *dup,
                          char *err, size_t errlen)
{
    char sql[256], e[512];
    snprintf(sql, sizeof sql,
             "SELECT count() FROM %s WHERE window_start = toDateTime(%" PRId64
             ") FORMAT TabSeparated",
             chstore_table(&cfg->clickhouse), (int64_t)(ws / TM_USEC_PER_SEC));
    struct httpc_response resp;
    if (chstore_exec(&cfg->clickhouse, sql, NULL, 0, NULL, &resp, e, sizeof e) < 0) {
        snprintf(err, errlen, "counting the window's flows in ClickHouse: %s", e);
        return -1;
    }
    long long rows = resp.body ? atoll(resp.body) : -1;
    httpc_response_free(&resp);
    *dup = rows != n_reported;
    return 0;
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

/* Splits the TabSeparated answer in place into in->flows and in->order; *rows: the rows summed. */
static int parse_rows(char *body, const int pos[FR_NCOLS], struct rdb_inputs *in,
                      unsigned long long *rows, char *err, size_t errlen)
{
    *rows = 0;
    size_t lines = 0;
    for (const char *p = body; (p = strchr(p, '\n')); p++)
        lines++;
    in->flows = calloc(lines + 1, sizeof *in->flows);
    in->order = calloc(lines + 1, sizeof *in->order);
    if (!in->flows || !in->order) {
        snprintf(err, errlen, "loading flows from ClickHouse: out of memory");
        return -1;
    }
    int nf = 0;
    for (int c = 0; c < FR_NCOLS; c++)
        nf += pos[c] >= 0;
    nf += 4; /* min(seq), min(agent_id), min(idx), count() */
    char *line = body;
    while (*line) {
        char *eol = strchr(line, '\n');
        if (!eol)
            break;
        *eol = 0;
        char *v[FR_NCOLS + 4];
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
        in->order[in->n_flows] = (struct recon_flow_order){
            parse_u64(v[nf - 4]), v[nf - 3] ? v[nf - 3] : "", parse_u64(v[nf - 2])};
        *rows += parse_u64(v[nf - 1]);
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

/* ---- the rows in arrival order again ----
 * The GROUP BY's rows come in hash order. recon.c's choices follow in->order whatever the order,
 * but its speed does not: in arrival order one agent's flows come together and its owners' rollup
 * and dependency rows stay in cache (1 M flows: compute 3.2-3.4 s from ClickHouse's ORDER BY,
 * 6.2-7.0 s in hash order). Sorting here by (seq, agent, idx) restores that order at a fraction of
 * the ORDER BY's cost there: agents are ranked once (a few thousand strings), then one qsort of
 * integer keys and an in-place permutation. */
struct arrival_key {
    uint64_t seq, idx;
    uint32_t agent, row;
};

struct agents {
    const char **name;
    size_t n, cap;
    struct hix ix;
};

static int eq_agent(const void *ctx, size_t idx, const void *key)
{
    return strcmp(((const struct agents *)ctx)->name[idx], (const char *)key) == 0;
}

static int cmp_agent_name(const void *a, const void *b, void *ctx)
{
    const struct agents *ag = ctx;
    return strcmp(ag->name[*(const uint32_t *)a], ag->name[*(const uint32_t *)b]);
}

static int cmp_arrival(const void *a, const void *b)
{
    const struct arrival_key *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->agent != y->agent)
        return x->agent < y->agent ? -1 : 1;
    if (x->idx != y->idx)
        return x->idx < y->idx ? -1 : 1;
    return (x->row > y->row) - (x->row < y->row);
}

/* The agents' ids of keys[] replaced by their rank in strcmp order. */
static int rank_agents(struct rdb_inputs *in, struct arrival_key *keys)
{
    struct agents ag = {0};
    uint32_t *by_name = NULL, *rank = NULL;
    int rc = -1;
    if (hix_init(&ag.ix, 1024))
        return -1;
    for (size_t i = 0; i < in->n_flows; i++) {
        const char *a = in->order[i].agent;
        uint64_t h = hix_hash_str(0, a);
        struct hix_slot *s = hix_find(&ag.ix, h, eq_agent, &ag, a);
        if (!s->idx1) {
            if (hix_grow((void **)&ag.name, &ag.cap, ag.n + 1, sizeof *ag.name))
                goto out;
            ag.name[ag.n] = a;
            if (hix_put(&ag.ix, s, h, ag.n))
                goto out;
            s = hix_find(&ag.ix, h, eq_agent, &ag, a);
            ag.n++;
        }
        keys[i] = (struct arrival_key){in->order[i].seq, in->order[i].idx, (uint32_t)(s->idx1 - 1),
                                       (uint32_t)i};
    }
    by_name = malloc((ag.n + 1) * sizeof *by_name);
    rank = malloc((ag.n + 1) * sizeof *rank);
    if (!by_name || !rank)
        goto out;
    for (size_t k = 0; k < ag.n; k++)
        by_name[k] = (uint32_t)k;
    qsort_r(by_name, ag.n, sizeof *by_name, cmp_agent_name, &ag);
    for (size_t k = 0; k < ag.n; k++)
        rank[by_name[k]] = (uint32_t)k;
    for (size_t i = 0; i < in->n_flows; i++)
        keys[i].agent = rank[keys[i].agent];
    rc = 0;
out:
    free(by_name);
    free(rank);
    free(ag.name);
    hix_free(&ag.ix);
    return rc;
}

/* Reorders in->flows and in->order by (seq, agent, idx); -1: out of memory (nothing changed). */
static int sort_by_arrival(struct rdb_inputs *in)
{
    size_t n = in->n_flows;
    if (n < 2 || n > UINT32_MAX)
        return 0;
    struct arrival_key *keys = malloc(n * sizeof *keys);
    if (!keys || rank_agents(in, keys)) {
        free(keys);
        return -1;
    }
    qsort(keys, n, sizeof *keys, cmp_arrival);
    /* in place, cycle by cycle: position k takes row keys[k].row (row = n marks k done) */
    for (size_t k = 0; k < n; k++) {
        if (keys[k].row == (uint32_t)k || keys[k].row == UINT32_MAX)
            continue;
        struct recon_flow f = in->flows[k];
        struct recon_flow_order o = in->order[k];
        size_t j = k;
        while (keys[j].row != (uint32_t)k) {
            size_t from = keys[j].row;
            in->flows[j] = in->flows[from];
            in->order[j] = in->order[from];
            keys[j].row = UINT32_MAX;
            j = from;
        }
        in->flows[j] = f;
        in->order[j] = o;
        keys[j].row = UINT32_MAX;
    }
    free(keys);
    return 0;
}

static int query_flows(const struct cfg *cfg, int64_t ws, bool final, struct rdb_inputs *in,
                       unsigned long long *rows, char *err, size_t errlen)
{
    char sql[4096];
    int pos[FR_NCOLS];
    if (build_query(cfg, ws, final, sql, sizeof sql, pos) < 0) {
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
    if (parse_rows(in->flows_text, pos, in, rows, err, errlen) < 0)
        return -1;
    if (sort_by_arrival(in) < 0) {
        snprintf(err, errlen, "loading flows from ClickHouse: out of memory");
        return -1;
    }
    return 0;
}

int rdb_load_flows_ch(PGconn *db, const struct cfg *cfg, int64_t ws, long long n_reported,
                      struct rdb_inputs *in, char *err, size_t errlen)
{
    long long pending = 0;
    if (rdb_ch_pending(db, ws, &pending, err, errlen) < 0)
        return -1;
    if (pending > 0) {
        snprintf(err, errlen, "%lld report(s) of the window are not in ClickHouse yet", pending);
        return 1;
    }
    bool dup = true;
    if (has_duplicates(cfg, ws, n_reported, &dup, err, errlen) < 0)
        return -1;
    unsigned long long rows = 0;
    if (query_flows(cfg, ws, dup, in, &rows, err, errlen) < 0)
        return -1;
    if (dup || rows == (unsigned long long)n_reported)
        return 0;
    /* rows arrived between the count and the query (a new report, or a retried insert's
     * duplicates): what was summed may hold duplicates, so read it again through FINAL */
    free(in->flows);
    free(in->order);
    free(in->flows_text);
    in->flows = NULL;
    in->order = NULL;
    in->flows_text = NULL;
    in->n_flows = 0;
    return query_flows(cfg, ws, true, in, &rows, err, errlen);
}
