/* The one definition of a flow record row (docs/design.md "Flow records"): the columns of
 * flow_records in sql/001_schema.sql, in COPY order, with their PostgreSQL type, their ClickHouse
 * type and how each is read back as ClickHouse TabSeparated text. Ingest writes rows with
 * flow_row_copy_text (store.c COPYs them with flow_row_names), the reconciler's loader selects
 * columns by their enum (recon_db_load.c), and the ClickHouse store creates its table and ships
 * rows from this table (chstore.c). test_recon_db checks the table against the database. */
#ifndef WL_FLOW_ROW_H
#define WL_FLOW_ROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum flow_col {
    FR_WINDOW_START,
    FR_AGENT_ID,
    FR_SEQ,
    FR_IDX,
    FR_HOST,
    FR_SOURCE, /* 'socket' | 'nfs' */
    FR_PROTO,  /* socket: 'tcp' | 'udp' */
    FR_LOCAL_ADDR,
    FR_LOCAL_PORT,
    FR_REMOTE_ADDR,
    FR_REMOTE_PORT,
    FR_ROLE, /* 'client' | 'server' | 'unknown' */
    FR_TX_BYTES,
    FR_RX_BYTES,
    FR_NFS_SERVER,
    FR_NFS_PORT,
    FR_NFS_EXPORT,
    FR_NFS_OP, /* 'read' | 'write' */
    FR_NFS_BYTES,
    FR_NFS_OPS,
    FR_PID,
    FR_UID,
    FR_USER_NAME,
    FR_PROGRAM,
    FR_WORKFLOW,
    FR_CONTAINER,      /* the agent's container id */
    FR_NAMESPACE,      /* Kubernetes pod namespace ('' outside pods; sql/015_kube_owner.sql) */
    FR_POD,            /* Kubernetes pod name */
    FR_CONTAINER_NAME, /* Kubernetes container name */
    FR_NCOLS
};

enum flow_type {
    FRT_TIME, /* written as RFC 3339 text; ClickHouse DateTime (Unix seconds) */
    FRT_TEXT,
    FRT_INT, /* unsigned decimal */
    FRT_INET /* an address in its text form */
};

struct flow_col_def {
    const char *name; /* the column in flow_records and in ClickHouse */
    enum flow_type type;
    bool nullable;
    bool summed;           /* a byte/operation count: summed per connection by the reconciler */
    const char *pg_type;   /* as information_schema.columns.data_type reports it */
    const char *ch_type;   /* the ClickHouse column type (18.16 subset) */
    const char *pg_export; /* a PostgreSQL expression giving the value as ClickHouse text */
};

extern const struct flow_col_def flow_cols[FR_NCOLS];

/* One row's values: text (s, n), inet and time (s, NUL-terminated), int (u); set false = NULL.
 * 16 bytes (a column is either text or an integer; every text is a bounded name, far below 4 GiB):
 * ingest clears a row per flow record, so its size is CPU. */
struct flow_val {
    union {
        const char *s;
        uint64_t u;
    };
    uint32_t n;
    bool set;
    bool plain; /* text: holds no byte COPY escapes (copyesc.h), so it is written as it is */
};

struct flow_row {
    struct flow_val v[FR_NCOLS];
};

/* Setters, inline: ingest calls them ~25 times per flow record. */
static inline void flow_row_text(struct flow_row *r, enum flow_col c, const char *s, size_t n)
{
    r->v[c] = (struct flow_val){.s = s, .n = (uint32_t)n, .set = s != NULL};
}

/* The same for a text known to hold no '\\', tab, newline or CR (a JSON string read without a
 * backslash escape: jsonv.h's escaped): written without the escaper. */
static inline void flow_row_text_plain(struct flow_row *r, enum flow_col c, const char *s, size_t n)
{
    r->v[c] = (struct flow_val){.s = s, .n = (uint32_t)n, .set = s != NULL, .plain = true};
}

static inline void flow_row_str(struct flow_row *r, enum flow_col c, const char *s) /* NULL: NULL */
{
    flow_row_text(r, c, s, s ? strlen(s) : 0);
}

static inline void flow_row_int(struct flow_row *r, enum flow_col c, uint64_t u)
{
    r->v[c] = (struct flow_val){.u = u, .set = true};
}

/* Bytes flow_row_copy_text may write for r (its newline included). */
size_t flow_row_copy_max(const struct flow_row *r);
/* Writes r as one line of PostgreSQL COPY text (also ClickHouse TabSeparated, but for the time),
 * newline included, into out (flow_row_copy_max bytes); returns the bytes written. */
size_t flow_row_copy_text(char *out, const struct flow_row *r);

/* What a column list is made of. */
enum flow_list {
    FRL_NAMES,     /* name, name, ... */
    FRL_PG_EXPORT, /* pg_export, ... (the query of the ClickHouse outbox) */
    FRL_CH_DEFS    /* name ch_type, ... (CREATE TABLE) */
};

/* Writes the columns whose bit (1 << col) is in mask (FLOW_ROW_ALL: every column), in column
 * order, separated by ", ", each prefixed with prefix (e.g. "r."; NULL: none), into out. When pos
 * is not NULL, pos[col] becomes the column's position in the list (-1 when left out). Returns the
 * length, or -1 when out is too small. */
#define FLOW_ROW_ALL ((UINT64_C(1) << FR_NCOLS) - 1)
int flow_row_list(char *out, size_t len, enum flow_list what, uint64_t mask, const char *prefix,
                  int pos[FR_NCOLS]);

/* Unescapes one TabSeparated/COPY text field in place (\\, \t, \n, \r, \b, \f, \0, \', \N is
 * not a field but NULL: returns false). s is NUL-terminated; returns true when not NULL. */
bool flow_row_unescape(char *s);
/* The same for s[0..n) (not NUL-terminated, never \N): returns the unescaped length, which may
 * hold a NUL byte from \0. */
size_t flow_row_unescape_n(char *s, size_t n);

#endif
