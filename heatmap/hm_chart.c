/* Time-series chart rendering (see hm_chart.h). */
#include "hm_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hm_esc.h"
#include "hm_fmt.h"
#include "utf8.h"
#include "hm_status.h"

#define PAD_L 74
#define PAD_R 16
#define PAD_T 30
#define PAD_B 44

static double nice_ceil(double v)
{
    if (!(v > 0))
        return 1;
    double e = pow(10, floor(log10(v)));
    double m = v / e;
    double n = m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10;
    return n * e;
}

static void y_label(char *buf, double v, enum hm_chart_y k)
{
    if (k == HM_Y_RATIO)
        snprintf(buf, HM_FMT_LEN, "%.0f %%", v * 100);
    else
        hm_fmt_bps(v, buf);
}

static void x_label(char *buf, int64_t us, int64_t span_us)
{
    time_t t = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&t, &tm);
    if (span_us >= 3LL * 86400 * 1000000)
        strftime(buf, HM_FMT_LEN, "%a %d %b", &tm);
    else if (span_us >= 86400LL * 1000000)
        strftime(buf, HM_FMT_LEN, "%d %H:%M", &tm);
    else
        strftime(buf, HM_FMT_LEN, "%H:%M", &tm);
}

/* The plot's geometry: pixel size, plot area, value and time ranges. */
struct frame {
    double W, H, pw, ph, ymax;
    int64_t x0, x1;
    double xspan;
    size_t n;
};

static double xp(const struct frame *g, int64_t us)
{
    return PAD_L + g->pw * (double)(us - g->x0) / g->xspan;
}

static double yp(const struct frame *g, double v)
{
    return PAD_T + g->ph - g->ph * v / g->ymax;
}

static void draw_legend(struct evbuffer *out, const struct hm_chart *c)
{
    /* legend */
    double lx = PAD_L;
    for (size_t s = 0; s < c->n_series; s++) {
        const struct hm_chart_series *se = &c->series[s];
        if (se->area)
            evbuffer_add_printf(out,
                                "<rect x=\"%.0f\" y=\"9\" width=\"12\" height=\"12\" fill=\"%s\" "
                                "fill-opacity=\"0.85\"/>",
                                lx, se->colour);
        else
            evbuffer_add_printf(out,
                                "<line x1=\"%.0f\" y1=\"15\" x2=\"%.0f\" y2=\"15\" stroke=\"%s\" "
                                "stroke-width=\"2.5\"%s/>",
                                lx, lx + 14, se->colour,
                                se->dashed ? " stroke-dasharray=\"5 3\"" : "");
        evbuffer_add_printf(out, "<text x=\"%.0f\" y=\"19\" fill=\"#1b1f24\">", lx + 18);
        hm_esc_html(out, se->name);
        evbuffer_add_printf(out, "</text>");
        size_t len;
        (void)utf8_prefix(se->name, SIZE_MAX, SIZE_MAX, &len);
        lx += 32 + len * 6.6;
    }
}

/* The largest stacked area or line value (or horizontal line), rounded up to a nice number. */
static double y_max(const struct hm_chart *c, size_t n)
{
    /* y range */
    double ymax = 0;
    for (size_t i = 0; i < n; i++) {
        double stack = 0;
        for (size_t s = 0; s < c->n_series; s++) {
            double v = c->series[s].y[i];
            if (isnan(v))
                continue;
            if (c->series[s].area)
                stack += v;
            else if (v > ymax)
                ymax = v;
        }
        if (stack > ymax)
            ymax = stack;
    }
    for (size_t h = 0; h < c->n_hlines; h++)
        if (c->hlines[h] > ymax)
            ymax = c->hlines[h];
    return nice_ceil(ymax * 1.05);
}

static void draw_mark(struct evbuffer *out, const struct hm_chart *c, const struct frame *g)
{
    /* highlighted span */
    if (c->mark_to_us > c->mark_from_us && c->mark_to_us > g->x0 && c->mark_from_us < g->x1) {
        double a = xp(g, c->mark_from_us < g->x0 ? g->x0 : c->mark_from_us);
        double b = xp(g, c->mark_to_us > g->x1 ? g->x1 : c->mark_to_us);
        evbuffer_add_printf(out,
                            "<rect class=\"mark\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
                            "height=\"%.0f\" fill=\"#ffd54a\" fill-opacity=\"0.35\"/>",
                            a, PAD_T, b - a < 2 ? 2 : b - a, g->ph);
    }
}

static void draw_axes(struct evbuffer *out, const struct hm_chart *c, const struct frame *g)
{
    size_t n = g->n;
    /* grid and y axis */
    for (int k = 0; k <= 4; k++) {
        double v = g->ymax * k / 4;
        char lab[HM_FMT_LEN];
        y_label(lab, v, c->y_kind);
        evbuffer_add_printf(
            out,
            "<line g->x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e3e6ea\"/>"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#5b6470\">%s</text>",
            PAD_L, yp(g, v), g->W - PAD_R, yp(g, v), PAD_L - 6, yp(g, v) + 4, lab);
    }
    for (size_t h = 0; h < c->n_hlines; h++)
        evbuffer_add_printf(
            out,
            "<line g->x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#8a929c\" "
            "stroke-dasharray=\"2 3\"/>",
            PAD_L, yp(g, c->hlines[h]), g->W - PAD_R, yp(g, c->hlines[h]));
    /* x labels: about 6 */
    size_t every = n <= 8 ? 1 : n / 6 + 1;
    for (size_t i = 0; i < n; i += every) {
        char lab[HM_FMT_LEN];
        x_label(lab, c->x_us[i], g->x1 - g->x0);
        double x = xp(g, c->x_us[i]);
        evbuffer_add_printf(
            out,
            "<line g->x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#c5cad1\"/>"
            "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#5b6470\">%s "
            "UTC</text>",
            x, PAD_T + g->ph, x, PAD_T + g->ph + 4, x, PAD_T + g->ph + 16, lab);
    }
}

static void draw_areas(struct evbuffer *out, const struct hm_chart *c, const struct frame *g)
{
    size_t n = g->n;
    /* stacked areas: each point drawn as a step over its span */
    double *base = calloc(n, sizeof *base);
    if (!base)
        return;
    for (size_t s = 0; s < c->n_series; s++) {
        const struct hm_chart_series *se = &c->series[s];
        if (!se->area)
            continue;
        evbuffer_add_printf(out, "<path class=\"area\" fill=\"%s\" fill-opacity=\"0.85\" d=\"",
                            se->colour);
        for (size_t i = 0; i < n; i++) {
            double v = isnan(se->y[i]) ? 0 : se->y[i];
            double xa = xp(g, c->x_us[i]), xb = xp(g, c->x_us[i] + c->x_step_us);
            evbuffer_add_printf(out, "%s%.1f %.1fL%.1f %.1f", i ? "L" : "M", xa, yp(g, base[i] + v),
                                xb, yp(g, base[i] + v));
        }
        for (size_t i = n; i-- > 0;) {
            double xa = xp(g, c->x_us[i]), xb = xp(g, c->x_us[i] + c->x_step_us);
            evbuffer_add_printf(out, "L%.1f %.1fL%.1f %.1f", xb, yp(g, base[i]), xa,
                                yp(g, base[i]));
        }
        evbuffer_add_printf(out, "Z\"/>");
        for (size_t i = 0; i < n; i++)
            base[i] += isnan(se->y[i]) ? 0 : se->y[i];
    }
    free(base);
}

static void draw_lines(struct evbuffer *out, const struct hm_chart *c, const struct frame *g)
{
    size_t n = g->n;
    /* lines: one point per span centre (a single point becomes a short bar) */
    for (size_t s = 0; s < c->n_series; s++) {
        const struct hm_chart_series *se = &c->series[s];
        if (se->area)
            continue;
        evbuffer_add_printf(out,
                            "<path class=\"line\" fill=\"none\" stroke=\"%s\" stroke-width=\"2.2\" "
                            "stroke-linejoin=\"round\"%s d=\"",
                            se->colour, se->dashed ? " stroke-dasharray=\"5 3\"" : "");
        bool pen = false;
        for (size_t i = 0; i < n; i++) {
            if (isnan(se->y[i])) {
                pen = false;
                continue;
            }
            double xa = xp(g, c->x_us[i]), xb = xp(g, c->x_us[i] + c->x_step_us);
            double y = yp(g, se->y[i]);
            if (n <= 40)
                evbuffer_add_printf(out, "%s%.1f %.1f", pen ? "L" : "M", (xa + xb) / 2, y);
            else
                evbuffer_add_printf(out, "%s%.1f %.1fL%.1f %.1f", pen ? "L" : "M", xa, y, xb, y);
            pen = true;
        }
        evbuffer_add_printf(out, "\"/>");
        if (n <= 40)
            for (size_t i = 0; i < n; i++)
                if (!isnan(se->y[i]))
                    evbuffer_add_printf(out,
                                        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>",
                                        (xp(g, c->x_us[i]) + xp(g, c->x_us[i] + c->x_step_us)) / 2,
                                        yp(g, se->y[i]), se->colour);
    }
}

static void draw_status(struct evbuffer *out, const struct hm_chart *c, const struct frame *g)
{
    size_t n = g->n;
    /* status strip under the x axis */
    if (c->status) {
        double sy = PAD_T + g->ph + 24;
        for (size_t i = 0; i < n; i++) {
            enum cell_status st = (enum cell_status)c->status[i];
            if (st == CELL_NONE)
                continue;
            double xa = xp(g, c->x_us[i]), xb = xp(g, c->x_us[i] + c->x_step_us);
            evbuffer_add_printf(out,
                                "<rect class=\"st\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" "
                                "height=\"9\" fill=\"%s\"><title>%s</title></rect>",
                                xa, sy, xb - xa > 0.6 ? xb - xa - 0.3 : 0.6,
                                hm_status_info(st)->fill, hm_status_info(st)->label);
        }
        evbuffer_add_printf(out,
                            "<text x=\"%d\" y=\"%.0f\" text-anchor=\"end\" fill=\"#5b6470\">"
                            "status</text>",
                            PAD_L - 6, sy + 8);
    }
}

void hm_chart_svg(struct evbuffer *out, const struct hm_chart *c)
{
    struct frame fr = {.W = c->width, .H = c->height, .n = c->n};
    const struct frame *g = &fr;
    fr.pw = fr.W - PAD_L - PAD_R;
    fr.ph = fr.H - PAD_T - PAD_B;
    size_t n = c->n;
    evbuffer_add_printf(out,
                        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                        "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, "
                        "Verdana, Arial, sans-serif\" font-size=\"11\" role=\"img\" aria-label=\"",
                        fr.W, fr.H, fr.W, fr.H);
    hm_esc_html(out, c->aria ? c->aria : "chart");
    evbuffer_add_printf(out, "\"><rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>", fr.W, fr.H);
    draw_legend(out, c);
    if (n == 0) {
        evbuffer_add_printf(out,
                            "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#6b7380\">"
                            "no data in this span</text></svg>",
                            fr.W / 2, fr.H / 2);
        return;
    }
    fr.ymax = y_max(c, n);
    fr.x0 = c->x_us[0];
    fr.x1 = c->x_us[n - 1] + c->x_step_us;
    fr.xspan = (double)(fr.x1 - fr.x0);
    draw_mark(out, c, g);
    draw_axes(out, c, g);
    draw_areas(out, c, g);
    draw_lines(out, c, g);
    draw_status(out, c, g);
    evbuffer_add_printf(out,
                        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.0f\" stroke=\"#8a929c\"/>"
                        "<line x1=\"%d\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#8a929c\"/>"
                        "</svg>",
                        PAD_L, PAD_T, PAD_L, PAD_T + fr.ph, PAD_L, PAD_T + fr.ph, fr.W - PAD_R,
                        PAD_T + fr.ph);
}
