/* A flow record row (flow_row.h) as one tuple of PostgreSQL's binary COPY format (copybin.h):
 * what ingest writes for flow_records when the flows stay in PostgreSQL (no analytics.clickhouse),
 * because the server then parses no timestamps, addresses or numbers (reconciler/README.md
 * "Binary COPY of flow_records"). Types follow flow_cols[].pg_type: bigint 8 bytes, integer 4,
 * timestamptz from the time value's microseconds (flow_row_time), inet from its text. */
#ifndef WL_FLOW_ROW_BIN_H
#define WL_FLOW_ROW_BIN_H

#include <stddef.h>

#include "flow_row.h"

/* Bytes flow_row_copy_bin may write for r. */
size_t flow_row_bin_max(const struct flow_row *r);
/* Writes r as one binary COPY tuple into out (flow_row_bin_max bytes); returns the bytes written,
 * or 0 when an address column does not hold an IPv4/IPv6 address (ingest validated them). */
size_t flow_row_copy_bin(char *out, const struct flow_row *r);

#endif
