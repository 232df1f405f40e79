/* The heatmap page (see hm_heatmap_html.h). */
#include "hm_heatmap_html.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hm_esc.h"
#include "hm_fmt.h"
#include "hm_fleet.h"
#include "hm_grid_svg.h"
#include "hm_html.h"
#include "timeutil.h"

static void link_window(struct evbuffer *out, const char *base, int64_t us, const char *text)
{
    char t[HM_FMT_LEN];
    evbuffer_add_printf(out, "<a href=\"");
    hm_esc_html(out, base);
    evbuffer_add_printf(out, "/heatmap?window=%s\">%s</a>", hm_fmt_rfc3339(us, t), text);
}

void hm_alerts_html(struct evbuffer *out, const struct hm_alert *a, size_t n, const char *base,
                    int64_t now_us)
{
    if (n == 0) {
        evbuffer_add_printf(out, "<p class=\"none\">No open alerts.</p>");
        return;
    }
    evbuffer_add_printf(out, "<ul>");
    for (size_t i = 0; i < n; i++) {
        char t1[HM_FMT_LEN], t2[HM_FMT_LEN], d[HM_FMT_LEN], b[HM_FMT_LEN];
        int64_t end = a[i].resolved_us ? a[i].resolved_us : now_us;
        evbuffer_add_printf(out, "<li class=\"alert %s\" data-kind=\"%s\" data-src=\"", a[i].kind,
                            a[i].kind);
        hm_esc_html(out, a[i].src);
        evbuffer_add_printf(out, "\" data-dst=\"");
        hm_esc_html(out, a[i].dst);
        evbuffer_add_printf(out, "\"><span class=\"kind\">%s</span><b>", a[i].kind);
        hm_esc_html(out, a[i].src);
        evbuffer_add_printf(out, " \xe2\x86\x92 ");
        hm_esc_html(out, a[i].dst);
        evbuffer_add_printf(out, "</b>");
        if (a[i].circuit[0]) {
            evbuffer_add_printf(out, " <span class=\"meta\">circuit ");
            hm_esc_html(out, a[i].circuit);
            evbuffer_add_printf(out, "</span>");
        }
        evbuffer_add_printf(out,
                            "<div class=\"meta\">%s %s, since %s; windows %s\xe2\x80\x93%s</div>",
                            a[i].resolved_us ? "was open" : "open",
                            hm_fmt_duration((end - a[i].opened_us) / TM_USEC_PER_SEC, d),
                            hm_fmt_time(a[i].opened_us, t1), hm_fmt_hhmm(a[i].first_window_us, t2),
                            hm_fmt_hhmm(a[i].last_window_us, b));
        if (strcmp(a[i].kind, "gap") == 0)
            evbuffer_add_printf(out, "<div class=\"meta\">peak unattributed <b>%s</b>%s",
                                hm_fmt_bytes(a[i].peak_unattributed, b),
                                isnan(a[i].peak_ratio) ? "" : ",");
        else
            evbuffer_add_printf(out, "<div class=\"meta\">");
        if (!isnan(a[i].peak_ratio))
            evbuffer_add_printf(out, " peak ratio %.2f", a[i].peak_ratio);
        evbuffer_add_printf(out, "</div>");
        if (a[i].summary[0]) {
            evbuffer_add_printf(out, "<div class=\"meta\">");
            hm_esc_html(out, a[i].summary);
            evbuffer_add_printf(out, "</div>");
        }
        if (base) {
            evbuffer_add_printf(out, "<div class=\"meta\"><a href=\"");
            hm_esc_html(out, base);
            evbuffer_add_printf(out, "/heatmap/cell?src=");
            hm_esc_url(out, a[i].src);
            evbuffer_add_printf(out, "&amp;dst=");
            hm_esc_url(out, a[i].dst);
            evbuffer_add_printf(out, "&amp;window=%s\">drill down \xe2\x86\x92</a></div>",
                                hm_fmt_rfc3339(a[i].last_window_us, t1));
        }
        evbuffer_add_printf(out, "</li>");
    }
    evbuffer_add_printf(out, "</ul>");
}

static void nav(struct evbuffer *out, const struct hm_grid *g, const char *base)
{
    char t[HM_FMT_LEN], f[HM_FMT_LEN];
    evbuffer_add_printf(out, "<nav>");
    if (g->span.kind == HM_SPAN_WINDOW && g->has_prev)
        link_window(out, base, g->prev_us, "\xe2\x80\xb9 previous");
    else
        evbuffer_add_printf(out, "<span class=\"muted\">\xe2\x80\xb9 previous</span>");
    evbuffer_add_printf(out, "<a href=\"");
    hm_esc_html(out, base);
    evbuffer_add_printf(out, "/heatmap\">latest</a>");
    if (g->span.kind == HM_SPAN_WINDOW && g->has_next)
        link_window(out, base, g->next_us, "next \xe2\x80\xba");
    else
        evbuffer_add_printf(out, "<span class=\"muted\">next \xe2\x80\xba</span>");
    evbuffer_add_printf(out, "</nav>");
    /* a range form: last 24 h by default */
    int64_t to = g->has_data ? g->to_us : g->generated_us;
    evbuffer_add_printf(out, "<form method=\"get\" action=\"");
    hm_esc_html(out, base);
    evbuffer_add_printf(
        out,
        "/heatmap\"><label>from <input name=\"from\" value=\"%s\"></label>"
        "<label>to <input name=\"to\" value=\"%s\"></label>"
        "<button type=\"submit\">sum range</button></form>",
        hm_fmt_rfc3339(
            g->span.kind == HM_SPAN_RANGE ? g->from_us : to - 24 * 3600 * TM_USEC_PER_SEC, f),
        hm_fmt_rfc3339(to, t));
}

static void kpis(struct evbuffer *out, const struct hm_grid *g)
{
    char a[HM_FMT_LEN], b[HM_FMT_LEN], c[HM_FMT_LEN], d[HM_FMT_LEN];
    size_t red = 0, cells = 0;
    for (size_t i = 0; i < g->n_sites * g->n_sites; i++) {
        if (g->pairs[i].status == CELL_NONE)
            continue;
        cells++;
        red += g->pairs[i].status == CELL_RED;
    }
    evbuffer_add_printf(out,
                        "<div class=\"kpis\"><div class=\"kpi\"><b>%s</b><span>coverage, all "
                        "pairs</span></div><div class=\"kpi\"><b>%s</b><span>observed on the wire "
                        "(%s payload)</span></div><div class=\"kpi\"><b>%s</b><span>unattributed"
                        "</span></div><div class=\"kpi\"><b>%zu / %zu</b><span>pairs red</span>"
                        "</div><div class=\"kpi\"><b>%zu</b><span>open alerts</span></div></div>",
                        hm_fmt_pct(hm_totals_coverage(&g->all), a),
                        hm_fmt_bytes(g->all.observed, b), hm_fmt_bytes(g->all.payload, c),
                        hm_fmt_bytes(g->all.unattributed, d), red, cells, g->n_alerts);
}

void hm_heatmap_html(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg,
                     const char *base)
{
    hm_heatmap_html_opts(out, g, cfg, base, NULL);
}

void hm_heatmap_html_opts(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg,
                          const char *base, const struct hm_fleet_opts *fo)
{
    char cap[160];
    hm_grid_caption(g, cap, sizeof cap);
    char title[200];
    snprintf(title, sizeof title, "WAN coverage by site pair \xe2\x80\x94 %s", cap);
    char home[512];
    if (base)
        snprintf(home, sizeof home, "%s/heatmap", base);
    /* the latest view served live follows new windows */
    int refresh = 0;
    if (base && !base[0] && g->latest) /* served live, not a file */
        refresh = g->window_seconds >= 10 ? g->window_seconds : 60;
    hm_html_open(out, title, base ? home : NULL, refresh);
    evbuffer_add_printf(out, "<div class=\"bar\"><span class=\"span\">");
    hm_esc_html(out, cap);
    evbuffer_add_printf(out, "</span>");
    if (base)
        nav(out, g, base);
    evbuffer_add_printf(out, "</div>");
    kpis(out, g);
    evbuffer_add_printf(out, "<div class=\"main\"><div class=\"panel grid\">");
    char href[512];
    if (base)
        snprintf(href, sizeof href, "%s/heatmap/cell", base);
    struct hm_svg_opts o = {.cell_href = base ? href : NULL, .standalone = false, .cfg = cfg};
    if (hm_fleet_wanted(g, fo)) /* hundreds of sites: groups and a pair list (hm_fleet.h) */
        hm_fleet_html(out, g, cfg, base, fo);
    else
        hm_grid_svg(out, g, &o);
    evbuffer_add_printf(out, "</div><aside class=\"panel alerts\"><h2>Open alerts (%zu)</h2>",
                        g->n_alerts);
    hm_alerts_html(out, g->alerts, g->n_alerts, base, g->generated_us);
    evbuffer_add_printf(out, "<p class=\"muted\">Rows: source site; columns: destination site. "
                             "Open a cell for the workflows, users, hosts and counters behind "
                             "it.</p></aside></div>");
    hm_html_close(out, g->generated_us);
}
