/* A report's flows as the ClickHouse outbox keeps them (sql/017_ch_outbox.sql): the insert block
 * itself — TabSeparated in the column order of flow_row.h, window_start as Unix seconds (what
 * ClickHouse 18.16 and current releases both read into a DateTime) — zstd-compressed, built once
 * at ingest from the rows ingest already wrote as COPY text. The flusher decodes blocks and
 * concatenates them into one INSERT … FORMAT TabSeparated: no re-escaping, no per-row work. */
#ifndef WL_CHSTORE_BLOCK_H
#define WL_CHSTORE_BLOCK_H

#include <stddef.h>
#include <stdint.h>

struct chblock {
    char *data; /* malloc'd: the stored bytes (compressed when coding is "zstd") */
    size_t len;
    size_t raw_len;     /* the TabSeparated block's size */
    const char *coding; /* "zstd" or "identity" (static) */
    uint64_t key;       /* the rows' sharding key, cityHash64(agent_id, seq) (chshard.h) */
};

/* Builds the block from copy[0..len): lines of flow_row_copy_text whose first field is the
 * window start's text; ws_us is that window start; agent_id and seq (decimal text) the report's.
 * 0, or -1 (out of memory, or a line without a tab: not ingest's output). Free with
 * chblock_free. */
int chblock_build(const char *copy, size_t len, int64_t ws_us, const char *agent_id,
                  const char *seq, struct chblock *out) __attribute__((warn_unused_result));
void chblock_free(struct chblock *b);

/* Appends the decoded block (raw_len bytes as stored in the outbox row) at dst, which has room
 * for raw_len bytes. 0, or -1 when the stored bytes do not decode to exactly raw_len bytes or the
 * coding is unknown. */
int chblock_decode(const char *coding, const char *data, size_t len, size_t raw_len, char *dst)
    __attribute__((warn_unused_result));

#endif
