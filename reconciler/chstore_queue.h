/* The in-process hand-off of just-committed ClickHouse outbox blocks from the ingest workers to
 * the flusher (chstore_flush.c): a bounded FIFO of the compressed blocks with their ch_outbox ids,
 * so that the flusher does not read back from PostgreSQL what this process has just written.
 * A block is queued only after its transaction committed; its ch_outbox row stays the record
 * until ClickHouse answered 200 (the flusher locks the rows, FOR UPDATE, before it inserts, and
 * deletes them after): a crash loses only the memory copy, and the block is shipped from
 * ch_outbox after the restart. When the queue is full, or no flusher runs in this process, a
 * block is not queued (the overflow is counted) and the flusher finds it in ch_outbox. */
#ifndef WL_CHSTORE_QUEUE_H
#define WL_CHSTORE_QUEUE_H

#include <event2/buffer.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chstore_block.h"

/* Bounds: compressed bytes and blocks (the ids are passed to PostgreSQL as one array). */
#define CHQ_MAX_BYTES  (64u << 20)
#define CHQ_MAX_BLOCKS 8192

struct chq_block {
    int64_t id; /* ch_outbox.id */
    size_t rows;
    struct chblock blk;
    int64_t at_ns; /* when queued (monotonic) */
    struct chq_block *next;
};

/* The blocks written by a not yet committed transaction (store.c keeps one per worker): one for
 * a report written alone, one per fresh report of a grouped commit (store_group.h), in the order
 * of their ch_outbox ids. */
struct chq_held {
    struct chq_block *b, *last;
};

/* Takes blk (blk is emptied) as the block of ch_outbox row id with rows flow records, after the
 * blocks already held. On out of memory the block is freed (it is in ch_outbox). */
void chq_hold(struct chq_held *h, int64_t id, size_t rows, struct chblock *blk);
/* After COMMIT (committed true): queues every held block, in order (each one that finds the queue
 * full is counted as an overflow and left to ch_outbox); after ROLLBACK: frees them. */
void chq_release(struct chq_held *h, bool committed);

/* The flusher thread turns the queue on when it starts and off when it stops (blocks still
 * queued are freed: they are in ch_outbox). Off, nothing is queued. */
void chq_enable(bool on);
/* Pops the oldest whole blocks up to max_rows flow records (at least one). NULL when empty. */
struct chq_block *chq_take(size_t max_rows);
/* Puts blocks taken by chq_take back at the head (an insert that failed), in their order. */
void chq_putback(struct chq_block *list);
void chq_free_list(struct chq_block *list);

struct chq_state {
    size_t blocks, rows, bytes;
    int64_t first_ns, last_ns; /* the oldest and newest queued block (0 when empty) */
};
void chq_state(struct chq_state *s);
/* "{id,id,...}" of every queued block (malloc'd), for the flusher's ch_outbox read to skip. */
char *chq_ids(void);
/* Waits until until_ns (monotonic), or the queue holds at least wake_rows, or chq_kick. */
void chq_wait(int64_t until_ns, size_t wake_rows);
/* Wakes chq_wait now (the flusher is stopping). */
void chq_kick(void);
/* Blocks shipped from memory (by the flusher, after ClickHouse's 200). */
void chq_note_shipped(size_t blocks);

/* Prometheus lines: depth (blocks, rows, bytes), blocks not queued because the queue was full,
 * blocks shipped from memory. */
void chq_metrics(struct evbuffer *out);

#endif
