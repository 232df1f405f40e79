/* A report's flow records as rows of flow_packed (sql/024_packed_flows.sql): one row per run of
 * consecutive idx of one report, cut where it reaches FLOW_PACK_ROW_BYTES, one array per column,
 * in PostgreSQL's binary COPY format.
 *
 * Ingest builds a report's flows as COPY text lines (flow_row_copy_text; the ClickHouse outbox
 * block is made from the same text). Without ClickHouse they are stored in PostgreSQL, and one
 * row per flow cost the server ~2.3 µs of CPU per flow to take in against ~1.2 µs for the same
 * flows as arrays (reconciler/README.md "Packed flow records"). flow_pack_rows turns the lines
 * into packed tuples: every value is parsed from the text exactly as the server's text input
 * would have read it, and the view flow_records (sql/024) gives back the rows that one-row-per-
 * flow COPY stored. A column whose every value is NULL — or its default, 0 for the byte and
 * operation counts, '' for the Kubernetes names — is sent as a NULL array (the view reads those
 * as the default): most of a socket flow's NFS and Kubernetes columns. */
#ifndef WL_FLOW_PACK_H
#define WL_FLOW_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "recon_db_internal.h" /* struct rdb_sbuf, the binary COPY writer */

/* A run is cut into rows of at most this many bytes of elements (the binary COPY's length words
 * and values, all-NULL columns included) plus one flow's: a row the loader reads back costs the
 * server a few times its size in memory, and past glibc's trim threshold (128 KiB) each row's
 * memory went back to the kernel and was faulted in again for the next. 1,000-flow rows (~290 KiB
 * here) made a 5 M-flow window's load 5.0-5.6 s instead of 2.3-3.4 s (reconciler/README.md
 * "Packed rows of at most 64 KiB"). */
#define FLOW_PACK_ROW_BYTES (64 * 1024)

struct flow_pack {
    struct rdb_sbuf out; /* the binary COPY data (out.p, out.n) */
    size_t rows;         /* packed rows appended */
};

/* "COPY table (window_start, agent_id, seq, idx0, host, …) FROM STDIN (FORMAT binary)" */
void flow_pack_copy_sql(const char *table, char *out, size_t len);

/* Appends the binary COPY file header. 0, or -1 out of memory. */
int flow_pack_header(struct flow_pack *p);
/* Appends the trailer. 0, or -1 out of memory. */
int flow_pack_trailer(struct flow_pack *p);

/* Appends the packed tuples of text[0..len) (whole COPY text lines of flow_row.h's columns).
 * Returns 0; -1 with err ("flow record 3 (line 3): local_port '70000' is not an integer" …) when
 * a value is not what its column takes, or on out of memory (err says so). */
int flow_pack_rows(struct flow_pack *p, const char *text, size_t len, char *err, size_t errlen);

void flow_pack_free(struct flow_pack *p);

#endif
