/* Status table and the aggregate-status rule (see hm_status.h). */
#include "hm_status.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const struct hm_status_info infos[HM_N_STATUS] = {
    [HM_OK] = {"ok", "ok", 'O', "#2f9e5a", "#ffffff", "", "30;42"},
    [HM_WARN] = {"warn", "warn", 'W', "#f2c12e", "#1b1f24", "p-warn", "30;43"},
    [HM_RED] = {"red", "red", 'R', "#d62839", "#ffffff", "p-red", "97;41"},
    [HM_OVER] = {"over", "over", '+', "#7e4bc4", "#ffffff", "p-over", "97;45"},
    [HM_IDLE] = {"idle", "idle", '-', "#dfe3e8", "#3c4450", "", "30;47"},
    [HM_INCOMPLETE] = {"incomplete", "incomplete", '?', "#8d96a3", "#ffffff", "p-incomplete",
                       "97;100"},
    [HM_NO_COUNTER] = {"no_counter", "no counter", 'N', "#3d7fc1", "#ffffff", "p-nocounter",
                       "97;44"},
};

static const struct hm_status_info none_info = {"none",    "no data", ' ', "#f6f7f9",
                                                "#8a929c", "",        "0"};

const struct hm_status_info *hm_status_info(enum hm_status s)
{
    if (s < 0 || s >= HM_N_STATUS)
        return &none_info;
    return &infos[s];
}

enum hm_status hm_status_parse(const char *name)
{
    if (!name)
        return HM_NONE;
    for (int i = 0; i < HM_N_STATUS; i++)
        if (strcmp(infos[i].name, name) == 0)
            return (enum hm_status)i;
    return HM_NONE;
}

static double th_green(const struct cfg *c)
{
    return c ? c->green : 0.95;
}
static double th_red(const struct cfg *c)
{
    return c ? c->red : 0.80;
}
static double th_over(const struct cfg *c)
{
    return c ? c->over : 1.05;
}
static double th_min_gap(const struct cfg *c)
{
    return c ? (double)c->min_gap_bytes : 1e8;
}

const char *hm_status_meaning(enum hm_status s, const struct cfg *cfg, char *buf, size_t len)
{
    switch (s) {
    case HM_OK:
        snprintf(buf, len, "coverage %.0f%% or more: the switch's bytes are explained",
                 th_green(cfg) * 100);
        break;
    case HM_WARN:
        snprintf(buf, len, "coverage between %.0f%% and %.0f%%: some traffic is unexplained",
                 th_red(cfg) * 100, th_green(cfg) * 100);
        break;
    case HM_RED:
        snprintf(buf, len, "coverage below %.0f%%: a large share of the traffic has no owner",
                 th_red(cfg) * 100);
        break;
    case HM_OVER:
        snprintf(buf, len,
                 "attributed above %.0f%% of observed: more claimed than the link carried "
                 "(double counting?)",
                 th_over(cfg) * 100);
        break;
    case HM_IDLE:
        snprintf(buf, len, "less than %.0f MB observed in the window: too little to judge",
                 th_min_gap(cfg) / 1e6);
        break;
    case HM_INCOMPLETE:
        snprintf(buf, len, "counters cover less than 90%% of the window (poll gap, reboot)");
        break;
    case HM_NO_COUNTER:
        snprintf(buf, len, "traffic attributed to the pair but no link counter measures it");
        break;
    default:
        snprintf(buf, len, "no row for this pair");
        break;
    }
    return buf;
}

double hm_totals_coverage(const struct hm_totals *t)
{
    if (t->payload <= 0)
        return NAN;
    return (double)t->attributed / (double)t->payload;
}

enum hm_status hm_status_of_totals(const struct hm_totals *t, enum hm_status single,
                                   const struct cfg *cfg)
{
    if (t->n_windows <= 0)
        return HM_NONE;
    if (t->n_windows == 1 && single != HM_NONE)
        return single;
    if (t->n_status[HM_NO_COUNTER] == t->n_windows)
        return HM_NO_COUNTER;
    if (t->n_status[HM_INCOMPLETE] * 10 > t->n_windows)
        return HM_INCOMPLETE;
    if ((double)t->payload < th_min_gap(cfg) * t->n_windows)
        return HM_IDLE;
    double cov = hm_totals_coverage(t);
    if (isnan(cov))
        return HM_IDLE;
    if (cov > th_over(cfg))
        return HM_OVER;
    if (cov >= th_green(cfg))
        return HM_OK;
    if (cov >= th_red(cfg))
        return HM_WARN;
    return HM_RED;
}
