/* The agent's drain state, kept in the spool directory next to agent_id and seq, so that an agent
 * restarted after SIGKILL, a crash or an upgrade resumes the pinned probe's two-generation drain
 * without losing or double counting a byte (README.md "Restarts"):
 *   SPOOL/drain_state    after every committed drain: seq, the generation programs write, the
 *                        drops already reported, the end of the last reported window, the probe's
 *                        owner token and BPF object hash;
 *   SPOOL/drain_pending  written (fsync'd) before a report is handed to the sender and removed once
 *                        its counters are zeroed: the report itself and the generation to zero,
 *                        so a restart re-submits it (the reconciler deduplicates agent_id+seq) and
 *                        finishes the zeroing. */
#ifndef WL_DRAINSTATE_H
#define WL_DRAINSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct drainstate {
    uint64_t seq;          /* last seq reported */
    uint32_t gen;          /* generation the programs write after that drain */
    uint32_t zero_gen;     /* pending only: the generation the report was read from */
    uint64_t drops_seen;   /* cumulative probe drops reported */
    int64_t window_end_us; /* end of the last reported window (the next counts start there) */
    uint64_t token;        /* the probe's owner token (0: no pinned probe) */
    uint64_t obj_hash;     /* sockprobe_obj_hash() of the binary that pinned it */
    int64_t lost_from_us;  /* a loss not yet reported ("lost"), kept across a second crash */
    int64_t lost_to_us;    /* 0: none */
    bool lost_late;        /* that loss is a late drain's (reason late_drain), else a restart's */
};

/* Writes data atomically (tmp, fsync, rename, fsync of the directory). 0 or -1 with errno. */
int drainstate_write_file(const char *path, const char *data, size_t len)
    __attribute__((warn_unused_result));

/* 1 loaded, 0 no file, -1 unreadable or malformed (err says where). */
int drainstate_load(const char *dir, struct drainstate *st, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int drainstate_save(const char *dir, const struct drainstate *st)
    __attribute__((warn_unused_result));

/* The pending report: body is malloc'd (caller frees). Same returns as drainstate_load. */
int drainstate_pending_save(const char *dir, const struct drainstate *st, const char *body,
                            size_t len) __attribute__((warn_unused_result));
int drainstate_pending_load(const char *dir, struct drainstate *st, char **body, size_t *len,
                            char *err, size_t errlen) __attribute__((warn_unused_result));
void drainstate_pending_clear(const char *dir);

#endif
