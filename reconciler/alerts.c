/* Gap, over and saturation alerts, pure: window marks, the episode state machine, matching
 * episodes with stored rows, and the summaries. */
#include "alerts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timeutil.h"

static const char *const kind_names[] = {
    [ALERT_GAP] = "gap", [ALERT_OVER] = "over", [ALERT_SATURATION] = "saturation"};

const char *alerts_kind_name(enum alert_kind k)
{
    return (unsigned)k < 3 ? kind_names[k] : "?";
}

int alerts_kind_parse(const char *s)
{
    for (int i = 0; i < 3; i++)
        if (s && strcmp(s, kind_names[i]) == 0)
            return i;
    return -1;
}

enum alert_mark alerts_mark_cell(const struct cfg *cfg, enum alert_kind kind,
                                 enum cell_status status, bool has_coverage, double coverage)
{
    if (status == CELL_INCOMPLETE)
        return ALERT_NEUTRAL;
    double slack = 0;
    if (cfg && cfg->counter_staleness_seconds > 0 && cfg->window_seconds > 0)
        slack = cfg->counter_staleness_seconds / cfg->window_seconds;
    if (kind == ALERT_GAP) {
        if (status != CELL_RED)
            return ALERT_CLEAR;
        return !has_coverage || coverage < cell_th_red(cfg) * (1 - slack) ? ALERT_HIT
                                                                          : ALERT_NEUTRAL;
    }
    if (kind == ALERT_OVER) {
        if (status != CELL_OVER)
            return ALERT_CLEAR;
        return !has_coverage || coverage > cell_th_over(cfg) * (1 + slack) ? ALERT_HIT
                                                                           : ALERT_NEUTRAL;
    }
    return ALERT_NEUTRAL;
}

enum alert_mark alerts_mark_saturation(const struct cfg *cfg, const struct recon_link_obs *dirs,
                                       size_t n)
{
    enum alert_mark m = ALERT_NEUTRAL;
    for (size_t i = 0; i < n; i++) {
        if (dirs[i].valid_fraction < CELL_MIN_VALID_FRACTION)
            continue;
        if (dirs[i].has_utilization && dirs[i].utilization > cfg->saturation)
            return ALERT_HIT;
        m = ALERT_CLEAR;
    }
    return m;
}

static void note_hit(struct alert_episode *e, const struct alert_window *w)
{
    e->last_window_us = w->window_start_us;
    e->n_hits++;
    if (w->unattributed_bytes > e->peak_unattributed_bytes)
        e->peak_unattributed_bytes = w->unattributed_bytes;
    if (w->ratio > e->peak_ratio)
        e->peak_ratio = w->ratio;
    e->last_unattributed_bytes = w->unattributed_bytes;
    e->last_observed_payload_bytes = w->observed_payload_bytes;
    e->last_ratio = w->ratio;
}

size_t alerts_replay(int alert_windows, int resolve_windows, const struct alert_window *w, size_t n,
                     const struct alert_episode *open_before, struct alert_episode *out, size_t max)
{
    size_t n_out = 0;
    bool open = open_before != NULL;
    int clears = 0;
    struct alert_episode cur; /* the run of hits being counted, then the open episode */
    memset(&cur, 0, sizeof cur);
    if (open_before)
        cur = *open_before;
    if (alert_windows < 1)
        alert_windows = 1;
    if (resolve_windows < 1)
        resolve_windows = 1;
    for (size_t i = 0; i < n; i++) {
        if (w[i].mark == ALERT_NEUTRAL)
            continue; /* incomplete or missing: neither extends nor breaks a run */
        if (w[i].mark == ALERT_HIT) {
            if (!open && cur.n_hits == 0) {
                memset(&cur, 0, sizeof cur);
                cur.first_window_us = w[i].window_start_us;
            }
            note_hit(&cur, &w[i]);
            clears = 0;
            if (!open && cur.n_hits >= (size_t)alert_windows) {
                open = true;
                cur.opened_window_us = w[i].window_start_us;
            }
            continue;
        }
        if (!open) {
            cur.n_hits = 0;
            continue;
        }
        if (++clears >= resolve_windows) {
            cur.resolved = true;
            cur.resolved_window_us = w[i].window_start_us;
            if (n_out < max)
                out[n_out] = cur;
            n_out++;
            open = false;
            clears = 0;
            memset(&cur, 0, sizeof cur);
        }
    }
    if (open) {
        if (n_out < max)
            out[n_out] = cur;
        n_out++;
    }
    return n_out;
}

static bool overlaps(const struct alert_episode *e, const struct alert_row *r)
{
    int64_t e_end = e->resolved ? e->last_window_us : INT64_MAX;
    int64_t r_end = r->open ? INT64_MAX : r->last_window_us;
    return e->first_window_us <= r_end && r->first_window_us <= e_end;
}

size_t alerts_match(const struct alert_episode *episodes, size_t n_episodes,
                    const struct alert_row *rows, size_t n_rows, struct alert_action *out)
{
    size_t n = 0;
    bool *used = calloc(n_rows + 1, sizeof *used);
    if (!used)
        return 0;
    for (size_t e = 0; e < n_episodes; e++) {
        size_t pick = n_rows;
        for (size_t r = 0; r < n_rows; r++) {
            if (used[r] || !overlaps(&episodes[e], &rows[r]))
                continue;
            /* an episode still open continues the open row rather than an older one */
            if (pick == n_rows || (!episodes[e].resolved && rows[r].open))
                pick = r;
        }
        if (pick < n_rows) {
            used[pick] = true;
            out[n++] = (struct alert_action){.kind = ALERT_UPDATE, .episode = e, .row = pick};
        } else {
            out[n++] = (struct alert_action){.kind = ALERT_INSERT, .episode = e};
        }
    }
    for (size_t r = 0; r < n_rows; r++)
        if (!used[r] && rows[r].open)
            out[n++] = (struct alert_action){.kind = ALERT_WITHDRAW, .row = r};
    free(used);
    return n;
}

size_t alerts_top_workflows(const struct recon_rollup *rows, size_t n, int src_site, int dst_site,
                            struct alert_workflow *out, size_t max)
{
    /* a pair has few workflows; sum them in a small list, then keep the top max */
    struct alert_workflow *all = NULL;
    size_t n_all = 0, cap = 0;
    for (size_t i = 0; i < n; i++) {
        if (rows[i].src_site != src_site || rows[i].dst_site != dst_site)
            continue;
        size_t j = 0;
        while (j < n_all && strcmp(all[j].workflow, rows[i].workflow) != 0)
            j++;
        if (j == n_all) {
            if (n_all == cap) {
                size_t c = cap ? cap * 2 : 16;
                struct alert_workflow *p = realloc(all, c * sizeof *p);
                if (!p)
                    break;
                all = p;
                cap = c;
            }
            all[n_all++] = (struct alert_workflow){.workflow = rows[i].workflow, .bytes = 0};
        }
        all[j].bytes += rows[i].bytes;
    }
    size_t k = 0;
    for (; k < max && k < n_all; k++) {
        size_t best = k;
        for (size_t j = k + 1; j < n_all; j++)
            if (all[j].bytes > all[best].bytes || (all[j].bytes == all[best].bytes &&
                                                   strcmp(all[j].workflow, all[best].workflow) < 0))
                best = j;
        struct alert_workflow t = all[k];
        all[k] = all[best];
        all[best] = t;
        out[k] = all[k];
    }
    free(all);
    return k;
}

/* "4.50 GB": decimal units, like link speeds. */
static const char *fmt_bytes(char *buf, size_t len, uint64_t b)
{
    static const char *const units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1000 && u < 5) {
        v /= 1000;
        u++;
    }
    snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", v, units[u]);
    return buf;
}

static const char *fmt_bps(char *buf, size_t len, uint64_t bps)
{
    static const char *const units[] = {"bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"};
    double v = (double)bps;
    int u = 0;
    while (v >= 1000 && u < 4) {
        v /= 1000;
        u++;
    }
    snprintf(buf, len, "%g %s", v, units[u]);
    return buf;
}

char *alerts_summary_cells(char *buf, size_t len, enum alert_kind kind, const char *src,
                           const char *dst, const struct alert_episode *ep, int window_seconds)
{
    char un[32], ob[32], pk[32], first[TM_RFC3339_LEN], last[TM_RFC3339_LEN];
    tm_format_rfc3339(ep->first_window_us, first);
    tm_format_rfc3339(ep->last_window_us, last);
    if (kind == ALERT_OVER) {
        snprintf(buf, len,
                 "%s->%s: agents and services claim %.1f%% of the observed payload (%s) in the "
                 "%d s window of %s; over since %s, peak %.1f%%",
                 src, dst, ep->last_ratio * 100,
                 fmt_bytes(ob, sizeof ob, ep->last_observed_payload_bytes), window_seconds, last,
                 first, ep->peak_ratio * 100);
    } else {
        snprintf(buf, len,
                 "%s->%s: %s of %s observed payload unattributed (%.1f%%) in the %d s window of "
                 "%s; red since %s, peak %s (%.1f%%)",
                 src, dst, fmt_bytes(un, sizeof un, ep->last_unattributed_bytes),
                 fmt_bytes(ob, sizeof ob, ep->last_observed_payload_bytes), ep->last_ratio * 100,
                 window_seconds, last, first, fmt_bytes(pk, sizeof pk, ep->peak_unattributed_bytes),
                 ep->peak_ratio * 100);
    }
    return buf;
}

char *alerts_summary_saturation(char *buf, size_t len, const char *src, const char *dst,
                                const char *circuit, const struct alert_episode *ep,
                                uint64_t capacity_bps, const struct alert_workflow *top,
                                size_t n_top, uint64_t total_bytes)
{
    char cap[32], first[TM_RFC3339_LEN], last[TM_RFC3339_LEN];
    tm_format_rfc3339(ep->first_window_us, first);
    tm_format_rfc3339(ep->last_window_us, last);
    int off = snprintf(buf, len,
                       "%s->%s at %.1f%% of %s on circuit %s in the window of %s (above since %s); "
                       "top workflows:",
                       src, dst, ep->last_ratio * 100, fmt_bps(cap, sizeof cap, capacity_bps),
                       circuit && *circuit ? circuit : "?", last, first);
    if (n_top == 0 && off >= 0 && (size_t)off < len)
        off += snprintf(buf + off, len - (size_t)off, " none attributed");
    for (size_t i = 0; i < n_top && off >= 0 && (size_t)off < len; i++) {
        double share = total_bytes ? (double)top[i].bytes * 100.0 / (double)total_bytes : 0;
        off += snprintf(buf + off, len - (size_t)off, "%s %s %.1f%%", i ? "," : "",
                        *top[i].workflow ? top[i].workflow : "(none)", share);
    }
    return buf;
}
