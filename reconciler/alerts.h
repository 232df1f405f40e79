/* Gap, over and saturation alerts, pure: which windows of a pair count for or against an alert,
 * the episodes (open … resolved) a history of windows makes, how episodes match the stored alert
 * rows, and the human summaries. No I/O; recon_db_alerts.c does the reading and writing. */
#ifndef WL_ALERTS_H
#define WL_ALERTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "recon.h"

enum alert_kind { ALERT_GAP, ALERT_OVER, ALERT_SATURATION };

/* "gap", "over", "saturation"; and back (-1 if unknown). */
const char *alerts_kind_name(enum alert_kind k);
int alerts_kind_parse(const char *s);

/* How one window of a pair counts: for the alert, against it, or for neither (incomplete or no
 * data). */
enum alert_mark { ALERT_NEUTRAL, ALERT_HIT, ALERT_CLEAR };

/* One window of one pair as the state machine sees it. ratio: gap = unattributed share of the
 * observed payload, over = coverage, saturation = utilisation of the busiest circuit direction. */
struct alert_window {
    int64_t window_start_us;
    enum alert_mark mark;
    uint64_t unattributed_bytes;
    uint64_t observed_payload_bytes;
    double ratio;
};

/* gap: red is a hit; over: over is a hit; incomplete counts for neither; anything else clears.
 * With cfg->counter_staleness_seconds S over windows of W seconds, a counter read at a window's
 * edge may be up to S old, so the true bytes lie within observed x (1 -+ S/W) (at the window's
 * own rate): a red cell is a hit only when its coverage is below red x (1 - S/W), an over cell
 * only above over x (1 + S/W); a cell between is neither hit nor clear (neutral). cfg NULL or
 * S = 0: the status alone decides. */
enum alert_mark alerts_mark_cell(const struct cfg *cfg, enum alert_kind kind,
                                 enum cell_status status, bool has_coverage, double coverage);
/* saturation: any complete circuit direction of the pair above cfg->saturation is a hit; when no
 * direction is complete the window counts for neither. */
enum alert_mark alerts_mark_saturation(const struct cfg *cfg, const struct recon_link_obs *dirs,
                                       size_t n);

/* One alert episode: opened at the alert_windows-th consecutive hit (first_window is the first
 * of them), resolved at the resolve_windows-th consecutive clear window after the last hit. */
struct alert_episode {
    int64_t first_window_us;
    int64_t opened_window_us;
    int64_t last_window_us; /* last hit */
    bool resolved;
    int64_t resolved_window_us;
    size_t n_hits;
    uint64_t peak_unattributed_bytes;
    double peak_ratio;
    /* the last hit window's figures (for the summary) */
    uint64_t last_unattributed_bytes, last_observed_payload_bytes;
    double last_ratio;
};

/* Runs the state machine over windows (oldest first; missing windows may simply be absent),
 * starting closed, or inside `open` when not NULL (an alert already open before the first window
 * given: its first window and peaks carry on). Writes up to max episodes; returns how many there
 * are. */
size_t alerts_replay(int alert_windows, int resolve_windows, const struct alert_window *w, size_t n,
                     const struct alert_episode *open, struct alert_episode *out, size_t max);

/* A stored gap_alerts row of one (kind, pair), as far as matching needs it. */
struct alert_row {
    int64_t id;
    bool open;
    int64_t first_window_us, last_window_us;
};

enum alert_action_kind {
    ALERT_INSERT,   /* a new row for episode */
    ALERT_UPDATE,   /* row continues as episode (may close or reopen it) */
    ALERT_WITHDRAW, /* an open row that no episode supports any more: resolve it */
};

struct alert_action {
    enum alert_action_kind kind;
    size_t episode; /* ALERT_INSERT, ALERT_UPDATE */
    size_t row;     /* ALERT_UPDATE, ALERT_WITHDRAW */
};

/* Matches the episodes replayed from a history with the rows stored for the same (kind, pair)
 * that the history could touch: an episode continues the row whose windows overlap it (or the
 * open row, when the episode is still open); unmatched episodes become new rows; unmatched open
 * rows are withdrawn; unmatched resolved rows are history and stay. Writes at most n_episodes +
 * n_rows actions and returns how many. */
size_t alerts_match(const struct alert_episode *episodes, size_t n_episodes,
                    const struct alert_row *rows, size_t n_rows, struct alert_action *out);

/* A workflow's share of a cell's attributed bytes. */
struct alert_workflow {
    const char *workflow; /* "" when unknown */
    uint64_t bytes;
};

/* The top max workflows (by bytes) in the rollup rows of one pair; returns how many. */
size_t alerts_top_workflows(const struct recon_rollup *rows, size_t n, int src_site, int dst_site,
                            struct alert_workflow *out, size_t max);

/* Human summaries (one line, figures with units), written into buf; return buf. */
char *alerts_summary_cells(char *buf, size_t len, enum alert_kind kind, const char *src,
                           const char *dst, const struct alert_episode *ep, int window_seconds);
/* total_bytes: everything attributed on the pair in that window, for the shares. */
char *alerts_summary_saturation(char *buf, size_t len, const char *src, const char *dst,
                                const char *circuit, const struct alert_episode *ep,
                                uint64_t capacity_bps, const struct alert_workflow *top,
                                size_t n_top, uint64_t total_bytes);

#endif
