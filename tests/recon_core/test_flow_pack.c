/* Packed flow rows (reconciler/flow_pack.c, sql/024_packed_flows.sql) against a throwaway real
 * PostgreSQL, with PostgreSQL's own COPY text input as the reference:
 *  - the same COPY text lines (made by flow_row_copy_text, as ingest makes them: socket and NFS
 *    records, NULL and '' values, escaped tabs, newlines and backslashes, IPv6, the largest
 *    counts, an idx gap, two reports, a report of 3,000 flows) are loaded twice: by the server
 *    itself (COPY text into a plain table of the view's columns) and packed (binary COPY into
 *    flow_packed); the view flow_records gives exactly the plain table's rows (EXCEPT ALL both
 *    ways, and the counts), in one packed row per run of consecutive idx of a report, a run cut
 *    into rows of FLOW_PACK_ROW_BYTES of elements (the 3,000 flows: consecutive rows, each at
 *    least that many bytes but the last and over it by at most its last flow's, the bytes
 *    worked out in SQL from the plain table's values);
 *  - a column that is all NULL or all its default is stored as a NULL array;
 *  - the reconciler's loader (rdb_flows_copy) reads the packed rows back: as many flows as rows,
 *    the byte sums SQL computes from the plain table, the view's order;
 *  - a value the column cannot take (an integer out of range, an address that is none, a NUL
 *    byte) is refused with the record's number and the column's name, and nothing is stored. */
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

#include "db.h"
#include "flow_pack.h"
#include "flow_row.h"
#include "harness.h"
#include "pgc.h"
#include "recon_db_internal.h"
#include "timeutil.h"

#define WS_S  INT64_C(1762081200) /* 2025-11-02T11:00:00Z */
#define WS    "2025-11-02T11:00:00Z"
#define US(s) ((s)*INT64_C(1000000))
#define N_BIG 3000

static PGconn *db;

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
    long long v = PQgetisnull(r, 0, 0) ? -1 : atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

/* An unsigned sum from SQL (numeric: beyond bigint) */
static uint64_t unum(const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    uint64_t v = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return v;
}

static void copy_in(const char *sql, const char *data, size_t len)
{
    char err[512];
    if (pgc_copy_in(db, "test", sql, data, len, err, sizeof err) < 0)
        fail_msg("%s", err);
}

/* ---- the lines ---- */

static char *text;
static size_t text_len, text_cap, n_lines;

static void line(const struct flow_row *r)
{
    size_t max = flow_row_copy_max(r);
    if (text_len + max > text_cap) {
        text_cap = (text_len + max) * 2;
        text = realloc(text, text_cap);
        assert_non_null(text);
    }
    text_len += flow_row_copy_text(text + text_len, r);
    n_lines++;
}

static void base(struct flow_row *r, const char *agent, uint64_t seq, uint64_t idx)
{
    memset(r, 0, sizeof *r);
    flow_row_str(r, FR_WINDOW_START, WS);
    flow_row_str(r, FR_AGENT_ID, agent);
    flow_row_int(r, FR_SEQ, seq);
    flow_row_int(r, FR_IDX, idx);
    flow_row_str(r, FR_HOST, "host-a");
    flow_row_text_plain(r, FR_NAMESPACE, "", 0);
    flow_row_text_plain(r, FR_POD, "", 0);
    flow_row_text_plain(r, FR_CONTAINER_NAME, "", 0);
}

static void socket_row(struct flow_row *r, const char *l, unsigned lp, const char *rem, unsigned rp,
                       uint64_t tx, uint64_t rx)
{
    flow_row_str(r, FR_SOURCE, "socket");
    flow_row_str(r, FR_PROTO, "tcp");
    flow_row_str(r, FR_LOCAL_ADDR, l);
    flow_row_int(r, FR_LOCAL_PORT, lp);
    flow_row_str(r, FR_REMOTE_ADDR, rem);
    flow_row_int(r, FR_REMOTE_PORT, rp);
    flow_row_str(r, FR_ROLE, "client");
    flow_row_int(r, FR_TX_BYTES, tx);
    flow_row_int(r, FR_RX_BYTES, rx);
    flow_row_int(r, FR_NFS_BYTES, 0);
    flow_row_int(r, FR_NFS_OPS, 0);
}

/* Report fp-a seq 7: odd values, idx 0-4 and 7-8 (a gap: two packed rows); report fp-a seq 8:
 * NFS records with kube names (one row); report fp-b seq 7: N_BIG plain socket flows. */
static void make_lines(void)
{
    struct flow_row r;
    base(&r, "fp-a", 7, 0);
    socket_row(&r, "10.1.0.5", 40000, "10.2.0.9", 443, 1000, 2000);
    flow_row_str(&r, FR_USER_NAME, "alice");
    flow_row_str(&r, FR_PROGRAM, "rsync");
    flow_row_str(&r, FR_WORKFLOW, "wf\twith tab");
    flow_row_int(&r, FR_PID, 4242);
    flow_row_int(&r, FR_UID, 1000);
    line(&r);
    base(&r, "fp-a", 7, 1);
    socket_row(&r, "2001:db8::1", 0, "::ffff:10.2.0.1", 65535, UINT64_C(9223372036854775807), 0);
    flow_row_str(&r, FR_PROTO, "udp");
    r.v[FR_ROLE].set = false; /* NULL role */
    flow_row_str(&r, FR_PROGRAM, "back\\slash\nnewline\r");
    flow_row_str(&r, FR_CONTAINER, "c0ffee");
    line(&r);
    base(&r, "fp-a", 7, 2);
    socket_row(&r, "10.1.0.5", 1, "10.2.0.9", 2, 0, 0);
    flow_row_str(&r, FR_ROLE, "server");
    flow_row_str(&r, FR_USER_NAME, ""); /* '' is not NULL */
    line(&r);
    for (uint64_t i = 3; i <= 8; i++) {
        if (i == 5 || i == 6)
            continue; /* the gap */
        base(&r, "fp-a", 7, i);
        socket_row(&r, "10.1.0.6", 50000 + (unsigned)i, "10.2.0.8", 80, i, 2 * i);
        flow_row_str(&r, FR_ROLE, "unknown");
        line(&r);
    }
    for (uint64_t i = 0; i < 3; i++) {
        base(&r, "fp-a", 8, i);
        flow_row_str(&r, FR_HOST, "host-nfs");
        flow_row_str(&r, FR_SOURCE, "nfs");
        if (i == 1) {
            flow_row_str(&r, FR_LOCAL_ADDR, "10.1.0.7");
            flow_row_int(&r, FR_LOCAL_PORT, 900);
        }
        flow_row_int(&r, FR_TX_BYTES, 0);
        flow_row_int(&r, FR_RX_BYTES, 0);
        flow_row_str(&r, FR_NFS_SERVER, "10.2.0.20");
        flow_row_int(&r, FR_NFS_PORT, 2049);
        if (i != 2)
            flow_row_str(&r, FR_NFS_EXPORT, "/export/data");
        flow_row_str(&r, FR_NFS_OP, i == 0 ? "read" : "write");
        flow_row_int(&r, FR_NFS_BYTES, 1000000 * (i + 1));
        flow_row_int(&r, FR_NFS_OPS, 10 + i);
        flow_row_str(&r, FR_NAMESPACE, "ml");
        flow_row_str(&r, FR_POD, i == 2 ? "" : "train-0");
        flow_row_str(&r, FR_CONTAINER_NAME, "worker");
        line(&r);
    }
    for (uint64_t i = 0; i < N_BIG; i++) {
        char l[32];
        base(&r, "fp-b", 7, i);
        flow_row_str(&r, FR_HOST, "host-b");
        snprintf(l, sizeof l, "10.1.%u.%u", (unsigned)(i / 250), (unsigned)(i % 250));
        socket_row(&r, l, 30000 + (unsigned)i, "10.2.0.1", 5201, 1000 + i, 7 * i);
        flow_row_str(&r, FR_USER_NAME, "bob");
        flow_row_str(&r, FR_PROGRAM, "iperf3");
        flow_row_int(&r, FR_PID, 100 + i % 7);
        line(&r);
    }
}

static void pack(const char *t, size_t n, struct flow_pack *p, char *err, size_t errlen, int *rc)
{
    memset(p, 0, sizeof *p);
    *rc = flow_pack_header(p) < 0 || flow_pack_rows(p, t, n, err, errlen) < 0 ||
                  flow_pack_trailer(p) < 0
              ? -1
              : 0;
}

/* SQL for the bytes a flow's elements take in a packed row's binary COPY, from the plain table's
 * columns: a 4-byte length word per column, then a text's bytes, 4 or 8 for an integer, 8 or 20
 * for an IPv4 or IPv6 inet (PostgreSQL's binary forms), nothing for a NULL. */
static void element_bytes_sql(char *out, size_t len)
{
    size_t at = 0;
    for (int c = FR_HOST; c < FR_NCOLS; c++) {
        const struct flow_col_def *d = &flow_cols[c];
        const char *n = d->name;
        at +=
            (size_t)(d->type == FRT_INT
                         ? snprintf(out + at, len - at,
                                    "%s4 + CASE WHEN %s IS NULL THEN 0 ELSE %d END",
                                    at ? " + " : "", n, strcmp(d->pg_type, "integer") == 0 ? 4 : 8)
                     : d->type == FRT_INET
                         ? snprintf(out + at, len - at,
                                    "%s4 + CASE WHEN %s IS NULL THEN 0 WHEN family(%s) = 4 THEN"
                                    " 8 ELSE 20 END",
                                    at ? " + " : "", n, n)
                         : snprintf(out + at, len - at, "%s4 + coalesce(octet_length(%s), 0)",
                                    at ? " + " : "", n));
        assert_true(at < len);
    }
}

static void test_same_rows_as_text_copy(void **state)
{
    (void)state;
    exec("CREATE TABLE fp_plain (LIKE flow_records)");
    copy_in("COPY fp_plain FROM STDIN", text, text_len);
    struct flow_pack p;
    char err[512] = "", sql[1200];
    int rc;
    pack(text, text_len, &p, err, sizeof err, &rc);
    if (rc < 0)
        fail_msg("%s", err);
    assert_true(p.rows >= 5); /* fp-a 7 (two runs), fp-a 8, fp-b 7 (more than one row) */
    flow_pack_copy_sql("flow_packed", sql, sizeof sql);
    copy_in(sql, p.out.p, p.out.n);
    flow_pack_free(&p);

    assert_int_equal(num("SELECT count(*) FROM fp_plain"), (long long)n_lines);
    assert_int_equal(num("SELECT count(*) FROM flow_records WHERE agent_id LIKE 'fp-%'"),
                     (long long)n_lines);
    assert_int_equal(num("SELECT count(*) FROM (SELECT * FROM fp_plain EXCEPT ALL"
                         " SELECT * FROM flow_records WHERE agent_id LIKE 'fp-%') d"),
                     0);
    assert_int_equal(num("SELECT count(*) FROM (SELECT * FROM flow_records WHERE agent_id LIKE"
                         " 'fp-%' EXCEPT ALL SELECT * FROM fp_plain) d"),
                     0);
    /* the runs: fp-a 7 from idx 0 (5 flows) and from 7 (2), fp-a 8 (3), fp-b 7 (N_BIG) */
    assert_int_equal(num("SELECT count(*) FROM flow_packed WHERE agent_id = 'fp-a' AND seq = 7"
                         " AND ((idx0 = 0 AND cardinality(host) = 5)"
                         " OR (idx0 = 7 AND cardinality(host) = 2))"),
                     2);
    /* fp-b's N_BIG flows (~190 bytes of elements each): cut into consecutive rows of at least
     * FLOW_PACK_ROW_BYTES of elements but the last, none over it by more than its last flow */
    assert_true(num("SELECT count(*) FROM flow_packed WHERE agent_id = 'fp-b'") >= 2);
    assert_int_equal(num("SELECT sum(cardinality(host)) FROM flow_packed WHERE agent_id = 'fp-b'"
                         " AND seq = 7"),
                     N_BIG);
    assert_int_equal(num("SELECT count(*) FROM (SELECT idx0, cardinality(host) AS n, lag(idx0 +"
                         " cardinality(host), 1, 0) OVER (ORDER BY idx0) AS want FROM flow_packed"
                         " WHERE agent_id = 'fp-b') r WHERE idx0 <> want"),
                     0);
    char bytes[2048], q[3072];
    element_bytes_sql(bytes, sizeof bytes);
    snprintf(q, sizeof q,
             "SELECT count(*) FROM (SELECT p.idx0, max(p.idx0) OVER () = p.idx0 AS is_last,"
             " sum(f.b) AS bytes, (array_agg(f.b ORDER BY f.idx DESC))[1] AS last"
             " FROM flow_packed p JOIN (SELECT idx, %s AS b FROM fp_plain WHERE agent_id = 'fp-b')"
             " f ON f.idx >= p.idx0 AND f.idx < p.idx0 + cardinality(p.host)"
             " WHERE p.agent_id = 'fp-b' GROUP BY p.idx0) r"
             " WHERE NOT ((is_last OR bytes >= %d) AND bytes - last < %d)",
             bytes, FLOW_PACK_ROW_BYTES, FLOW_PACK_ROW_BYTES);
    assert_int_equal(num(q), 0);
    /* all NULL or all default: a NULL array; socket flows carry no NFS or kube values */
    assert_int_equal(num("SELECT count(*) FROM flow_packed WHERE agent_id = 'fp-b' AND NOT"
                         " (nfs_server IS NULL AND nfs_bytes IS NULL AND namespace IS NULL AND"
                         " uid IS NULL AND rx_bytes IS NOT NULL AND pid IS NOT NULL)"),
                     0);
    assert_int_equal(num("SELECT count(*) FROM flow_packed WHERE agent_id = 'fp-a' AND seq = 8"
                         " AND tx_bytes IS NULL AND namespace IS NOT NULL AND"
                         " nfs_export = ARRAY['/export/data', '/export/data', NULL]"),
                     1);
    /* the view's order: packed rows, then array order (ORDER BY idx within fp-a 7) */
    assert_int_equal(num("SELECT count(*) FROM (SELECT idx, lag(idx) OVER () AS prev FROM"
                         " flow_records WHERE agent_id = 'fp-a' AND seq = 7) o"
                         " WHERE prev IS NOT NULL AND idx <= prev"),
                     0);

    /* the loader, on the packed rows */
    struct rdb_flow_part part = {0};
    if (rdb_flows_copy(db, US(WS_S), -1, &part, err, sizeof err) < 0)
        fail_msg("%s", err);
    assert_int_equal(part.n, n_lines);
    uint64_t tx = 0, rx = 0, nfs = 0;
    size_t n_nfs = 0, n_udp = 0, n_v6 = 0;
    for (size_t i = 0; i < part.n; i++) {
        const struct recon_flow *f = &part.flows[i];
        if (f->source == RECON_FLOW_NFS) /* only the fields of its kind (recon.h) */
            nfs += f->nfs_bytes;
        else
            tx += f->tx_bytes, rx += f->rx_bytes;
        n_nfs += f->source == RECON_FLOW_NFS;
        n_udp += f->source == RECON_FLOW_SOCKET && f->proto == IPPROTO_UDP;
        n_v6 += f->local.family == AF_INET6;
    }
    assert_true(tx == unum("SELECT sum(tx_bytes) FROM fp_plain WHERE source = 'socket'"));
    assert_true(rx == unum("SELECT sum(rx_bytes) FROM fp_plain"));
    assert_true(nfs == unum("SELECT sum(nfs_bytes) FROM fp_plain"));
    assert_int_equal(n_nfs, num("SELECT count(*) FROM fp_plain WHERE source = 'nfs'"));
    assert_int_equal(n_udp, num("SELECT count(*) FROM fp_plain WHERE proto = 'udp'"));
    assert_int_equal(n_v6, num("SELECT count(*) FROM fp_plain WHERE family(local_addr) = 6"));
    /* fp-a 7's second flow, in the view's order: udp, NULL role, the escaped program */
    const struct recon_flow *f = &part.flows[1];
    assert_string_equal(f->program, "back\\slash\nnewline\r");
    assert_int_equal(f->role, RECON_ROLE_UNKNOWN);
    assert_int_equal(f->local_port, 0);
    assert_int_equal(f->remote_port, 65535);
    assert_string_equal(part.flows[0].workflow, "wf\twith tab");
    const struct recon_flow *nf = &part.flows[7]; /* fp-a 8's first: 5 + 2 flows before it */
    assert_int_equal(nf->source, RECON_FLOW_NFS);
    assert_string_equal(nf->kube.ns, "ml");
    assert_int_equal(nf->nfs_port, 2049);
    assert_string_equal(part.flows[9].kube.pod, "");
    rdb_flow_part_free(&part);
    exec("DROP TABLE fp_plain");
}

/* One bad value among good lines: refused with where and what; nothing is packed. The second
 * line is a good one with field c replaced by s as it is (a raw COPY field). */
static void refused(const char *agent, enum flow_col c, const char *s, const char *want)
{
    struct flow_row r;
    base(&r, agent, 1, 0);
    socket_row(&r, "10.1.0.5", 1, "10.2.0.9", 2, 0, 0);
    char buf[4096], good[2048];
    size_t n = flow_row_copy_text(buf, &r);
    base(&r, agent, 1, 1);
    socket_row(&r, "10.1.0.5", 1, "10.2.0.9", 2, 0, 0);
    good[flow_row_copy_text(good, &r)] = 0;
    char *f = good;
    for (int k = 0; k < (int)c; k++)
        f = strchr(f, '\t') + 1;
    char *e = f + strcspn(f, "\t\n");
    n += (size_t)snprintf(buf + n, sizeof buf - n, "%.*s%s%s", (int)(f - good), good, s, e);
    struct flow_pack p;
    char err[512] = "";
    int rc;
    pack(buf, n, &p, err, sizeof err, &rc);
    flow_pack_free(&p);
    if (rc != -1)
        fail_msg("%s = '%s' was packed", flow_cols[c].name, s);
    if (!strstr(err, want) || !strstr(err, "flow record 2") || !strstr(err, flow_cols[c].name))
        fail_msg("'%s' does not say flow record 2, %s, '%s'", err, flow_cols[c].name, want);
}

static void test_refused(void **state)
{
    (void)state;
    refused("bad-1", FR_PID, "3000000000", "out of range for type integer");
    refused("bad-2", FR_LOCAL_ADDR, "300.1.1.1", "is not an IP address");
    refused("bad-3", FR_TX_BYTES, "18446744073709551615", "is not an integer of 64 bits");
    refused("bad-4", FR_PROGRAM, "a\\0b", "NUL byte");
    refused("bad-5", FR_HOST, "\\N", "is NULL");
    refused("bad-6", FR_LOCAL_PORT, "12x", "is not an integer");
}

static int setup(void **state)
{
    (void)state;
    char err[512];
    db = db_connect_str(th_pg_default(), err, sizeof err);
    assert_non_null(db);
    if (db_ensure_partitions(db, US(WS_S - 86400), US(WS_S + 86400), err, sizeof err))
        fail_msg("%s", err);
    exec("SET max_parallel_workers_per_gather = 0");
    make_lines();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(text);
    PQfinish(db);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_rows_as_text_copy),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
