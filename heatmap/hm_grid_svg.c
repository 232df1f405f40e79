/* SVG rendering of the heatmap grid (see hm_grid_svg.h). */
#include "hm_grid_svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hm_esc.h"
#include "hm_fmt.h"
#include "utf8.h"
#include "timeutil.h"

#define CELL_W     186
#define CELL_H     96
#define GAP        6
#define HEAD_H     46
#define STRIP_H    22
#define LEGEND_ROW 24
#define FONT       "DejaVu Sans, Verdana, Arial, sans-serif"

void hm_svg_defs(struct evbuffer *out)
{
    evbuffer_add_printf(
        out,
        "<defs>"
        "<pattern id=\"p-warn\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\">"
        "<circle cx=\"4\" cy=\"4\" r=\"1.3\" fill=\"#000\" fill-opacity=\"0.28\"/></pattern>"
        "<pattern id=\"p-red\" width=\"9\" height=\"9\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"3.5\" height=\"9\" fill=\"#fff\" "
        "fill-opacity=\"0.26\"/></pattern>"
        "<pattern id=\"p-over\" width=\"10\" height=\"10\" patternUnits=\"userSpaceOnUse\">"
        "<path d=\"M0 0L10 10M10 0L0 10\" stroke=\"#fff\" stroke-opacity=\"0.32\" "
        "stroke-width=\"1.6\"/></pattern>"
        "<pattern id=\"p-incomplete\" width=\"10\" height=\"10\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(-45)\"><rect width=\"10\" height=\"2\" fill=\"#fff\" "
        "fill-opacity=\"0.35\"/><rect x=\"0\" y=\"5\" width=\"4\" height=\"2\" fill=\"#fff\" "
        "fill-opacity=\"0.35\"/></pattern>"
        "<pattern id=\"p-nocounter\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\">"
        "<rect width=\"8\" height=\"2\" fill=\"#fff\" fill-opacity=\"0.3\"/></pattern>"
        "</defs>");
}

static void fill_rect(struct evbuffer *out, enum cell_status s, double x, double y, double w,
                      double h, double rx)
{
    const struct hm_status_info *si = hm_status_info(s);
    evbuffer_add_printf(out,
                        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" rx=\"%.1f\" "
                        "fill=\"%s\"/>",
                        x, y, w, h, rx, si->fill);
    if (si->pattern[0])
        evbuffer_add_printf(out,
                            "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                            "rx=\"%.1f\" fill=\"url(#%s)\"/>",
                            x, y, w, h, rx, si->pattern);
}

void hm_svg_swatch(struct evbuffer *out, enum cell_status s, int w, int h)
{
    const struct hm_status_info *si = hm_status_info(s);
    evbuffer_add_printf(out,
                        "<svg class=\"swatch\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                        "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">",
                        w, h, w, h, si->label);
    fill_rect(out, s, 0.5, 0.5, w - 1, h - 1, 3);
    evbuffer_add_printf(out,
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-family=\"" FONT
                        "\" font-size=\"%d\" font-weight=\"bold\" fill=\"%s\">%c</text></svg>",
                        w / 2.0, h / 2.0 + h * 0.22, h * 2 / 3, si->ink, si->letter);
}

const char *hm_grid_caption(const struct hm_grid *g, char *buf, size_t len)
{
    char a[HM_FMT_LEN], b[HM_FMT_LEN];
    if (!g->has_data && g->span.kind == HM_SPAN_LATEST)
        snprintf(buf, len, "no reconciled window yet");
    else if (g->span.kind == HM_SPAN_RANGE)
        snprintf(buf, len, "%s \xe2\x80\x93 %s, sum of %lld windows of %d s",
                 hm_fmt_time(g->from_us, a), hm_fmt_time(g->to_us, b),
                 g->window_seconds > 0
                     ? (long long)((g->to_us - g->from_us) / (g->window_seconds * TM_USEC_PER_SEC))
                     : 0LL,
                 g->window_seconds);
    else
        snprintf(buf, len, "window %s (%d s)", hm_fmt_time(g->from_us, a), g->window_seconds);
    return buf;
}

/* A site name for display: at most max characters (UTF-8 aware), with an ellipsis. */
static void short_name(struct evbuffer *out, const char *name, size_t max)
{
    size_t chars;
    size_t i = utf8_prefix(name, max, SIZE_MAX, &chars);
    char tmp[256];
    if (!name[i]) {
        hm_esc_html(out, name);
        return;
    }
    snprintf(tmp, sizeof tmp, "%.*s", (int)(i < 200 ? i : 200), name);
    hm_esc_html(out, tmp);
    evbuffer_add(out, "\xe2\x80\xa6", 3);
}

static void cell_href(struct evbuffer *out, const struct hm_grid *g, const char *base,
                      const char *src, const char *dst)
{
    char t[HM_FMT_LEN];
    hm_esc_html(out, base);
    evbuffer_add_printf(out, "?src=");
    hm_esc_url(out, src);
    evbuffer_add_printf(out, "&amp;dst=");
    hm_esc_url(out, dst);
    if (g->span.kind == HM_SPAN_RANGE)
        evbuffer_add_printf(out, "&amp;from=%s", hm_fmt_rfc3339(g->from_us, t));
    if (g->span.kind == HM_SPAN_RANGE)
        evbuffer_add_printf(out, "&amp;to=%s", hm_fmt_rfc3339(g->to_us, t));
    else
        evbuffer_add_printf(out, "&amp;window=%s", hm_fmt_rfc3339(g->from_us, t));
}

static void strip(struct evbuffer *out, const struct hm_grid *g, const struct hm_pair *p)
{
    double x0 = 8, w = (CELL_W - 16) / (double)HM_STRIP_HOURS, base = CELL_H - 6;
    evbuffer_add_printf(out,
                        "<rect x=\"4\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"3\" fill=\"#fff\" "
                        "fill-opacity=\"0.92\"/>",
                        CELL_H - STRIP_H, CELL_W - 8, STRIP_H - 3);
    for (int h = 0; h < HM_STRIP_HOURS; h++) {
        char t[HM_FMT_LEN], c[HM_FMT_LEN];
        enum cell_status s = (enum cell_status)p->strip[h];
        double x = x0 + h * w;
        if (s == CELL_NONE) {
            evbuffer_add_printf(out,
                                "<rect class=\"hour\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                                "height=\"1.5\" fill=\"#c5cad1\"/>",
                                x + 0.5, base - 1.5, w - 1);
            continue;
        }
        double cov = p->strip_coverage[h];
        double frac = isnan(cov) ? 0.5 : fmin(fmax(cov, 0.0), 1.2) / 1.2;
        if (s == CELL_INCOMPLETE || s == CELL_NO_COUNTER || s == CELL_IDLE)
            frac = 0.5;
        double bh = 3 + 11 * frac;
        evbuffer_add_printf(out,
                            "<rect class=\"hour\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                            "height=\"%.1f\" fill=\"%s\"><title>%s: %s, coverage %s</title></rect>",
                            x + 0.5, base - bh, w - 1, bh, hm_status_info(s)->fill,
                            hm_fmt_hhmm(g->strip_from_us + (int64_t)h * 3600 * TM_USEC_PER_SEC, t),
                            hm_status_info(s)->label, hm_fmt_pct(cov, c));
    }
}

static void cell(struct evbuffer *out, const struct hm_grid *g, const struct hm_svg_opts *o,
                 size_t si, size_t di, double x, double y)
{
    const char *src = g->sites[si], *dst = g->sites[di];
    const struct hm_pair *p = hm_grid_pair(g, si, di);
    if (si == di || p->status == CELL_NONE) {
        evbuffer_add_printf(
            out,
            "<g class=\"empty\" transform=\"translate(%.0f,%.0f)\"><rect x=\"0.5\" "
            "y=\"0.5\" width=\"%d\" height=\"%d\" rx=\"6\" fill=\"#f4f5f7\" "
            "stroke=\"#dde1e6\" stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"%d\" "
            "text-anchor=\"middle\" fill=\"#9aa2ad\" font-size=\"12\">%s</text></g>",
            x, y, CELL_W - 1, CELL_H - 1, CELL_W / 2, CELL_H / 2 + 4,
            si == di ? "\xc2\xb7" : "no data");
        return;
    }
    const struct hm_status_info *st = hm_status_info(p->status);
    char cov[HM_FMT_LEN], obs[HM_FMT_LEN], una[HM_FMT_LEN], pay[HM_FMT_LEN], att[HM_FMT_LEN];
    char rate[HM_FMT_LEN];
    hm_fmt_pct(p->coverage, cov);
    hm_totals_bytes(&p->t, p->t.observed, obs);
    hm_totals_bytes(&p->t, p->t.payload, pay);
    hm_totals_bytes(&p->t, p->t.attributed, att);
    hm_totals_bytes(&p->t, p->t.unattributed, una);
    if (p->t.seconds > 0)
        hm_fmt_bps((double)p->t.observed * 8 / (double)p->t.seconds, rate);
    else
        snprintf(rate, sizeof rate, "unknown");

    evbuffer_add_printf(out, "<g class=\"cell\" data-src=\"");
    hm_esc_html(out, src);
    evbuffer_add_printf(out, "\" data-dst=\"");
    hm_esc_html(out, dst);
    evbuffer_add_printf(out, "\" data-status=\"%s\" data-coverage=\"", st->name);
    if (isnan(p->coverage))
        evbuffer_add_printf(out, "\"");
    else
        evbuffer_add_printf(out, "%.4f\"", p->coverage);
    evbuffer_add_printf(out,
                        " data-observed-bytes=\"%lld\" data-unattributed-bytes=\"%lld\" "
                        "transform=\"translate(%.0f,%.0f)\">",
                        (long long)p->t.observed, (long long)p->t.unattributed, x, y);
    if (o->cell_href) {
        evbuffer_add_printf(out, "<a href=\"");
        cell_href(out, g, o->cell_href, src, dst);
        evbuffer_add_printf(out, "\">");
    }
    evbuffer_add_printf(out, "<title>");
    hm_esc_html(out, src);
    evbuffer_add_printf(out, " \xe2\x86\x92 ");
    hm_esc_html(out, dst);
    evbuffer_add_printf(out,
                        ": %s, coverage %s; observed %s on the wire (%s payload, %s avg), "
                        "attributed %s, unattributed %s%s</title>",
                        st->label, cov, obs, pay, rate, att, una,
                        p->n_open_alerts ? "; alert open" : "");
    fill_rect(out, p->status, 0.5, 0.5, CELL_W - 1, CELL_H - 1, 6);
    if (p->n_open_alerts)
        evbuffer_add_printf(out,
                            "<rect x=\"1.5\" y=\"1.5\" width=\"%d\" height=\"%d\" rx=\"6\" "
                            "fill=\"none\" stroke=\"#111\" stroke-width=\"3\"/>",
                            CELL_W - 3, CELL_H - 3);
    /* letter badge + status name, coverage */
    evbuffer_add_printf(out,
                        "<rect x=\"7\" y=\"7\" width=\"20\" height=\"20\" rx=\"4\" fill=\"%s\" "
                        "fill-opacity=\"0.22\" stroke=\"%s\" stroke-opacity=\"0.7\"/>"
                        "<text x=\"17\" y=\"22\" text-anchor=\"middle\" font-weight=\"bold\" "
                        "font-size=\"14\" fill=\"%s\">%c</text>"
                        "<text x=\"33\" y=\"22\" font-size=\"12\" fill=\"%s\">%s</text>"
                        "<text class=\"cov\" x=\"%d\" y=\"24\" text-anchor=\"end\" "
                        "font-weight=\"bold\" font-size=\"18\" fill=\"%s\">%s</text>",
                        st->ink, st->ink, st->ink, st->letter, st->ink, st->label, CELL_W - 9,
                        st->ink, isnan(p->coverage) ? "\xe2\x80\x94" : cov);
    /* line 1: what the switch saw; line 2: what nobody claims (or the excess claimed) */
    const char *l1 = "observed", *l2 = "unattributed";
    const char *v1 = obs, *v2 = una;
    if (p->status == CELL_NO_COUNTER) {
        l1 = "observed", v1 = "no counter";
        l2 = "attributed", v2 = att;
    } else if (p->t.attributed > p->t.payload && p->t.payload > 0) {
        hm_fmt_bytes(p->t.attributed - p->t.payload, una);
        l2 = "excess claimed";
    }
    evbuffer_add_printf(out,
                        "<text x=\"9\" y=\"46\" font-size=\"12\" fill=\"%s\">%s "
                        "<tspan font-weight=\"bold\">%s</tspan></text>"
                        "<text x=\"9\" y=\"62\" font-size=\"12\" fill=\"%s\">%s "
                        "<tspan font-weight=\"bold\">%s</tspan></text>",
                        st->ink, l1, v1, st->ink, l2, v2);
    if (p->n_open_alerts)
        evbuffer_add_printf(out,
                            "<text x=\"%d\" y=\"46\" text-anchor=\"end\" font-size=\"11\" "
                            "font-weight=\"bold\" fill=\"%s\">ALERT</text>",
                            CELL_W - 9, st->ink);
    strip(out, g, p);
    if (o->cell_href)
        evbuffer_add_printf(out, "</a>");
    evbuffer_add_printf(out, "</g>");
}

static size_t label_width(const struct hm_grid *g)
{
    size_t w = 70;
    for (size_t i = 0; i < g->n_sites; i++) {
        size_t n = strlen(g->sites[i]);
        if (n > 18)
            n = 18;
        if (n * 9 + 26 > w)
            w = n * 9 + 26;
    }
    return w;
}

static double legend(struct evbuffer *out, const struct hm_svg_opts *o, double y, double width)
{
    char meaning[256];
    evbuffer_add_printf(out,
                        "<g class=\"legend\" transform=\"translate(0,%.0f)\"><text x=\"0\" "
                        "y=\"14\" font-size=\"13\" font-weight=\"bold\" fill=\"#1b1f24\">Legend "
                        "(letter and pattern carry the status without colour)</text>",
                        y);
    double ly = 26;
    for (int s = 0; s < CELL_N_STATUS; s++) {
        const struct hm_status_info *si = hm_status_info((enum cell_status)s);
        evbuffer_add_printf(out,
                            "<g class=\"legend-item\" data-status=\"%s\" "
                            "transform=\"translate(0,%.0f)\">",
                            si->name, ly);
        fill_rect(out, (enum cell_status)s, 0.5, 0.5, 34, 19, 3);
        evbuffer_add_printf(out,
                            "<text x=\"17.5\" y=\"15\" text-anchor=\"middle\" font-weight=\"bold\" "
                            "font-size=\"13\" fill=\"%s\">%c</text><text x=\"44\" y=\"15\" "
                            "font-size=\"12.5\" font-weight=\"bold\" fill=\"#1b1f24\">%s</text>"
                            "<text x=\"140\" y=\"15\" font-size=\"12.5\" fill=\"#3c4450\">",
                            si->ink, si->letter, si->label);
        hm_esc_html(out, hm_status_meaning((enum cell_status)s, o->cfg, meaning, sizeof meaning));
        evbuffer_add_printf(out, "</text></g>");
        ly += LEGEND_ROW;
    }
    evbuffer_add_printf(out,
                        "<text x=\"0\" y=\"%.0f\" font-size=\"12\" fill=\"#3c4450\">Strip at the "
                        "bottom of each cell: the last %d hours, one bar per hour, height = "
                        "coverage, colour = status.</text><text x=\"0\" y=\"%.0f\" "
                        "font-size=\"12\" fill=\"#3c4450\">Thick black border and ALERT: an "
                        "alert is open on the pair. Hover a cell for its figures; click to drill "
                        "down.</text></g>",
                        ly + 14, HM_STRIP_HOURS, ly + 32);
    (void)width;
    return ly + 42;
}

void hm_grid_svg(struct evbuffer *out, const struct hm_grid *g, const struct hm_svg_opts *o)
{
    size_t n = g->n_sites;
    double lw = (double)label_width(g);
    double top = o->standalone ? 34 : 0;
    double margin = o->standalone ? 14 : 0;
    double grid_w = lw + n * (CELL_W + GAP);
    double width = grid_w > 760 ? grid_w : 760;
    double grid_h = HEAD_H + n * (CELL_H + GAP);
    double height = top + grid_h + 14 + 26 + CELL_N_STATUS * LEGEND_ROW + 42 + 2 * margin;
    width += 2 * margin;
    if (o->standalone)
        evbuffer_add_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    evbuffer_add_printf(out,
                        "<svg class=\"heatmap\" xmlns=\"http://www.w3.org/2000/svg\" "
                        "width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                        "font-family=\"" FONT "\" role=\"img\" aria-label=\"site pair coverage "
                        "heatmap\">",
                        width, height, width, height);
    hm_svg_defs(out);
    if (o->standalone) {
        char cap[160], gen[HM_FMT_LEN];
        evbuffer_add_printf(out,
                            "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>"
                            "<g transform=\"translate(%.0f,%.0f)\">",
                            margin, margin);
        evbuffer_add_printf(out, ""
                                 "<text x=\"0\" y=\"20\" font-size=\"16\" font-weight=\"bold\" "
                                 "fill=\"#1b1f24\">wanledger coverage \xe2\x80\x94 ");
        hm_esc_html(out, hm_grid_caption(g, cap, sizeof cap));
        evbuffer_add_printf(out,
                            "<tspan font-size=\"11\" font-weight=\"normal\" "
                            "fill=\"#6b7380\"> generated %s</tspan></text>",
                            hm_fmt_time(g->generated_us, gen));
    }
    evbuffer_add_printf(out, "<g transform=\"translate(0,%.0f)\">", top);
    evbuffer_add_printf(out,
                        "<text x=\"%.0f\" y=\"14\" font-size=\"11\" fill=\"#6b7380\">to "
                        "\xe2\x86\x92</text><text x=\"4\" y=\"%d\" font-size=\"11\" "
                        "fill=\"#6b7380\">from \xe2\x86\x93</text>",
                        lw, HEAD_H - 8);
    for (size_t j = 0; j < n; j++) {
        evbuffer_add_printf(out,
                            "<text class=\"col\" x=\"%.0f\" y=\"%d\" text-anchor=\"middle\" "
                            "font-size=\"14\" font-weight=\"bold\" fill=\"#1b1f24\"><title>",
                            lw + j * (CELL_W + GAP) + CELL_W / 2.0, HEAD_H - 10);
        hm_esc_html(out, g->sites[j]);
        evbuffer_add_printf(out, "</title>");
        short_name(out, g->sites[j], 18);
        evbuffer_add_printf(out, "</text>");
    }
    for (size_t i = 0; i < n; i++) {
        double y = HEAD_H + i * (CELL_H + GAP);
        evbuffer_add_printf(out,
                            "<text class=\"row\" x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\" "
                            "font-size=\"14\" font-weight=\"bold\" fill=\"#1b1f24\"><title>",
                            lw - 12, y + CELL_H / 2.0 + 5);
        hm_esc_html(out, g->sites[i]);
        evbuffer_add_printf(out, "</title>");
        short_name(out, g->sites[i], 18);
        evbuffer_add_printf(out, "</text>");
        for (size_t j = 0; j < n; j++)
            cell(out, g, o, i, j, lw + j * (CELL_W + GAP), y);
    }
    if (n == 0)
        evbuffer_add_printf(out,
                            "<text x=\"0\" y=\"%d\" font-size=\"13\" fill=\"#6b7380\">No sites "
                            "configured and no reconciled windows yet.</text>",
                            HEAD_H + 10);
    legend(out, o, grid_h + 14, width);
    evbuffer_add_printf(out, o->standalone ? "</g></g></svg>\n" : "</g></svg>\n");
}
