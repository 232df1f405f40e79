/* A small time-series chart as inline SVG: stacked areas (bytes per source) and lines (observed,
 * or coverage per pair), with axes, a legend, a highlighted span and an optional status strip.
 * The drill-down page and the weekly report use it. */
#ifndef WL_HM_CHART_H
#define WL_HM_CHART_H

#include <event2/buffer.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hm_chart_y { HM_Y_BPS, HM_Y_RATIO };

struct hm_chart_series {
    const char *name;   /* escaped when drawn */
    const char *colour; /* CSS colour */
    const double *y;    /* n values; NAN = no value */
    bool area;          /* stacked area (in series order); else a line */
    bool dashed;
};

struct hm_chart {
    int width, height;
    size_t n;            /* points */
    const int64_t *x_us; /* start of each point's span */
    int64_t x_step_us;   /* span of one point */
    size_t n_series;
    const struct hm_chart_series *series;
    enum hm_chart_y y_kind;
    int64_t mark_from_us, mark_to_us; /* highlighted span; equal = none */
    const signed char *status;        /* per point hm_status (CELL_NONE = none) or NULL */
    size_t n_hlines;
    const double *hlines; /* reference values (thresholds), dashed */
    const char *aria;     /* what the chart shows, for screen readers */
};

void hm_chart_svg(struct evbuffer *out, const struct hm_chart *c);

#endif
