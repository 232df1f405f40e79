/* The ClickHouse outbox's Native blocks (reconciler/chnative.h, sql/035) against a real
 * clickhouse-server 18.16:
 *  - one agent report parsed by ingest with analytics.clickhouse gives the Native block that
 *    ClickHouse itself writes for the same rows: the same report parsed PostgreSQL-only gives its
 *    COPY text, which (window start as Unix seconds) is inserted as TabSeparated into a table of
 *    flow_row.h's columns, and that table's SELECT … FORMAT Native is the oracle, byte for byte.
 *    The rows hold what moves the format: NULLs in every Nullable column, an NFS flow, IPv6
 *    addresses, a name with a tab, a newline, a backslash and a quote, UTF-8, an empty name,
 *    a 300-byte name (a two-byte length), and the widest pid, uid and port;
 *  - the block inserted as Native reads back as the oracle's rows, and as the numbers the test
 *    wrote into the report;
 *  - a value wider than its column (a port of 70,000) is refused, not cut; rows beyond the size
 *    hint give the same block as rows within it;
 *  - blocks framed as ClickHouse's compressed format (the flusher sends them so, decompress=1),
 *    2 to 400 bytes, stored and zstd: the server's CityHash128 check passes for every one, and a
 *    flipped checksum bit is refused;
 *  - an outbox holding TabSeparated rows from before sql/035 (one the migration labelled, one
 *    written later by a binary that does not name the format) around a Native row: the flusher
 *    ships a format per INSERT, the oldest row's format first, and ClickHouse holds every flow
 *    once. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zstd.h>

#include "chnative.h"
#include "chstore.h"
#include "chstore_block.h"
#include "chstore_flush.h"
#include "config.h"
#include "db.h"
#include "flow_row.h"
#include "harness.h"
#include "ingest.h"
#include "th_clickhouse.h"
#include "th_db.h"
#include "timeutil.h"

#define WS INT64_C(1796083200) /* 2026-12-01T00:00:00Z, a window start */

static struct th_ch CH;
static PGconn *db;

static const char config_pg[] =
    "{\"window_seconds\": 60, \"database\": \"dbname=x\",\n"
    " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\", \"fd00:1::/48\"]},\n"
    "             {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\", \"fd00:2::/48\"]}]";

static struct cfg *config(bool ch)
{
    char text[2048];
    th_strfmt(text, sizeof text, "%s%s}", config_pg,
              ch ? ", \"analytics\": {\"clickhouse\": {\"url\": \"http://127.0.0.1:1\","
                   " \"database\": \"wanledger\", \"batch_rows\": 1000}}"
                 : "");
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("native.json", text, &errs);
    if (!cfg) {
        cfg_errors_print(NULL, "native.json", &errs, stderr);
        fail_msg("the test's configuration does not parse");
    }
    if (ch) { /* the harness's server (its port is known only now) and password */
        free(cfg->clickhouse.url);
        cfg->clickhouse.url = strdup(CH.url);
        free(cfg->clickhouse.password);
        cfg->clickhouse.password = strdup(TH_CH_PASSWORD);
    }
    return cfg;
}

/* Report "agent" seq 1 of window WS; its flows' tx sum is TX_SUM, rx sum RX_SUM. */
#define NFLOWS 7
#define TX_SUM (UINT64_C(123456789012) + 0 + 7 + 11 + 900)
#define RX_SUM (UINT64_C(5) + 3 + 13 + 0)
static char *report_body(const char *agent, size_t *len)
{
    char ws[TM_RFC3339_LEN], long_user[301];
    tm_format_rfc3339(WS * TM_USEC_PER_SEC, ws);
    memset(long_user, 'u', 300);
    long_user[300] = 0;
    char *b = malloc(8192);
    assert_non_null(b);
    int n = snprintf(
        b, 8192,
        "{\"version\": 1, \"host\": \"nyc-gpu-1\", \"agent_id\": \"%s\", \"seq\": 1,"
        " \"window_start\": \"%s\", \"flows\": ["
        /* 0: every column set; a name with tab, newline, backslash, quote; UTF-8 */
        "{\"source\": \"socket\", \"proto\": \"tcp\", \"local\": \"10.1.0.2:40000\","
        " \"remote\": \"10.2.0.2:5201\", \"role\": \"client\", \"tx_bytes\": 123456789012,"
        " \"rx_bytes\": 5, \"pid\": 2147483647, \"uid\": 2147483647,"
        " \"user\": \"a\\tb\\nc\\\\d\\\"e\", \"program\": \"caf\\u00e9 \\u2603\","
        " \"workflow\": \"wf-1\", \"container\": \"c0ffee\", \"namespace\": \"ns\","
        " \"pod\": \"pod-1\", \"container_name\": \"main\"},"
        /* 1: udp without role, owner or pod: NULLs; the widest and narrowest ports */
        "{\"source\": \"socket\", \"proto\": \"udp\", \"local\": \"10.1.0.2:1\","
        " \"remote\": \"10.2.0.3:65535\", \"tx_bytes\": 0, \"rx_bytes\": 3},"
        /* 2: NFS read with local address and export */
        "{\"source\": \"nfs\", \"local\": \"10.1.0.2:700\", \"server\": \"10.2.0.9:2049\","
        " \"export\": \"/export/da ta\", \"op\": \"read\", \"bytes\": 4096, \"ops\": 1,"
        " \"user\": \"carol\", \"program\": \"cp\"},"
        /* 3: NFS write with neither local address, export nor ops */
        "{\"source\": \"nfs\", \"server\": \"10.2.0.9:2049\", \"op\": \"write\", \"bytes\": 8192},"
        /* 4: IPv6, server role, an empty user name */
        "{\"source\": \"socket\", \"proto\": \"tcp\", \"local\": \"[fd00:1::2]:443\","
        " \"remote\": \"[fd00:2::3]:55000\", \"role\": \"server\", \"tx_bytes\": 7,"
        " \"rx_bytes\": 13, \"user\": \"\", \"pid\": 0, \"uid\": 0},"
        /* 5: a 300-byte user name (its length is two LEB128 bytes) */
        "{\"source\": \"socket\", \"proto\": \"tcp\", \"local\": \"10.1.0.2:40001\","
        " \"remote\": \"10.2.0.2:5201\", \"role\": \"unknown\", \"tx_bytes\": 11, \"rx_bytes\": 0,"
        " \"user\": \"%s\"},"
        /* 6: a plain one */
        "{\"source\": \"socket\", \"proto\": \"tcp\", \"local\": \"10.1.0.2:40002\","
        " \"remote\": \"10.2.0.4:22\", \"role\": \"client\", \"tx_bytes\": 900, \"rx_bytes\": 0,"
        " \"user\": \"bob\", \"program\": \"ssh\", \"workflow\": \"wf-2\"}]}",
        agent, ws, long_user);
    assert_true(n > 0 && n < 8192);
    *len = (size_t)n;
    return b;
}

static void parse(const struct cfg *cfg, const char *agent, struct ingest_batch *b)
{
    size_t len;
    char *body = report_body(agent, &len);
    struct ingest_error e;
    if (ingest_parse(cfg, INGEST_ATTRIBUTIONS, body, len, (WS + 90) * TM_USEC_PER_SEC, b, &e) < 0)
        fail_msg("ingest_parse: %d %s at %s", e.status, e.msg, e.path);
    free(body);
    assert_int_equal(b->n_rows, NFLOWS);
}

/* The COPY text of a PostgreSQL-only parse as ClickHouse TabSeparated: each line's first field
 * (the window start's RFC 3339 text) replaced by Unix seconds; malloc'd, *len its length. */
static char *tsv_of_copy(const struct ingest_batch *b, size_t *len)
{
    char *out = malloc(b->copy_len + 64 * b->n_rows);
    assert_non_null(out);
    size_t n = 0;
    for (const char *p = b->copy, *end = b->copy + b->copy_len; p < end;) {
        const char *tab = memchr(p, '\t', (size_t)(end - p));
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        assert_non_null(tab);
        assert_non_null(nl);
        n += (size_t)sprintf(out + n, "%" PRId64, WS);
        memcpy(out + n, tab, (size_t)(nl + 1 - tab));
        n += (size_t)(nl + 1 - tab);
        p = nl + 1;
    }
    *len = n;
    return out;
}

static void ch_do(const struct cfg *cfg, const char *sql, const char *data, size_t len,
                  struct httpc_response *resp)
{
    char err[512];
    struct httpc_response r;
    if (chstore_exec(&cfg->clickhouse, sql, data, len, NULL, &r, err, sizeof err) != 0)
        fail_msg("%s: %s", sql, err);
    if (resp)
        *resp = r;
    else
        httpc_response_free(&r);
}

/* sql's answer must be want, exactly. */
static void ch_expect(const struct cfg *cfg, const char *sql, const char *want)
{
    struct httpc_response r;
    ch_do(cfg, sql, NULL, 0, &r);
    assert_string_equal(r.body, want);
    httpc_response_free(&r);
}

static void create_table(const struct cfg *cfg, const char *name)
{
    char defs[2048], sql[2300];
    assert_true(flow_row_list(defs, sizeof defs, FRL_CH_DEFS, FLOW_ROW_ALL, NULL, NULL) > 0);
    th_strfmt(sql, sizeof sql, "DROP TABLE IF EXISTS wanledger.%s", name);
    ch_do(cfg, sql, NULL, 0, NULL);
    th_strfmt(sql, sizeof sql, "CREATE TABLE wanledger.%s (%s) ENGINE = Memory", name, defs);
    ch_do(cfg, sql, NULL, 0, NULL);
}

static void test_block_is_clickhouses(void **state)
{
    (void)state;
    struct cfg *pg = config(false), *ch = config(true);
    ch_do(ch, "CREATE DATABASE IF NOT EXISTS wanledger", NULL, 0, NULL);
    struct ingest_batch bp, bc;
    parse(pg, "agent-n", &bp);
    parse(ch, "agent-n", &bc);
    assert_null(bp.native);
    assert_non_null(bc.native);
    assert_int_equal(bc.copy_len, 0); /* no COPY text on the ClickHouse path */

    /* the oracle: the rows as TabSeparated, ClickHouse's own Native of them */
    create_table(ch, "oracle");
    size_t tlen;
    char *tsv = tsv_of_copy(&bp, &tlen);
    ch_do(ch, "INSERT INTO wanledger.oracle FORMAT TabSeparated", tsv, tlen, NULL);
    free(tsv);
    struct httpc_response want;
    ch_do(ch, "SELECT * FROM wanledger.oracle ORDER BY idx FORMAT Native", NULL, 0, &want);

    size_t size = chnative_size(bc.native);
    char *block = malloc(size);
    assert_non_null(block);
    size_t n = chnative_write(bc.native, (uint32_t)WS, block);
    assert_true(n <= size);
    print_message("Native block: %zu bytes (ClickHouse's: %zu)\n", n, want.body_len);
    assert_int_equal(n, want.body_len);
    assert_memory_equal(block, want.body, n);
    httpc_response_free(&want);

    /* inserted as Native it reads back as the oracle's rows */
    create_table(ch, "mine");
    ch_do(ch, "INSERT INTO wanledger.mine FORMAT Native", block, n, NULL);
    free(block);
    struct httpc_response a, o;
    ch_do(ch, "SELECT * FROM wanledger.mine ORDER BY idx FORMAT TabSeparated", NULL, 0, &a);
    ch_do(ch, "SELECT * FROM wanledger.oracle ORDER BY idx FORMAT TabSeparated", NULL, 0, &o);
    assert_int_equal(a.body_len, o.body_len);
    assert_memory_equal(a.body, o.body, a.body_len);
    httpc_response_free(&a);
    httpc_response_free(&o);

    /* and as the numbers and names the report holds */
    char want_sums[128];
    th_strfmt(want_sums, sizeof want_sums, "%d\t%" PRIu64 "\t%" PRIu64 "\t12288\t%" PRId64 "\n",
              NFLOWS, TX_SUM, RX_SUM, WS);
    ch_expect(ch,
              "SELECT count(), sum(tx_bytes), sum(rx_bytes), sum(nfs_bytes),"
              " toUnixTimestamp(min(window_start)) FROM wanledger.mine FORMAT TabSeparated",
              want_sums);
    ch_expect(ch,
              "SELECT user_name = 'a\\tb\\nc\\\\d\"e', program = 'café ☃', pid, uid, remote_port, "
              "local_port FROM wanledger.mine"
              " WHERE idx IN (0, 1) ORDER BY idx FORMAT TabSeparated",
              "1\t1\t2147483647\t2147483647\t5201\t40000\n"
              "\\N\t\\N\t\\N\t\\N\t65535\t1\n");
    ch_expect(ch,
              "SELECT concat(toString(isNull(role)), ',', ifNull(nfs_export, 'NULL'), ',',"
              " toString(length(ifNull(user_name, ''))), ',', ifNull(local_addr, 'NULL'), ',',"
              " toString(isNull(local_port)))"
              " FROM wanledger.mine ORDER BY idx FORMAT TabSeparated",
              "0,NULL,9,10.1.0.2,0\n"
              "1,NULL,0,10.1.0.2,0\n"
              "1,/export/da ta,5,10.1.0.2,0\n"
              "1,NULL,0,NULL,1\n"
              "0,NULL,0,fd00:1::2,0\n"
              "0,NULL,300,10.1.0.2,0\n"
              "0,NULL,3,10.1.0.2,0\n");
    ingest_batch_free(&bp);
    ingest_batch_free(&bc);
    cfg_free(pg);
    cfg_free(ch);
}

static void test_value_too_wide_refused(void **state)
{
    (void)state;
    struct chnative n;
    chnative_init(&n, 2);
    struct flow_row r;
    memset(&r, 0, sizeof r);
    flow_row_str(&r, FR_AGENT_ID, "a");
    flow_row_int(&r, FR_LOCAL_PORT, 65535);
    chnative_add(&n, &r);
    assert_int_equal(n.rows, 1);
    assert_true(chnative_size(&n) > 0);
    flow_row_int(&r, FR_LOCAL_PORT, 70000);
    chnative_add(&n, &r);
    assert_int_equal(n.bad_col, FR_LOCAL_PORT);
    assert_int_equal(n.bad_val, 70000);
    assert_int_equal(chnative_size(&n), 0);
    chnative_free(&n);
}

/* Rows beyond the size hint (the columns grow while rows are added) give the same block as
 * rows within it. */
static void test_growth_beyond_the_hint(void **state)
{
    (void)state;
    struct chnative small, big;
    chnative_init(&small, 1);
    chnative_init(&big, 300);
    char name[400];
    memset(name, 'n', sizeof name);
    for (int i = 0; i < 300; i++) {
        struct flow_row r;
        memset(&r, 0, sizeof r);
        flow_row_str(&r, FR_AGENT_ID, "agent-g");
        flow_row_int(&r, FR_IDX, (uint64_t)i);
        flow_row_text(&r, FR_USER_NAME, name, (size_t)(i % 7 ? i % 7 : 400)); /* 1-byte and
                                                                                2-byte lengths */
        if (i % 3)
            flow_row_int(&r, FR_PID, (uint64_t)i * 1000);
        flow_row_int(&r, FR_TX_BYTES, UINT64_MAX - (uint64_t)i);
        chnative_add(&small, &r);
        chnative_add(&big, &r);
    }
    size_t a = chnative_size(&small), b = chnative_size(&big);
    assert_int_equal(a, b);
    assert_true(a > 300 * 8);
    char *x = malloc(a), *y = malloc(b);
    assert_non_null(x);
    assert_non_null(y);
    size_t nx = chnative_write(&small, 1, x), ny = chnative_write(&big, 1, y);
    assert_int_equal(nx, ny);
    assert_memory_equal(x, y, nx);
    free(x);
    free(y);
    chnative_free(&small);
    chnative_free(&big);
}

/* Blocks framed as ClickHouse's compressed format (chblock_frame) of every size from 2 to 400
 * bytes, stored (identity, method none) and zstd: the server checks each checksum (CityHash128
 * v1.0.2: below 16, 16-127 and over 128 bytes, every tail length) and takes every row once; one
 * checksum bit flipped is refused and adds nothing. */
static void test_frames_pass_the_servers_checksum(void **state)
{
    (void)state;
    struct cfg *ch = config(true);
    ch_do(ch, "CREATE DATABASE IF NOT EXISTS wanledger", NULL, 0, NULL);
    ch_do(ch, "DROP TABLE IF EXISTS wanledger.framed", NULL, 0, NULL);
    ch_do(ch, "CREATE TABLE wanledger.framed (s String) ENGINE = Memory", NULL, 0, NULL);
    enum { MAX = 400 };
    size_t cap = 0;
    for (size_t n = 2; n <= MAX; n++)
        cap += 2 * (CHBLOCK_FRAME_HEAD + ZSTD_compressBound(n));
    char *body = malloc(cap), raw[MAX], z[MAX + 64];
    assert_non_null(body);
    size_t at = 0, rows = 0, bytes = 0;
    for (size_t n = 2; n <= MAX; n++) { /* one row of n - 1 letters and its newline */
        memset(raw, 'a' + (int)(n % 26), n - 1);
        raw[n - 1] = '\n';
        size_t zl = ZSTD_compress(z, sizeof z, raw, n, 1);
        assert_false(ZSTD_isError(zl));
        at += chblock_frame("identity", raw, n, n, body + at);
        at += chblock_frame("zstd", z, zl, n, body + at);
        rows += 2;
        bytes += 2 * (n - 1);
    }
    char err[512];
    struct httpc_response r;
    if (chstore_exec(&ch->clickhouse, "INSERT INTO wanledger.framed FORMAT TabSeparated", body, at,
                     "decompress=1", &r, err, sizeof err) != 0)
        fail_msg("framed blocks refused: %s", err);
    httpc_response_free(&r);
    char want[64];
    th_strfmt(want, sizeof want, "%zu\t%zu\n", rows, bytes);
    ch_expect(ch, "SELECT count(), sum(length(s)) FROM wanledger.framed FORMAT TabSeparated", want);
    /* one bit of the first block's checksum flipped */
    body[3] ^= 1;
    assert_int_equal(chstore_exec(&ch->clickhouse,
                                  "INSERT INTO wanledger.framed FORMAT TabSeparated", body, at,
                                  "decompress=1", &r, err, sizeof err),
                     -1);
    print_message("refused: %.160s\n", err);
    assert_non_null(strstr(err, "Checksum doesn't match"));
    ch_expect(ch, "SELECT count(), sum(length(s)) FROM wanledger.framed FORMAT TabSeparated", want);
    free(body);
    cfg_free(ch);
}

/* One outbox row (and its report's row, pending) as a writer of that format would leave it:
 * format NULL is a writer that does not name the column. */
static void outbox_row(const char *agent, const char *format, const char *coding, const char *data,
                       size_t len, size_t raw_len)
{
    char ws[TM_RFC3339_LEN];
    tm_format_rfc3339(WS * TM_USEC_PER_SEC, ws);
    th_db_exec(db,
               "INSERT INTO flow_reports (agent_id, seq, host, window_start, window_seconds,"
               " n_flows, ch_pending) VALUES ('%s', 1, 'nyc-gpu-1', '%s', 60, %d, true)",
               agent, ws, NFLOWS);
    char nrows[24], raw[24];
    th_strfmt(nrows, sizeof nrows, "%d", NFLOWS);
    th_strfmt(raw, sizeof raw, "%zu", raw_len);
    const char *p[] = {agent, ws, nrows, raw, coding, data, format};
    int lens[] = {0, 0, 0, 0, 0, (int)len, 0}, fmts[] = {0, 0, 0, 0, 0, 1, 0};
    PGresult *r = PQexecParams(
        db,
        format ? "INSERT INTO ch_outbox (agent_id, seq, window_start, n_rows, raw_bytes, coding,"
                 " block, format) VALUES ($1, 1, $2, $3, $4, $5, $6, $7)"
               : "INSERT INTO ch_outbox (agent_id, seq, window_start, n_rows, raw_bytes, coding,"
                 " block) VALUES ($1, 1, $2, $3, $4, $5, $6)",
        format ? 7 : 6, NULL, p, lens, fmts, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("outbox row: %s", PQresultErrorMessage(r));
    PQclear(r);
}

static void test_tsv_rows_from_before_ship_on_their_own(void **state)
{
    (void)state;
    struct cfg *pg = config(false), *ch = config(true);
    char err[512];
    th_db_exec(db, "DELETE FROM ch_outbox");
    th_db_exec(db, "DELETE FROM flow_reports");
    ch_do(ch, "DROP TABLE IF EXISTS wanledger.flow_records", NULL, 0, NULL);
    if (chstore_ensure_schema(&ch->clickhouse, err, sizeof err) != 0)
        fail_msg("%s", err);
    /* oldest: TabSeparated, labelled by the migration's default as it would be for a row
     * waiting before sql/035 */
    struct ingest_batch b;
    parse(pg, "agent-old", &b);
    size_t tlen;
    char *tsv = tsv_of_copy(&b, &tlen);
    outbox_row("agent-old", "tsv", "identity", tsv, tlen, tlen);
    free(tsv);
    ingest_batch_free(&b);
    /* then Native, as ingest writes it now */
    parse(ch, "agent-new", &b);
    struct chblock blk;
    assert_int_equal(chblock_build(b.native, b.window_start_us, b.report[0], b.report[1], &blk), 0);
    outbox_row("agent-new", "native", blk.coding, blk.data, blk.len, blk.raw_len);
    chblock_free(&blk);
    ingest_batch_free(&b);
    /* newest: TabSeparated from a binary that does not name the format (an upgrade in flight) */
    parse(pg, "agent-late", &b);
    tsv = tsv_of_copy(&b, &tlen);
    outbox_row("agent-late", NULL, "identity", tsv, tlen, tlen);
    free(tsv);
    ingest_batch_free(&b);
    assert_string_equal(th_db_one(db, "SELECT string_agg(format, ',' ORDER BY id) FROM ch_outbox"),
                        "tsv,native,tsv");

    /* a format per INSERT, the oldest row's first: both TabSeparated rows, then the Native one */
    size_t per[3];
    for (int i = 0; i < 3; i++) {
        struct chflush_batch fb;
        if (chflush_once(db, ch, &fb, err, sizeof err) != 0)
            fail_msg("shipment %d: %s", i, err);
        per[i] = fb.reports;
    }
    assert_int_equal(per[0], 2);
    assert_int_equal(per[1], 1);
    assert_int_equal(per[2], 0);
    assert_string_equal(th_db_one(db, "SELECT count(*) FROM ch_outbox"), "0");
    assert_string_equal(th_db_one(db, "SELECT count(*) FROM flow_reports WHERE ch_pending"), "0");
    char want[160];
    th_strfmt(want, sizeof want,
              "agent-late\t%d\t%" PRIu64 "\nagent-new\t%d\t%" PRIu64 "\nagent-old\t%d\t%" PRIu64
              "\n",
              NFLOWS, TX_SUM, NFLOWS, TX_SUM, NFLOWS, TX_SUM);
    ch_expect(ch,
              "SELECT agent_id, count(), sum(tx_bytes) FROM wanledger.flow_records FINAL"
              " GROUP BY agent_id ORDER BY agent_id FORMAT TabSeparated",
              want);
    /* the names survive either way */
    assert_int_equal(th_ch_num(&CH, "SELECT count() FROM wanledger.flow_records WHERE idx = 0"
                                    " AND user_name = 'a\\tb\\nc\\\\d\"e'"),
                     3);
    cfg_free(pg);
    cfg_free(ch);
}

static int setup(void **state)
{
    (void)state;
    char err[512];
    db = db_connect_str(th_pg_default(), err, sizeof err);
    assert_non_null(db);
    if (db_ensure_partitions(db, (WS - 86400) * TM_USEC_PER_SEC, (WS + 86400) * TM_USEC_PER_SEC,
                             err, sizeof err))
        fail_msg("%s", err);
    th_ch_start(&CH, NULL);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    th_ch_stop(&CH);
    PQfinish(db);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_is_clickhouses),
        cmocka_unit_test(test_value_too_wide_refused),
        cmocka_unit_test(test_growth_beyond_the_hint),
        cmocka_unit_test(test_frames_pass_the_servers_checksum),
        cmocka_unit_test(test_tsv_rows_from_before_ship_on_their_own),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
