/* Status table and the aggregate-status rule (see hm_status.h). */
#include "hm_status.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hm_fmt.h"

static const struct hm_status_info infos[CELL_N_STATUS] = {
    [CELL_OK] = {"ok", "ok", 'O', "#2f9e5a", "#ffffff", "", "30;42"},
    [CELL_WARN] = {"warn", "warn", 'W', "#f2c12e", "#1b1f24", "p-warn", "30;43"},
    [CELL_RED] = {"red", "red", 'R', "#d62839", "#ffffff", "p-red", "97;41"},
    [CELL_OVER] = {"over", "over", '+', "#7e4bc4", "#ffffff", "p-over", "97;45"},
    [CELL_IDLE] = {"idle", "idle", '-', "#dfe3e8", "#3c4450", "", "30;47"},
    [CELL_INCOMPLETE] = {"incomplete", "incomplete", '?', "#8d96a3", "#ffffff", "p-incomplete",
                         "97;100"},
    [CELL_NO_COUNTER] = {"no_counter", "no counter", 'N', "#3d7fc1", "#ffffff", "p-nocounter",
                         "97;44"},
};

static const struct hm_status_info none_info = {"none",    "no data", ' ', "#f6f7f9",
                                                "#8a929c", "",        "0"};

const struct hm_status_info *hm_status_info(enum cell_status s)
{
    if (s < 0 || s >= CELL_N_STATUS)
        return &none_info;
    return &infos[s];
}

enum cell_status hm_status_parse(const char *name)
{
    if (!name)
        return CELL_NONE;
    return cell_status_parse(name);
}

const char *hm_status_meaning(enum cell_status s, const struct cfg *cfg, char *buf, size_t len)
{
    switch (s) {
    case CELL_OK:
        snprintf(buf, len, "coverage %.0f%% or more: the switch's bytes are explained",
                 cell_th_green(cfg) * 100);
        break;
    case CELL_WARN:
        snprintf(buf, len, "coverage between %.0f%% and %.0f%%: some traffic is unexplained",
                 cell_th_red(cfg) * 100, cell_th_green(cfg) * 100);
        break;
    case CELL_RED:
        snprintf(buf, len, "coverage below %.0f%%: a large share of the traffic has no owner",
                 cell_th_red(cfg) * 100);
        break;
    case CELL_OVER:
        snprintf(buf, len,
                 "attributed above %.0f%% of observed: more claimed than the link carried "
                 "(double counting?)",
                 cell_th_over(cfg) * 100);
        break;
    case CELL_IDLE:
        snprintf(buf, len, "less than %.0f MB observed in the window: too little to judge",
                 (double)cell_th_min_gap_bytes(cfg) / 1e6);
        break;
    case CELL_INCOMPLETE:
        snprintf(buf, len, "counters cover less than %.0f%% of the window (poll gap, reboot)",
                 CELL_MIN_VALID_FRACTION * 100);
        break;
    case CELL_NO_COUNTER:
        snprintf(buf, len, "traffic attributed to the pair but no link counter measures it");
        break;
    default:
        snprintf(buf, len, "no row for this pair");
        break;
    }
    return buf;
}

void hm_totals_add(struct hm_totals *a, const struct hm_totals *b)
{
    a->observed += b->observed;
    a->payload += b->payload;
    a->attributed += b->attributed;
    a->socket += b->socket;
    a->nfs += b->nfs;
    a->service += b->service;
    a->unattributed += b->unattributed;
    a->seconds += b->seconds;
    a->n_windows += b->n_windows;
    for (int s = 0; s < CELL_N_STATUS; s++)
        a->n_status[s] += b->n_status[s];
}

double hm_totals_coverage(const struct hm_totals *t)
{
    if (t->payload <= 0)
        return NAN;
    return (double)t->attributed / (double)t->payload;
}

enum cell_status hm_status_of_totals(const struct hm_totals *t, enum cell_status single,
                                     const struct cfg *cfg)
{
    if (t->n_windows <= 0)
        return CELL_NONE;
    if (t->n_windows == 1 && single != CELL_NONE)
        return single;
    if (t->n_status[CELL_NO_COUNTER] == t->n_windows)
        return CELL_NO_COUNTER;
    if (t->n_status[CELL_INCOMPLETE] * 10 > t->n_windows)
        return CELL_INCOMPLETE;
    /* the windows the payload is of: not incomplete (the sums leave those out), not no_counter */
    int measured = hm_totals_known(t) - t->n_status[CELL_NO_COUNTER];
    if (measured <= 0)
        return t->n_status[CELL_INCOMPLETE] > 0 ? CELL_INCOMPLETE : CELL_NO_COUNTER;
    if (t->payload <= 0)
        return CELL_IDLE; /* no coverage to judge */
    /* the cell rule on the per-window payload: floor(payload / n) < min_gap exactly when
     * payload < min_gap * n; valid_fraction 1 because incompleteness was decided above */
    return cell_status_of(cfg, 1.0, (uint64_t)(t->payload / measured), true, hm_totals_coverage(t));
}

int hm_totals_known(const struct hm_totals *t)
{
    return t->n_windows - t->n_status[CELL_INCOMPLETE];
}

char *hm_totals_bytes(const struct hm_totals *t, int64_t bytes, char buf[HM_FMT_LEN])
{
    if (t->n_windows > 0 && hm_totals_known(t) <= 0) {
        snprintf(buf, HM_FMT_LEN, "unknown");
        return buf;
    }
    return hm_fmt_bytes(bytes, buf);
}
