/* A bounded on-disk FIFO of report bodies (agent reports, poller batches) that wait while the
 * reconciler is unreachable. One file per entry, named by a 20-digit sequence number, fsync'd
 * before spool_push returns; survives restarts; oldest entries are dropped (and counted) when the
 * byte bound would be exceeded. */
#ifndef WL_SPOOL_H
#define WL_SPOOL_H

#include <stddef.h>
#include <stdint.h>

struct spool;

struct spool *spool_open(const char *dir, uint64_t max_bytes, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void spool_close(struct spool *sp);
/* Appends body; returns 0 or -1 (err filled). */
int spool_push(struct spool *sp, const char *body, size_t len, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Oldest entry into a malloc'd buffer (caller frees): 1 if found, 0 if empty, -1 on error. */
int spool_peek(struct spool *sp, char **body, size_t *len);
/* Removes the oldest entry from the queue; -1 when its file could not be deleted (it is
 * dropped from the queue all the same and comes back after a reopen). */
int spool_pop(struct spool *sp);
size_t spool_count(const struct spool *sp);
uint64_t spool_bytes(const struct spool *sp);
/* Entries dropped because of the bound since open. */
uint64_t spool_dropped(const struct spool *sp);
uint64_t spool_dropped_bytes(const struct spool *sp);
/* When the oldest entry was written (seconds since the epoch), 0 when empty. */
int64_t spool_oldest_time(const struct spool *sp);

#endif
