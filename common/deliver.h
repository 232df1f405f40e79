/* The one delivery path of the agent's reports and the poller's counter batches: a sender
 * thread takes each submitted body, writes it to the bounded on-disk spool (fsync'd) and posts
 * the spool oldest first under the policy of common/deliver_post.h. When the spool cannot be
 * written (full disk, read-only directory, EIO) bodies wait in a bounded memory queue and are
 * sent from there directly, still in order. deliver_submit never blocks on the network or the
 * disk, so a slow or dead reconciler never stops the caller's event loop.
 *
 * Whatever is dropped (the spool's or the memory queue's byte bound) is logged, counted and, with
 * report_drops, rides in the next delivered body as a top-level member
 *   "spool_dropped": {"entries": N, "bytes": B}
 * (counted since the previous delivered body; persisted in the spool directory across restarts).
 * Bodies answered 400/413/422 are moved to SPOOL/rejected/ (kept, logged, counted), not lost. */
#ifndef WL_DELIVER_H
#define WL_DELIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "deliver_post.h"

struct deliver_opts {
    struct deliver_target target; /* url, token, TLS, compression, timeouts */
    const char *spool_dir;        /* required */
    uint64_t spool_max_bytes;     /* default 64 MiB */
    uint64_t mem_max_bytes;       /* bound of the queue while the spool is unwritable (16 MiB) */
    bool report_drops;            /* splice "spool_dropped" into JSON object bodies */
};

struct deliver_stats {
    struct deliver_counters c;
    uint64_t spool_entries, spool_bytes;     /* waiting on disk */
    uint64_t mem_entries, mem_bytes;         /* waiting in memory (spool unwritable, or not yet) */
    double oldest_age_s;                     /* of the oldest waiting body, 0 when none */
    uint64_t dropped_entries, dropped_bytes; /* by a bound, since start */
    uint64_t rejected;                       /* quarantined in SPOOL/rejected/ since start */
    uint64_t spool_write_failures;
    uint64_t direct_sends; /* delivered from memory, bypassing the spool */
    bool spool_ok;         /* false while the spool cannot be written */
};

struct deliver;

struct deliver *deliver_new(const struct deliver_opts *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Queues a copy of body; wakes the sender. Returns 0, -1 when out of memory (logged). */
int deliver_submit(struct deliver *d, const char *body, size_t len);
void deliver_get_stats(struct deliver *d, struct deliver_stats *st);
/* The module's Prometheus text (HELP/TYPE for each family) appended to f. */
void deliver_metrics_render(struct deliver *d, FILE *f);
/* Stops the sender: bodies still in memory go to the spool if it can be written; then, for up
 * to drain_ms, the queue is sent until it is empty or a send fails. Returns how many bodies are
 * left (in the spool for the next run, or lost from memory: logged). Frees d. */
size_t deliver_close(struct deliver *d, int drain_ms);

#endif
