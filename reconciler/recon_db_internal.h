/* Internal to the reconciler's database glue (recon_db*.c); other modules use recon_db.h.
 * recon_db.c runs one window: recon_db_load.c reads its raw rows, recon_run computes,
 * recon_db_write.c writes the results, recon_db_alerts.c the alert changes; recon_db_windows.c
 * finds pending windows and marks them done. recon_db_util.c holds the libpq/text helpers. */
#ifndef WL_RECON_DB_INTERNAL_H
#define WL_RECON_DB_INTERNAL_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alerts.h"
#include "config.h"
#include "flow_row.h"
#include "recon.h"
#include "recon_db.h"
#include "timeutil.h"

/* ---- libpq helpers (recon_db_util.c) ---- */

/* err = "what: the server's (or the connection's) message", without the trailing newline. */
void rdb_set_err(char *err, size_t errlen, const char *what, const PGresult *r, PGconn *db);
/* Runs sql with text parameters; returns the result (PGRES_TUPLES_OK / COMMAND_OK) or NULL with
 * err filled. */
PGresult *rdb_q(PGconn *db, const char *what, char *err, size_t errlen, const char *sql, int n,
                const char *const *params);
/* A text field, NULL when SQL NULL; as integers with a default (or *has = false). */
const char *rdb_val(const PGresult *r, int row, int col);
int64_t rdb_val_i64(const PGresult *r, int row, int col, int64_t dflt);
uint64_t rdb_val_u64(const PGresult *r, int row, int col, bool *has);

#define RDB_NUM_LEN 32 /* a decimal int64 */
void rdb_fmt_i64(char buf[RDB_NUM_LEN], int64_t v);
/* int64 microseconds -> timestamptz text, exactly (no float round trip) */
void rdb_fmt_ts(char buf[TM_RFC3339_LEN], int64_t us);

/* A growable text buffer for COPY data and array literals; oom set once an allocation failed. */
struct rdb_sbuf {
    char *p;
    size_t n, cap;
    bool oom;
};

void rdb_sb_add(struct rdb_sbuf *b, const char *s, size_t n);
__attribute__((format(printf, 2, 3))) void rdb_sb_printf(struct rdb_sbuf *b, const char *fmt, ...);
/* Microseconds from the Unix epoch to PostgreSQL's (2000-01-01T00:00:00Z). */
#define RDB_PG_EPOCH_OFFSET_US (INT64_C(946684800) * TM_USEC_PER_SEC)
/* An unsigned big-endian integer of n bytes (binary COPY). */
void rdb_sb_be(struct rdb_sbuf *b, uint64_t v, int n);
/* Binary COPY data: its signature and header, its trailer, and one text field (the length word
 * and the bytes, no terminator). */
void rdb_sb_bin_begin(struct rdb_sbuf *b);
void rdb_sb_bin_end(struct rdb_sbuf *b);
void rdb_sb_bin_text(struct rdb_sbuf *b, const char *s);
/* The head of a binary COPY field holding a one-dimensional array of n elements without NULLs
 * (elem: the element type's OID: 20 int8, 23 int4, 25 text; bytes: the elements' total size with
 * their 4-byte length words); the caller adds the elements. */
void rdb_sb_array_head(struct rdb_sbuf *b, size_t n, size_t bytes, uint32_t elem);
/* The same for an array whose elements may be NULL (an element's length word -1). */
void rdb_sb_array_head_nulls(struct rdb_sbuf *b, size_t n, size_t bytes, uint32_t elem,
                             bool has_null);
/* A COPY text-format field (then a tab or newline is added by the caller). */
void rdb_sb_copy_text(struct rdb_sbuf *b, const char *s);
/* An element of a text[] array literal: "…" with \ and " escaped. */
void rdb_sb_array_elem(struct rdb_sbuf *b, const char *s, bool first);
/* Runs sql with text parameters and discards its result; *rows (when rows is not NULL): the
 * rows it affected. 0 or -1 with err. */
int rdb_run(PGconn *db, const char *what, const char *sql, int n, const char *const *params,
            long long *rows, char *err, size_t errlen);
/* Runs the COPY ... FROM STDIN sql with data. 0 or -1 with err. */
int rdb_copy_in(PGconn *db, const char *sql, const struct rdb_sbuf *data, char *err, size_t errlen);

/* ---- writes in proportion to what changed (recon_db_diff.c) ---- */

/* One per-window result table: its COPY column list (window_start first), its key and the
 * value columns compared (comma-separated), COPY format, and the upsert of its hourly rollup
 * from the signed rows of the temp table (a format with one %s: the temp table), or NULL. */
struct rdb_diff_table {
    const char *table, *cols, *key, *vals;
    bool binary;
    const char *hourly;
    /* when set, the table listing the hours whose hourly rows exist (sql/020's
     * attribution_hours): a window of another hour writes no hourly rows */
    const char *hours;
    /* the key is a btree (a primary key): a big first write goes in in key order
     * (rdb_diff_sort_above); without one the rows are COPYed straight in */
    bool keyed;
    /* the data is in key order already: a first write is COPYed straight in at any size */
    bool ordered;
    /* when set, the hourly upsert of a first write COPYed straight in (%s: the window, as
     * rdb_fmt_ts text), for a table with one row per key and window: no grouping, no sort */
    const char *hourly_first;
    /* the hourly rollup's table, when not <table>_hourly */
    const char *hourly_table;
};

/* Rows of the window: written (new or changed), removed (stored rows changed or gone), unchanged
 * (new rows equal to the stored ones, not written). */
struct rdb_diff_counts {
    long long written, removed, unchanged;
};

/* A first write of at least this many rows into a keyed table goes through the temp table and an
 * ORDER BY of the key (default 50,000; tests set 0 to take that path with a few rows). */
extern long long rdb_diff_sort_above;
/* Makes table t's rows of window ws (timestamptz text) equal to data (COPY rows of t->cols),
 * writing only the rows that differ, and applies the difference to the hourly rollup; n_rows:
 * the rows in data. Nothing is compared or written when the rows' digest is the one stored with
 * the window's rows of t (sql/034; the caller's transaction holds ROW EXCLUSIVE on
 * result_digests from before its first read of stored rows and sets wanledger.result_writer). */
int rdb_diff_write(PGconn *db, const struct rdb_diff_table *t, const char *ws,
                   const struct rdb_sbuf *data, long long n_rows, struct rdb_diff_counts *out,
                   char *err, size_t errlen);

/* ---- what the reconciler last wrote per window and table (recon_db_digest.c, sql/034) ---- */

#define RDB_DIGEST_HEX 65 /* SHA-256 as hex, NUL-terminated */
/* The digest of table's rows as data (COPY data of n_rows rows); -1 when OpenSSL fails. */
int rdb_digest_hex(const char *table, const struct rdb_sbuf *data, long long n_rows,
                   char out[RDB_DIGEST_HEX]);
/* result_digests' row of (ws, table) set to (n_rows, hex), in the caller's transaction. */
int rdb_digest_store(PGconn *db, const char *table, const char *ws, long long n_rows,
                     const char *hex, char *err, size_t errlen);
/* One more table of a window left unwritten (recon_db_unchanged_tables). */
void rdb_digest_count_unchanged(void);

/* The window's owner rows (res->rollup) packed per pair into attribution_packed (sql/022),
 * through rdb_diff_write; *changed += the pair rows written and removed
 * (recon_db_owners.c). */
int rdb_write_owners(PGconn *db, const struct cfg *cfg, const char *from, int64_t ws,
                     const struct recon_result *res, long long *changed, char *err, size_t errlen);

/* ---- a window's raw rows (recon_db_load.c) ---- */

/* The strings of the flows a load reads (recon_db_flows.c; the ClickHouse path's too): each value
 * copied once into blocks of the table's own, an equal value of the same column met recently
 * shared (a small direct-mapped cache per column: most owner strings repeat). _new: NULL when out
 * of memory; _put: the NUL-terminated copy of value[0..len) in column col (RDB_STR_*), NULL when
 * out of memory; _chain: more freed with t. */
enum {
    RDB_STR_HOST,
    RDB_STR_USER,
    RDB_STR_PROGRAM,
    RDB_STR_WORKFLOW,
    RDB_STR_NAMESPACE,
    RDB_STR_POD,
    RDB_STR_CONTAINER,
    RDB_STR_EXPORT,
    RDB_STR_AGENT,
    RDB_STR_COLS
};
struct rdb_strtab;
struct rdb_strtab *rdb_strtab_new(void);
const char *rdb_str_put(struct rdb_strtab *t, int col, const void *value, size_t len);
void rdb_strtab_free(struct rdb_strtab *t);
void rdb_strtab_chain(struct rdb_strtab *t, struct rdb_strtab *more);

struct rdb_inputs {
    PGresult *samples_r, *transfers_r;
    struct recon_sample *samples;
    size_t n_samples;
    struct recon_flow *flows;
    size_t n_flows;
    struct recon_flow_order *order; /* NULL (flows in arrival order) or n_flows */
    uint64_t *rank;                 /* NULL or n_flows (recon_input.rank) */
    struct rdb_strtab *strs;        /* the flows' strings, or NULL */
    struct recon_transfer *transfers;
    size_t n_transfers;
};

void rdb_inputs_free(struct rdb_inputs *in);
/* The statement budget of a window's transaction: the session's PGC_STATEMENT_TIMEOUT_S, or
 * RDB_BUDGET_US_PER_FLOW per flow record the window's reports carry when that is more (SET
 * LOCAL: a 5 M window's statements are not cut at 300 s, a small window's still are), and
 * work_mem for its joins and aggregates; *n_flows = the flow records its reports carry. */
#define RDB_BUDGET_US_PER_FLOW                                                                     \
    100 /* ~3x a whole window's measured cost per flow (BENCHMARKS.md)                             \
         */
#define RDB_BIG_WINDOW_WORK_MEM "256MB" /* windows of over 200,000 flow records */
int rdb_set_budget(PGconn *db, int64_t ws, long long *n_flows, char *err, size_t errlen);
/* Each fills its part of in for the window starting at ws; 0 or -1 with err. */
int rdb_load_samples(PGconn *db, const struct cfg *cfg, int64_t ws, struct rdb_inputs *in,
                     char *err, size_t errlen);
/* The flow_records columns the reconciliation reads (flow_row.h), on either store. */
#define RDB_FR(c) (UINT64_C(1) << (c))
#define RDB_FLOW_COLS                                                                              \
    (RDB_FR(FR_HOST) | RDB_FR(FR_SOURCE) | RDB_FR(FR_PROTO) | RDB_FR(FR_LOCAL_ADDR) |              \
     RDB_FR(FR_LOCAL_PORT) | RDB_FR(FR_REMOTE_ADDR) | RDB_FR(FR_REMOTE_PORT) | RDB_FR(FR_ROLE) |   \
     RDB_FR(FR_TX_BYTES) | RDB_FR(FR_RX_BYTES) | RDB_FR(FR_NFS_SERVER) | RDB_FR(FR_NFS_PORT) |     \
     RDB_FR(FR_NFS_EXPORT) | RDB_FR(FR_NFS_OP) | RDB_FR(FR_NFS_BYTES) | RDB_FR(FR_USER_NAME) |     \
     RDB_FR(FR_PROGRAM) | RDB_FR(FR_WORKFLOW) | RDB_FR(FR_NAMESPACE) | RDB_FR(FR_POD) |            \
     RDB_FR(FR_CONTAINER_NAME))
/* The enums of a flow from its texts (NULL where absent): source, and proto and role of a
 * socket flow or the operation of an NFS one. */
void rdb_flow_kinds(struct recon_flow *f, const char *source, const char *proto, const char *role,
                    const char *nfs_op);
/* The window's flow records in the order a plain SELECT of them returns (heap order), over one
 * binary COPY parsed as it arrives, or for a window of rdb_load_split_above reported flows or more
 * over two helper connections in the transaction's snapshot, each reading half into its part of
 * one array, in->rank (each flow's row's ctid) giving the heap order back
 * (recon_db_flows_split.c); on any failure of the split the one-COPY load runs. */
int rdb_load_flows(PGconn *db, int64_t ws, struct rdb_inputs *in, char *err, size_t errlen);
extern long long rdb_load_split_above;                      /* default 500,000; tests set 0 */
extern long long rdb_load_splits, rdb_load_split_fallbacks; /* counts, for tests */

/* Helper connections (recon_db_helper.c): the main connection's parameters, and a connection
 * made with them (or with rdb_load_helper_conninfo when set: tests point it elsewhere); the
 * caller checks PQstatus and PQfinishes it. rdb_conn_params_of: 0, or -1 out of memory. */
struct rdb_conn_params {
    PQconninfoOption *opts;
    const char **keys, **vals;
};
extern const char *rdb_load_helper_conninfo; /* tests: the helpers' conninfo (NULL: db's) */
int rdb_conn_params_of(PGconn *db, struct rdb_conn_params *p);
PGconn *rdb_conn_helper(const struct rdb_conn_params *p);
void rdb_conn_params_free(struct rdb_conn_params *p);

/* A load's flows: grown as they come (fixed false: flows and tid its own), or written into a slot
 * of cap flows of the caller's arrays (fixed: a part of a split load; one flow more than cap is an
 * error, the reports' n_flows having said how many there are). */
struct rdb_flow_part {
    struct recon_flow *flows;
    uint64_t *tid;
    size_t n, cap;
    bool fixed;
    struct rdb_strtab *strs;
};
/* One COPY of a window's flows (recon_db_flows.c): part -1 all of them; 0 or 1 the rows whose
 * (hashtext(agent_id) # seq) & 1 is part (flow_packed rows), each flow with its row's ctid as
 * block << 16 | offset in tid[]. out: all zero (grown), or fixed with flows, tid and cap the
 * caller's slot (n 0, strs NULL). */
int rdb_flows_copy(PGconn *db, int64_t ws, int part, struct rdb_flow_part *out, char *err,
                   size_t errlen);
void rdb_flow_part_free(struct rdb_flow_part *p);
int rdb_load_transfers(PGconn *db, const struct cfg *cfg, int64_t ws, struct rdb_inputs *in,
                       char *err, size_t errlen);
/* With analytics.clickhouse (recon_db_ch.c): *n = reports of the window still in the outbox. */
int rdb_ch_pending(PGconn *db, int64_t ws, long long *n, char *err, size_t errlen);
/* The window's flow records from ClickHouse, one per row, with their order; 1 (err
 * says why) when some of its reports are not in ClickHouse yet: the window waits, it is not
 * computed from part of its flows. n_reported: the flow records its reports carry
 * (rdb_set_budget). */
int rdb_load_flows_ch(PGconn *db, const struct cfg *cfg, int64_t ws, long long n_reported,
                      struct rdb_inputs *in, char *err, size_t errlen);

/* ---- results (recon_db_write.c) and alerts (recon_db_alerts.c) ---- */

/* Cells of a pair one of whose sites has an agent that reported a lost span overlapping the
 * window (agent_gaps rows without seqs: restarted_without_pinned_probe, late_drain) become
 * incomplete, without coverage: the agent's bytes there are unknown, not zero (recon_db_lost.c).
 * no_counter cells stay. *n_cells: the cells changed. 0 or -1 with err. */
int rdb_apply_lost_spans(PGconn *db, const struct cfg *cfg, int64_t ws, struct recon_result *res,
                         size_t *n_cells, char *err, size_t errlen);

const char *rdb_site_name(const struct cfg *cfg, int i);
/* Sites a and b (indexes) in the databases' order (strcmp of the names: code point order, that
 * of their C.UTF-8 collation): < 0, 0, > 0. */
int rdb_site_cmp(const struct cfg *cfg, int a, int b);
/* A transaction that writes result rows: it keeps their hourly rollups and digests itself (its
 * settings), ROW EXCLUSIVE on result_digests to COMMIT. Called before its first result read. */
int rdb_result_writer(PGconn *db, char *err, size_t errlen);
/* Makes the window's dependency_rollup rows the result's (recon_db_deps.c); its
 * attribution_rollup rows (with their hourly rollup, recon_db_owners.c); its heatmap_cells (with
 * their hourly rollup) and link_windows rows (recon_db_write.c: it calls rdb_result_writer; the
 * other two expect it called). Each adds the rows it wrote or removed to *changed
 * (recon_db_diff.c). */
int rdb_write_deps(PGconn *db, const struct cfg *cfg, int64_t ws, const struct recon_result *res,
                   long long *changed, char *err, size_t errlen);
int rdb_write_results(PGconn *db, const struct cfg *cfg, int64_t ws, const struct recon_result *res,
                      long long *changed, char *err, size_t errlen);

/* The owner rows of a big window (rdb_write_split_above rollup and dependency rows or more)
 * written on a helper connection, in a transaction of its own, while db writes the cells, links
 * and dependency rows (recon_db_side.c). rdb_side_start: NULL when the window is small or the
 * helper's thread cannot start. rdb_side_finish(s, ok): ok = db's own writes succeeded; the
 * helper then commits (else rolls back), and is joined. 0: its rows are committed, their count
 * added to *changed; 1: they are not (s NULL, or the helper failed: logged), db must write them
 * itself (rdb_write_owners, after rdb_result_writer). s is freed. */
struct rdb_side;
extern long long rdb_write_split_above;                       /* default 100,000; tests set 0 */
extern long long rdb_write_splits, rdb_write_split_fallbacks; /* counts, for tests */
struct rdb_side *rdb_side_start(PGconn *db, const struct cfg *cfg, int64_t ws,
                                const struct recon_result *res);
int rdb_side_finish(struct rdb_side *s, bool ok, long long *changed);
/* Re-evaluates the alerts of every pair this window may change from its stored history. */
int rdb_evaluate_alerts(PGconn *db, const struct cfg *cfg, int64_t ws,
                        const struct recon_result *res, struct recon_db_stats *st, char *err,
                        size_t errlen);

#endif
