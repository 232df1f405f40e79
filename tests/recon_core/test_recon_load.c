/* The PostgreSQL path's flow load (rdb_load_flows, recon_db_flows.c: one binary COPY with a
 * packed select list, parsed as it arrives) against a throwaway real PostgreSQL:
 *  - a window of 120,000 flow records with every kind of value the columns allow (NFS and socket
 *    records, odd and NULL kinds, NULL, negative and over-65535 ports, negative byte counts,
 *    IPv4/IPv6/NULL/netmasked addresses, NULL and '' owner strings, kube fields, a 1.5 MB string)
 *    gives, row by row and field by field, what this test reads itself from a plain text-format
 *    SELECT of the raw columns (its own parsing: inet_pton of host(), strtoll, the documented
 *    mapping of kinds), in the same order (a split load's flows[] holds its two halves one after
 *    the other: read by rank, recon_input.rank); the count and byte sums equal SQL's;
 *  - the split load's halves sized by the reports' n_flows: counted too many, the second half
 *    moves down over the gap; counted too few, the load falls back to one COPY;
 *  - first-flow-wins: connection sides reported under two owners by one agent are credited by
 *    recon_run to the owner SQL finds first in arrival order (seq, agent_id, idx);
 *  - a failing COPY (statement timeout) returns a clear error and leaves the connection usable. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "config.h"
#include "db.h"
#include "harness.h"
#include "recon.h"
#include "recon_db_internal.h"
#include "timeutil.h"

#define WS_S   INT64_C(1762081200) /* 2025-11-02T11:00:00Z */
#define US(s)  ((s)*INT64_C(1000000))
#define N_ROWS 120000
#define N_DUP  1000 /* connection sides reported twice by one agent */

static PGconn *db;
static struct cfg *cfg;

static void exec(const char *sql)
{
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%.300s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

static long long num(const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    long long v = atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* ---- the rows, and this test's own reading of them ---- */

static const char fill_sql[] =
    "INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, local_addr,"
    " local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, nfs_server, nfs_port,"
    " nfs_export, nfs_op, nfs_bytes, user_name, program, workflow, namespace, pod,"
    " container_name)"
    " SELECT '2025-11-02T11:00:00Z', 'ag-' || i / 1000 % 50, 1 + i / 50000, i % 1000,"
    "  'h' || i / 1000,"
    "  CASE WHEN i % 7 = 3 THEN 'nfs' WHEN i % 97 = 4 THEN 'NFS' ELSE 'socket' END,"
    "  CASE i % 5 WHEN 0 THEN 'udp' WHEN 1 THEN NULL WHEN 2 THEN 'UDP' ELSE 'tcp' END,"
    "  CASE WHEN i % 11 = 5 THEN NULL WHEN i % 13 = 0 THEN ('fd00::' || to_hex(i / 65536) || ':' "
    "|| to_hex(i % 65536))::inet"
    "   WHEN i % 53 = 1 THEN ('10.1.' || i / 256 % 256 || '.' || i % 256 || '/16')::inet"
    "   ELSE ('10.1.' || i / 256 % 256 || '.' || i % 256)::inet END,"
    "  CASE WHEN i % 17 = 0 THEN NULL WHEN i % 19 = 0 THEN 70000 + i % 100"
    "   WHEN i % 23 = 0 THEN -5 ELSE 10000 + i % 50000 END,"
    "  CASE WHEN i % 14 = 6 THEN NULL WHEN i % 15 = 0 THEN ('fd02::' || to_hex(i % 65536) || "
    "':1')::inet"
    "   ELSE ('10.2.' || i / 256 % 256 || '.' || (i * 7) % 256)::inet END,"
    "  CASE WHEN i % 18 = 0 THEN NULL WHEN i % 25 = 0 THEN 65536 + 443 ELSE 443 + i % 3 END,"
    "  CASE i % 6 WHEN 0 THEN 'client' WHEN 1 THEN 'server' WHEN 2 THEN 'unknown'"
    "   WHEN 3 THEN NULL WHEN 4 THEN 'Client' ELSE 'client' END,"
    "  CASE WHEN i % 29 = 0 THEN -7 ELSE i::bigint * 7919 % 1000000 END,"
    "  CASE WHEN i % 31 = 0 THEN -9 ELSE i::bigint * 104729 % 3000000000 END,"
    "  CASE WHEN i % 7 <> 3 OR i % 8 = 0 THEN NULL ELSE ('10.2.9.' || i % 200)::inet END,"
    "  CASE i % 3 WHEN 0 THEN 2049 WHEN 1 THEN NULL ELSE 100000 END,"
    "  CASE WHEN i % 7 <> 3 OR i % 4 = 0 THEN NULL ELSE '/export/' || i % 9 END,"
    "  CASE WHEN i % 7 <> 3 THEN NULL WHEN i % 4 = 0 THEN 'write' WHEN i % 4 = 1 THEN 'read'"
    "   WHEN i % 4 = 2 THEN NULL ELSE 'WRITE' END,"
    "  CASE WHEN i % 37 = 0 THEN -1 WHEN i % 7 = 3 THEN i::bigint * 13 % 500000 ELSE 0 END,"
    "  CASE i % 9 WHEN 0 THEN NULL WHEN 1 THEN '' ELSE 'user' || i % 37 END,"
    "  CASE WHEN i = 12345 THEN repeat('p', 1500000) WHEN i % 43 = 0 THEN 'prøg'"
    "   ELSE 'prog' || i % 41 END,"
    "  CASE WHEN i % 10 = 0 THEN NULL ELSE 'wf-' || i % 101 END,"
    "  CASE WHEN i % 10 = 0 THEN 'ns' || i % 3 ELSE '' END,"
    "  CASE WHEN i % 20 = 0 THEN 'pod-' || i % 7 ELSE '' END,"
    "  CASE WHEN i % 30 = 0 THEN 'c' || i % 5 ELSE '' END"
    " FROM generate_series(0, 119999) i";

/* N_DUP connection sides (10.1.250.x:40000+j -> 10.2.250.x:443, tcp, client), each first
 * reported by program 'dup-first' (seq 1) then by 'dup-second' (seq 2) of agent 'dup-agent', in
 * arrival order, as ingest writes them. */
static const char dup_sql[] =
    "INSERT INTO flow_records (window_start, agent_id, seq, idx, host, source, proto, local_addr,"
    " local_port, remote_addr, remote_port, role, tx_bytes, rx_bytes, user_name, program)"
    " SELECT '2025-11-02T11:00:00Z', 'dup-agent', s, j, 'dup-host', 'socket', 'tcp',"
    "  ('10.1.250.' || j % 250)::inet, 40000 + j, ('10.2.250.' || j % 250)::inet, 443, 'client',"
    "  1000 * s + j, 10, 'dup-user', CASE s WHEN 1 THEN 'dup-first' ELSE 'dup-second' END"
    " FROM generate_series(1, 2) s, generate_series(0, 999) j ORDER BY s, j";

static void want_addr(const char *text, struct recon_addr *a)
{
    memset(a, 0, sizeof *a);
    if (!text)
        return;
    if (inet_pton(AF_INET, text, a->addr) == 1)
        a->family = AF_INET;
    else if (inet_pton(AF_INET6, text, a->addr) == 1)
        a->family = AF_INET6;
    else
        fail_msg("address %s", text);
}

static const char *v(const PGresult *r, int row, int col)
{
    return PQgetisnull(r, row, col) ? NULL : PQgetvalue(r, row, col);
}

static uint16_t port_of(const char *s)
{
    return s ? (uint16_t)(strtoll(s, NULL, 10) & 0xffff) : 0; /* the low 16 bits, NULL = 0 */
}

static uint64_t count_of(const char *s)
{
    long long n = s ? strtoll(s, NULL, 10) : 0;
    return n > 0 ? (uint64_t)n : 0;
}

/* What a flow record means to the reconciliation, from its raw text columns. */
static struct recon_flow want_flow(const PGresult *r, int i)
{
    struct recon_flow f;
    memset(&f, 0, sizeof f);
    f.host = v(r, i, 0);
    f.user = v(r, i, 12);
    f.program = v(r, i, 13);
    f.workflow = v(r, i, 14);
    f.kube = (struct recon_kube){v(r, i, 15), v(r, i, 16), v(r, i, 17)};
    const char *source = v(r, i, 1), *proto = v(r, i, 2), *role = v(r, i, 7);
    want_addr(v(r, i, 3), &f.local);
    if (source && strcmp(source, "nfs") == 0) {
        f.source = RECON_FLOW_NFS;
        const char *op = v(r, i, 20);
        f.nfs_op = op && strcmp(op, "write") == 0 ? RECON_NFS_WRITE : RECON_NFS_READ;
        want_addr(v(r, i, 9), &f.nfs_server);
        f.nfs_port = port_of(v(r, i, 10));
        f.nfs_bytes = count_of(v(r, i, 11));
        f.nfs_export = v(r, i, 18);
        return f;
    }
    f.source = RECON_FLOW_SOCKET;
    f.proto = proto && strcmp(proto, "udp") == 0 ? IPPROTO_UDP : IPPROTO_TCP;
    f.role = !role                         ? RECON_ROLE_UNKNOWN
             : strcmp(role, "client") == 0 ? RECON_ROLE_CLIENT
             : strcmp(role, "server") == 0 ? RECON_ROLE_SERVER
                                           : RECON_ROLE_UNKNOWN;
    f.local_port = port_of(v(r, i, 4));
    want_addr(v(r, i, 5), &f.remote);
    f.remote_port = port_of(v(r, i, 6));
    f.tx_bytes = count_of(v(r, i, 8));
    f.rx_bytes = count_of(v(r, i, 19));
    return f;
}

static void same_str(const char *got, const char *want, size_t row, const char *what)
{
    if ((got == NULL) != (want == NULL) || (got && strcmp(got, want) != 0))
        fail_msg("row %zu: %s %.40s, want %.40s", row, what, got ? got : "(null)",
                 want ? want : "(null)");
}

static void same_flow(const struct recon_flow *g, const struct recon_flow *w, size_t row)
{
    same_str(g->host, w->host, row, "host");
    same_str(g->user, w->user, row, "user");
    same_str(g->program, w->program, row, "program");
    same_str(g->workflow, w->workflow, row, "workflow");
    same_str(g->kube.ns, w->kube.ns, row, "namespace");
    same_str(g->kube.pod, w->kube.pod, row, "pod");
    same_str(g->kube.container, w->kube.container, row, "container_name");
    bool nfs = w->source == RECON_FLOW_NFS; /* only the fields of the flow's kind (recon.h) */
    if (g->source != w->source || memcmp(&g->local, &w->local, sizeof g->local) != 0 ||
        g->local_port != w->local_port)
        fail_msg("row %zu: source %d/%d local family %d/%d port %u/%u", row, g->source, w->source,
                 g->local.family, w->local.family, g->local_port, w->local_port);
    if (nfs) {
        same_str(g->nfs_export, w->nfs_export, row, "nfs_export");
        if (g->nfs_op != w->nfs_op || g->nfs_port != w->nfs_port || g->nfs_bytes != w->nfs_bytes ||
            memcmp(&g->nfs_server, &w->nfs_server, sizeof g->nfs_server) != 0)
            fail_msg("row %zu: nfs op %d/%d port %u/%u bytes %llu/%llu server family %d/%d", row,
                     g->nfs_op, w->nfs_op, g->nfs_port, w->nfs_port,
                     (unsigned long long)g->nfs_bytes, (unsigned long long)w->nfs_bytes,
                     g->nfs_server.family, w->nfs_server.family);
    } else if (g->proto != w->proto || g->role != w->role || g->remote_port != w->remote_port ||
               g->tx_bytes != w->tx_bytes || g->rx_bytes != w->rx_bytes ||
               memcmp(&g->remote, &w->remote, sizeof g->remote) != 0) {
        fail_msg("row %zu: proto %d/%d role %d/%d remote port %u/%u bytes %llu,%llu/%llu,%llu"
                 " remote family %d/%d",
                 row, g->proto, w->proto, g->role, w->role, g->remote_port, w->remote_port,
                 (unsigned long long)g->tx_bytes, (unsigned long long)g->rx_bytes,
                 (unsigned long long)w->tx_bytes, (unsigned long long)w->rx_bytes, g->remote.family,
                 w->remote.family);
    }
}

/* A flow's place in arrival order: its rank, then its place in flows[] (recon_input.rank). */
struct ranked {
    uint64_t rank;
    size_t i;
};

static int cmp_ranked(const void *a, const void *b)
{
    const struct ranked *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The flows' indexes in arrival order; *moved: whether that is not their order in flows[]. */
static size_t *arrival_order(const struct rdb_inputs *in, bool *moved)
{
    struct ranked *k = calloc(in->n_flows + 1, sizeof *k);
    size_t *ix = calloc(in->n_flows + 1, sizeof *ix);
    assert_true(k && ix);
    for (size_t i = 0; i < in->n_flows; i++)
        k[i] = (struct ranked){in->rank ? in->rank[i] : 0, i};
    qsort(k, in->n_flows, sizeof *k, cmp_ranked);
    *moved = false;
    for (size_t i = 0; i < in->n_flows; i++) {
        ix[i] = k[i].i;
        *moved |= ix[i] != i;
    }
    free(k);
    return ix;
}

/* Loads the window and compares it with the test's own reading of it, in arrival order: flows[]
 * itself for one COPY, flows[] by rank for a split load (whose halves lie one after the other);
 * *split: whether the load was split. */
static void check_load_split(bool *split)
{
    char err[512];
    struct rdb_inputs in;
    memset(&in, 0, sizeof in);
    exec("BEGIN");
    int64_t t0 = tm_mono_ns();
    assert_int_equal(rdb_load_flows(db, US(WS_S), &in, err, sizeof err), 0);
    print_message("loaded %zu flows in %.3f s\n", in.n_flows, (double)(tm_mono_ns() - t0) / 1e9);
    exec("COMMIT");
    /* this test's reading: every raw column as text, in the order a plain SELECT returns */
    PGresult *r = PQexec(
        db, "SELECT host, source, proto, host(local_addr), local_port, host(remote_addr),"
            " remote_port, role, tx_bytes, host(nfs_server), nfs_port, nfs_bytes, user_name,"
            " program, workflow, namespace, pod, container_name, nfs_export, rx_bytes, nfs_op"
            " FROM flow_records WHERE window_start = '2025-11-02T11:00:00Z'");
    assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
    size_t n = (size_t)PQntuples(r);
    assert_int_equal(n, N_ROWS + 2 * N_DUP);
    assert_int_equal(in.n_flows, n);
    bool moved;
    size_t *ix = arrival_order(&in, &moved);
    *split = in.rank != NULL;
    if (in.rank)
        assert_true(moved); /* both halves hold flows: flows[] alone is not the heap order */
    uint64_t tx = 0, rx = 0, nfs = 0;
    for (size_t i = 0; i < n; i++) {
        struct recon_flow w = want_flow(r, (int)i);
        const struct recon_flow *g = &in.flows[ix[i]];
        same_flow(g, &w, i);
        if (g->source == RECON_FLOW_NFS) {
            nfs += g->nfs_bytes;
        } else {
            tx += g->tx_bytes;
            rx += g->rx_bytes;
        }
    }
    free(ix);
    PQclear(r);
    /* and the totals SQL computes (count checked above) */
    assert_int_equal(tx, num("SELECT sum(greatest(tx_bytes, 0)) FROM flow_records"
                             " WHERE window_start = '2025-11-02T11:00:00Z' AND source <> 'nfs'"));
    assert_int_equal(rx, num("SELECT sum(greatest(rx_bytes, 0)) FROM flow_records"
                             " WHERE window_start = '2025-11-02T11:00:00Z' AND source <> 'nfs'"));
    assert_int_equal(nfs, num("SELECT sum(greatest(nfs_bytes, 0)) FROM flow_records"
                              " WHERE window_start = '2025-11-02T11:00:00Z' AND source = 'nfs'"));
    assert_true(tx > 0 && rx > 0 && nfs > 0);

    /* first flow wins: each duplicated side's bytes go to the owner first in arrival order */
    struct recon_input ri = {
        .window_start_us = US(WS_S), .flows = in.flows, .n_flows = in.n_flows, .rank = in.rank};
    struct recon_result res;
    memset(&res, 0, sizeof res);
    assert_int_equal(recon_run(cfg, &ri, &res, err, sizeof err), 0);
    uint64_t got_first = 0, got_second = 0;
    for (size_t i = 0; i < res.n_rollup; i++) {
        if (strcmp(res.rollup[i].program, "dup-first") == 0)
            got_first += res.rollup[i].bytes;
        if (strcmp(res.rollup[i].program, "dup-second") == 0)
            got_second += res.rollup[i].bytes;
    }
    long long first = num("SELECT count(*) FROM (SELECT DISTINCT ON (local_addr, local_port)"
                          " program FROM flow_records WHERE agent_id = 'dup-agent'"
                          " ORDER BY local_addr, local_port, seq, agent_id, idx) o"
                          " WHERE program = 'dup-first'");
    assert_int_equal(first, N_DUP); /* the arrival order names 'dup-first' for every side */
    long long both = num("SELECT sum(tx_bytes + rx_bytes) FROM flow_records"
                         " WHERE agent_id = 'dup-agent'");
    assert_int_equal(got_first, both); /* both ways, to the first owner */
    assert_int_equal(got_second, 0);
    recon_result_free(&res);
    rdb_inputs_free(&in);
}

static void check_load(void)
{
    bool split;
    check_load_split(&split);
}

static void test_one_copy(void **state)
{
    (void)state;
    rdb_load_split_above = 1000000000;
    long long splits = rdb_load_splits;
    check_load();
    assert_int_equal(rdb_load_splits, splits); /* one COPY */
}

/* Over two helper connections in the transaction's snapshot, the heap order given back by rank. */
static void test_split(void **state)
{
    (void)state;
    rdb_load_split_above = 0;
    rdb_load_helper_conninfo = NULL;
    long long splits = rdb_load_splits, fallbacks = rdb_load_split_fallbacks;
    bool split;
    check_load_split(&split);
    assert_true(split);
    assert_int_equal(rdb_load_splits, splits + 1);
    assert_int_equal(rdb_load_split_fallbacks, fallbacks);
    rdb_load_split_above = 500000;
}

/* A report of part 0 (the half whose flows come first in flows[]) that counts d more flows than
 * it has: the split sizes the halves by the counts. */
static void miscount_part0(int d)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "UPDATE flow_reports SET n_flows = n_flows + (%d) WHERE (agent_id, seq) ="
             " (SELECT agent_id, seq FROM flow_reports WHERE window_start = '2025-11-02T11:00:00Z'"
             " AND (hashtext(agent_id)::int8 # seq) & 1 = 0 AND n_flows > 1"
             " ORDER BY agent_id, seq LIMIT 1)",
             d);
    exec(sql);
}

/* Counted more than there are: part 1 moves down over the gap, the same flows in the same order. */
static void test_split_counted_more(void **state)
{
    (void)state;
    rdb_load_split_above = 0;
    miscount_part0(7);
    long long splits = rdb_load_splits, fallbacks = rdb_load_split_fallbacks;
    bool split;
    check_load_split(&split);
    assert_true(split);
    assert_int_equal(rdb_load_splits, splits + 1);
    assert_int_equal(rdb_load_split_fallbacks, fallbacks);
    miscount_part0(-7);
    rdb_load_split_above = 500000;
}

/* Counted fewer than there are: part 0 does not fit its slot, and the load falls back to one COPY
 * with every flow. */
static void test_split_counted_fewer(void **state)
{
    (void)state;
    rdb_load_split_above = 0;
    miscount_part0(-1);
    long long splits = rdb_load_splits, fallbacks = rdb_load_split_fallbacks;
    bool split;
    check_load_split(&split);
    assert_false(split);
    assert_int_equal(rdb_load_splits, splits);
    assert_int_equal(rdb_load_split_fallbacks, fallbacks + 1);
    miscount_part0(1);
    rdb_load_split_above = 500000;
}

/* A helper that cannot connect: the load falls back to one COPY, with the same flows. */
static void test_split_fallback(void **state)
{
    (void)state;
    rdb_load_split_above = 0;
    rdb_load_helper_conninfo = "host=127.0.0.1 port=1 dbname=none connect_timeout=2";
    long long splits = rdb_load_splits, fallbacks = rdb_load_split_fallbacks;
    check_load();
    assert_int_equal(rdb_load_splits, splits);
    assert_int_equal(rdb_load_split_fallbacks, fallbacks + 1);
    rdb_load_helper_conninfo = NULL;
    rdb_load_split_above = 500000;
}

static void test_failing_copy(void **state)
{
    (void)state;
    char err[512];
    struct rdb_inputs in;
    memset(&in, 0, sizeof in);
    exec("BEGIN");
    exec("SET LOCAL statement_timeout = 1");
    assert_int_equal(rdb_load_flows(db, US(WS_S), &in, err, sizeof err), -1);
    assert_non_null(strstr(err, "loading flow records: "));
    assert_non_null(strstr(err, "statement timeout"));
    rdb_inputs_free(&in);
    exec("ROLLBACK");
    assert_int_equal(num("SELECT 41 + 1"), 42); /* the connection is usable again */
}

static void test_empty_window(void **state)
{
    (void)state;
    char err[512];
    struct rdb_inputs in;
    memset(&in, 0, sizeof in);
    assert_int_equal(rdb_load_flows(db, US(WS_S + 60), &in, err, sizeof err), 0);
    assert_int_equal(in.n_flows, 0);
    assert_non_null(in.flows);
    rdb_inputs_free(&in);
}

static int setup(void **state)
{
    (void)state;
    const char *ci = th_pg_default();
    char err[512], json[2048];
    db = db_connect_str(ci, err, sizeof err);
    assert_non_null(db);
    snprintf(json, sizeof json,
             "{\"window_seconds\": 60, \"grace_seconds\": 30, \"database\": \"%s\","
             " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
             "             {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]}]}",
             ci);
    struct cfg_errors errs = {0};
    cfg = cfg_parse("test_recon_load.json", json, &errs);
    if (!cfg) {
        for (size_t i = 0; i < errs.n; i++)
            print_error("%s: %s\n", errs.items[i].jpath, errs.items[i].msg);
        fail_msg("config");
    }
    if (db_ensure_partitions(db, US(WS_S - 86400), US(WS_S + 86400), err, sizeof err))
        fail_msg("%s", err);
    /* no parallel plan for this session: a Gather returns rows in no fixed order, and the
     * comparison is row by row */
    exec("SET max_parallel_workers_per_gather = 0");
    exec(fill_sql);
    exec(dup_sql);
    /* the reports' rows, as ingest writes them with their flows: the split load sizes its halves
     * by n_flows */
    exec("INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds, n_flows)"
         " SELECT agent_id, seq, min(host), window_start, 60, count(*) FROM flow_records"
         " WHERE window_start = '2025-11-02T11:00:00Z' GROUP BY agent_id, seq, window_start");
    exec("ANALYZE flow_packed");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cfg_free(cfg);
    PQfinish(db);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_copy),           cmocka_unit_test(test_split),
        cmocka_unit_test(test_split_counted_more), cmocka_unit_test(test_split_counted_fewer),
        cmocka_unit_test(test_split_fallback),     cmocka_unit_test(test_failing_copy),
        cmocka_unit_test(test_empty_window),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
