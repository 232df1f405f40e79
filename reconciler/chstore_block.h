/* A report's flows as the ClickHouse outbox keeps them (sql/017_ch_outbox.sql, sql/035): the
 * insert block itself — one Native block (chnative.h) that ingest wrote column by column while it
 * read the flows — zstd-compressed. The flusher decodes blocks and concatenates them into one
 * INSERT … FORMAT Native: no conversion, no per-row work. Outbox rows written before sql/035 hold
 * TabSeparated text instead (their format column says so); they decode the same way and ship in
 * INSERTs of their own. */
#ifndef WL_CHSTORE_BLOCK_H
#define WL_CHSTORE_BLOCK_H

#include <stddef.h>
#include <stdint.h>

struct chblock {
    char *data; /* malloc'd: the stored bytes (compressed when coding is "zstd") */
    size_t len;
    size_t raw_len;     /* the Native block's size */
    const char *coding; /* "zstd" or "identity" (static) */
    uint64_t key;       /* the rows' sharding key, cityHash64(agent_id, seq) (chshard.h) */
};

struct chnative;

/* Builds the block from nat (at least one row); ws_us is the report's window start, agent_id and
 * seq (decimal text) the report's. 0, or -1 (out of memory, or nat failed: chnative_size 0).
 * Free with chblock_free. */
int chblock_build(const struct chnative *nat, int64_t ws_us, const char *agent_id, const char *seq,
                  struct chblock *out) __attribute__((warn_unused_result));
void chblock_free(struct chblock *b);

/* Appends the decoded block (raw_len bytes as stored in the outbox row) at dst, which has room
 * for raw_len bytes. 0, or -1 when the stored bytes do not decode to exactly raw_len bytes or the
 * coding is unknown. */
int chblock_decode(const char *coding, const char *data, size_t len, size_t raw_len, char *dst)
    __attribute__((warn_unused_result));

#endif
