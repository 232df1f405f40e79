/* Time-series chart rendering (see hm_chart.h). */
#include "hm_chart.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hm_esc.h"
#include "hm_fmt.h"
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

void hm_chart_svg(struct evbuffer *out, const struct hm_chart *c)
{
    double W = c->width, H = c->height;
    double pw = W - PAD_L - PAD_R, ph = H - PAD_T - PAD_B;
    size_t n = c->n;
    evbuffer_add_printf(out,
                        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
                        "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"DejaVu Sans, "
                        "Verdana, Arial, sans-serif\" font-size=\"11\" role=\"img\" aria-label=\"",
                        W, H, W, H);
    hm_esc_html(out, c->aria ? c->aria : "chart");
    evbuffer_add_printf(out, "\"><rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>", W, H);
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
        size_t len = 0;
        for (const char *p = se->name; *p; p++)
            len += ((unsigned char)*p & 0xC0) != 0x80;
        lx += 32 + len * 6.6;
    }
    if (n == 0) {
        evbuffer_add_printf(out,
                            "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#6b7380\">"
                            "no data in this span</text></svg>",
                            W / 2, H / 2);
        return;
    }
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
    ymax = nice_ceil(ymax * 1.05);
    int64_t x0 = c->x_us[0], x1 = c->x_us[n - 1] + c->x_step_us;
    double xspan = (double)(x1 - x0);
#define XP(us) (PAD_L + pw * (double)((us)-x0) / xspan)
#define YP(v)  (PAD_T + ph - ph * (v) / ymax)
    /* highlighted span */
    if (c->mark_to_us > c->mark_from_us && c->mark_to_us > x0 && c->mark_from_us < x1) {
        double a = XP(c->mark_from_us < x0 ? x0 : c->mark_from_us);
        double b = XP(c->mark_to_us > x1 ? x1 : c->mark_to_us);
        evbuffer_add_printf(out,
                            "<rect class=\"mark\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
                            "height=\"%.0f\" fill=\"#ffd54a\" fill-opacity=\"0.35\"/>",
                            a, PAD_T, b - a < 2 ? 2 : b - a, ph);
    }
    /* grid and y axis */
    for (int k = 0; k <= 4; k++) {
        double v = ymax * k / 4;
        char lab[HM_FMT_LEN];
        y_label(lab, v, c->y_kind);
        evbuffer_add_printf(
            out,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e3e6ea\"/>"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#5b6470\">%s</text>",
            PAD_L, YP(v), W - PAD_R, YP(v), PAD_L - 6, YP(v) + 4, lab);
    }
    for (size_t h = 0; h < c->n_hlines; h++)
        evbuffer_add_printf(
            out,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#8a929c\" "
            "stroke-dasharray=\"2 3\"/>",
            PAD_L, YP(c->hlines[h]), W - PAD_R, YP(c->hlines[h]));
    /* x labels: about 6 */
    size_t every = n <= 8 ? 1 : n / 6 + 1;
    for (size_t i = 0; i < n; i += every) {
        char lab[HM_FMT_LEN];
        x_label(lab, c->x_us[i], x1 - x0);
        double x = XP(c->x_us[i]);
        evbuffer_add_printf(
            out,
            "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#c5cad1\"/>"
            "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" fill=\"#5b6470\">%s "
            "UTC</text>",
            x, PAD_T + ph, x, PAD_T + ph + 4, x, PAD_T + ph + 16, lab);
    }
    /* stacked areas: each point drawn as a step over its span */
    double *base = calloc(n, sizeof *base);
    if (!base) {
        evbuffer_add_printf(out, "</svg>");
        return;
    }
    for (size_t s = 0; s < c->n_series; s++) {
        const struct hm_chart_series *se = &c->series[s];
        if (!se->area)
            continue;
        evbuffer_add_printf(out, "<path class=\"area\" fill=\"%s\" fill-opacity=\"0.85\" d=\"",
                            se->colour);
        for (size_t i = 0; i < n; i++) {
            double v = isnan(se->y[i]) ? 0 : se->y[i];
            double xa = XP(c->x_us[i]), xb = XP(c->x_us[i] + c->x_step_us);
            evbuffer_add_printf(out, "%s%.1f %.1fL%.1f %.1f", i ? "L" : "M", xa, YP(base[i] + v),
                                xb, YP(base[i] + v));
        }
        for (size_t i = n; i-- > 0;) {
            double xa = XP(c->x_us[i]), xb = XP(c->x_us[i] + c->x_step_us);
            evbuffer_add_printf(out, "L%.1f %.1fL%.1f %.1f", xb, YP(base[i]), xa, YP(base[i]));
        }
        evbuffer_add_printf(out, "Z\"/>");
        for (size_t i = 0; i < n; i++)
            base[i] += isnan(se->y[i]) ? 0 : se->y[i];
    }
    free(base);
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
            double xa = XP(c->x_us[i]), xb = XP(c->x_us[i] + c->x_step_us);
            double y = YP(se->y[i]);
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
                                        (XP(c->x_us[i]) + XP(c->x_us[i] + c->x_step_us)) / 2,
                                        YP(se->y[i]), se->colour);
    }
    /* status strip under the x axis */
    if (c->status) {
        double sy = PAD_T + ph + 24;
        for (size_t i = 0; i < n; i++) {
            enum cell_status st = (enum cell_status)c->status[i];
            if (st == CELL_NONE)
                continue;
            double xa = XP(c->x_us[i]), xb = XP(c->x_us[i] + c->x_step_us);
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
    evbuffer_add_printf(out,
                        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.0f\" stroke=\"#8a929c\"/>"
                        "<line x1=\"%d\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#8a929c\"/>"
                        "</svg>",
                        PAD_L, PAD_T, PAD_L, PAD_T + ph, PAD_L, PAD_T + ph, W - PAD_R, PAD_T + ph);
#undef XP
#undef YP
}
