/* A report's flows as the ClickHouse outbox keeps them (sql/017_ch_outbox.sql, sql/035): the
 * insert block itself — one Native block (chnative.h) that ingest wrote column by column while it
 * read the flows — zstd-compressed. The flusher frames blocks as ClickHouse's compressed format
 * (chblock_frame) and concatenates them into one INSERT … FORMAT Native: no decompression here, no
 * conversion, no per-row work. Outbox rows written before sql/035 hold TabSeparated text instead
 * (their format column says so); they are framed the same way and ship in INSERTs of their own. */
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

/* The stored block as one block of ClickHouse's compressed format, which its HTTP interface reads
 * with decompress=1 (and clickhouse-client sends): the CityHash128 v1.0.2 of the rest (16 bytes,
 * low half first; the server checks it), the method (0x90 zstd, 0x02 none), the size with this
 * 9-byte header and the raw size (UInt32, little-endian), the stored bytes. So the flusher sends
 * the blocks as the outbox keeps them, ~15 times fewer bytes than decoded, and ClickHouse
 * decompresses them. out has room for CHBLOCK_FRAME_HEAD + len bytes; returns the bytes written,
 * or 0 for an unknown coding or a block over ClickHouse's 1 GiB limit. */
#define CHBLOCK_FRAME_HEAD 25
size_t chblock_frame(const char *coding, const char *data, size_t len, size_t raw_len, char *out)
    __attribute__((warn_unused_result));

#endif
