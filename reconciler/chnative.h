/* A report's flow records as one block of ClickHouse's Native format, written column by column
 * while ingest reads the flows (docs/design.md "ClickHouse store"). ClickHouse reads a Native
 * block with no per-value parsing: a TabSeparated row costs its server ~0.35 µs more per flow
 * record (bench/clickhouse/formats.sh), a third of its part of an insert.
 *
 * The layout is what ClickHouse's HTTP interface writes for SELECT … FORMAT Native (no block
 * info: the client revision is 0), checked byte for byte against the server's own output in
 * tests/analytics/test_ch_native.c:
 *   varuint columns, varuint rows, then per column: string name, string type, the values.
 *   varuint: LEB128. string: varuint length, bytes. UInt16/32/64 and DateTime (UInt32 seconds):
 *   little-endian. Nullable(T): one byte per row (1 = NULL), then T's values with a default (0,
 *   "") in the NULL rows.
 * Columns, names and types are flow_row.h's, in its order. Blocks concatenate: an INSERT … FORMAT
 * Native body is any number of them. */
#ifndef WL_CHNATIVE_H
#define WL_CHNATIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "flow_row.h"

struct chnative_col {
    unsigned char *p;
    size_t n, cap;
};

struct chnative {
    /* the values (FR_WINDOW_START: none, see write); a fixed-width column's value of row i at
     * [i * width] (its n is not used: the row count gives its size) */
    struct chnative_col val[FR_NCOLS];
    struct chnative_col nulls[FR_NCOLS]; /* Nullable columns: their null map, [i] (n not used) */
    size_t rows;
    size_t cap_rows;  /* rows the fixed-width columns and null maps have room for */
    bool oom;         /* an append failed: the block is incomplete, not to be written */
    int bad_col;      /* -1, or a column whose value does not fit its ClickHouse type */
    uint64_t bad_val; /* that value */
};

/* An empty block with room for about rows rows (a hint). */
void chnative_init(struct chnative *n, size_t rows);
/* Appends r's values (all but FR_WINDOW_START: one report is one window, written once by
 * chnative_write). A failure is remembered (oom, bad_col) and reported by chnative_size. */
void chnative_add(struct chnative *n, const struct flow_row *r);
/* The block's size in bytes, or 0 when an append failed (see oom and bad_col). */
size_t chnative_size(const struct chnative *n);
/* Writes the block (chnative_size bytes) into out, every row's window_start being ws_seconds;
 * returns the bytes written. */
size_t chnative_write(const struct chnative *n, uint32_t ws_seconds, char *out);
void chnative_free(struct chnative *n);

#endif
