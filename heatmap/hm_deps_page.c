/* The /heatmap/deps page: what a workflow (program, user) talks to, the circuits it crosses and,
 * with move_to, what moving it would change; a Sankey drawn as inline SVG (hm_deps.h). */
#include <inttypes.h>
#include <stdlib.h>

#include "hm_deps.h"
#include "hm_esc.h"
#include "hm_fmt.h"
#include "hm_html.h"
#include "timeutil.h"

#define SK_W     900
#define SK_H     360
#define SK_NODEW 14
#define SK_GAP   8

struct sk_node {
    const char *name, *kind;
    int col;
    uint64_t bytes;
    double y, h, out_y, in_y;
};

static const char *site(const struct cfg *cfg, int i)
{
    return i >= 0 && (size_t)i < cfg->n_sites ? cfg->sites[i].name : "?";
}

/* Lays the nodes of each column top to bottom, heights proportional to bytes. */
static void sk_layout(struct sk_node *n, size_t nn, uint64_t total)
{
    for (int col = 0; col < 4; col++) {
        size_t k = 0;
        for (size_t i = 0; i < nn; i++)
            k += n[i].col == col;
        double usable = SK_H - (double)(k > 0 ? k - 1 : 0) * SK_GAP, y = 0;
        for (size_t i = 0; i < nn; i++) {
            if (n[i].col != col)
                continue;
            n[i].h = total ? usable * (double)n[i].bytes / (double)total : 0;
            if (n[i].h < 1)
                n[i].h = 1;
            n[i].y = n[i].out_y = n[i].in_y = y;
            y += n[i].h + SK_GAP;
        }
    }
}

static double sk_x(int col)
{
    return 10 + col * ((SK_W - 220 - SK_NODEW) / 3.0);
}

static void sk_link(struct evbuffer *out, struct sk_node *a, struct sk_node *b, uint64_t bytes,
                    uint64_t total)
{
    double h = total ? (SK_H - 3 * SK_GAP) * (double)bytes / (double)total : 0;
    if (h < 1)
        h = 1;
    double x0 = sk_x(a->col) + SK_NODEW, x1 = sk_x(b->col), y0 = a->out_y + h / 2,
           y1 = b->in_y + h / 2, xm = (x0 + x1) / 2;
    evbuffer_add_printf(out,
                        "<path class=\"sk-link\" data-bytes=\"%" PRIu64
                        "\" d=\"M%.1f %.1fC%.1f %.1f %.1f %.1f %.1f %.1f\" stroke-width=\"%.1f\" "
                        "fill=\"none\" stroke=\"#7aa6d6\" stroke-opacity=\"0.55\"/>",
                        bytes, x0, y0, xm, y0, xm, y1, x1, y1, h);
    a->out_y += h;
    b->in_y += h;
}

static void sankey(struct evbuffer *out, const struct cfg *cfg, const struct hm_deps_result *r)
{
    const struct hm_dep_plan *p = &r->plan;
    size_t ns = cfg->n_sites, nn = 1 + 2 * ns + p->n_endpoints;
    struct sk_node *n = calloc(nn, sizeof *n);
    if (!n)
        return;
    n[0] = (struct sk_node){.name = r->q.name, .kind = hm_deps_by_name(r->q.by), .col = 0};
    for (size_t s = 0; s < ns; s++) {
        n[1 + s] = (struct sk_node){.name = cfg->sites[s].name, .kind = "local_site", .col = 1};
        n[1 + ns + s] =
            (struct sk_node){.name = cfg->sites[s].name, .kind = "remote_site", .col = 2};
    }
    for (size_t i = 0; i < p->n_endpoints; i++) {
        const struct hm_dep_endpoint *e = &p->endpoints[i];
        uint64_t b = e->bytes_out + e->bytes_in;
        n[1 + 2 * ns + i] = (struct sk_node){.name = e->endpoint, .kind = e->kind, .col = 3};
        n[1 + 2 * ns + i].bytes = b;
        n[0].bytes += b;
        n[1 + (size_t)e->local_site].bytes += b;
        n[1 + ns + (size_t)e->remote_site].bytes += b;
    }
    for (size_t i = 0; i < nn; i++)
        if (n[i].bytes == 0)
            n[i].col = -1; /* unused site: not drawn */
    sk_layout(n, nn, p->total_bytes);
    evbuffer_add_printf(out,
                        "<svg class=\"sankey\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                        "height=\"%d\" viewBox=\"0 0 %d %d\">",
                        SK_W, SK_H + 20, SK_W, SK_H + 20);
    for (size_t s = 0; s < ns; s++)
        if (n[1 + s].bytes)
            sk_link(out, &n[0], &n[1 + s], n[1 + s].bytes, p->total_bytes);
    for (size_t a = 0; a < ns; a++)
        for (size_t b = 0; b < ns; b++) {
            uint64_t bytes = hm_deps_site_bytes(p, (int)a, (int)b);
            if (bytes)
                sk_link(out, &n[1 + a], &n[1 + ns + b], bytes, p->total_bytes);
        }
    for (size_t i = 0; i < p->n_endpoints; i++)
        sk_link(out, &n[1 + ns + (size_t)p->endpoints[i].remote_site], &n[1 + 2 * ns + i],
                n[1 + 2 * ns + i].bytes, p->total_bytes);
    for (size_t i = 0; i < nn; i++) {
        if (n[i].col < 0)
            continue;
        char by[HM_FMT_LEN];
        double x = sk_x(n[i].col);
        evbuffer_add_printf(
            out, "<g class=\"sk-node\" data-kind=\"%s\" data-bytes=\"%" PRIu64 "\" data-name=\"",
            n[i].kind, n[i].bytes);
        hm_esc_html(out, n[i].name);
        evbuffer_add_printf(out,
                            "\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
                            "fill=\"#2f5d8a\"/><text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">",
                            x, n[i].y, SK_NODEW, n[i].h, x + SK_NODEW + 4, n[i].y + n[i].h / 2 + 4);
        hm_esc_html(out, n[i].name);
        evbuffer_add_printf(out, " (%s)</text></g>", hm_fmt_bytes((int64_t)n[i].bytes, by));
    }
    evbuffer_add_printf(out, "</svg>");
    free(n);
}

static void endpoints_table(struct evbuffer *out, const struct cfg *cfg,
                            const struct hm_dep_plan *p)
{
    evbuffer_add_printf(out, "<div class=\"panel\"><h2>Endpoints</h2><table class=\"deps\"><tr>"
                             "<th>local</th><th>remote</th><th>kind</th><th>endpoint</th>"
                             "<th class=\"num\">out</th><th class=\"num\">in</th>"
                             "<th class=\"num\">share</th><th class=\"num\">connections</th></tr>");
    for (size_t i = 0; i < p->n_endpoints; i++) {
        const struct hm_dep_endpoint *e = &p->endpoints[i];
        char a[HM_FMT_LEN], b[HM_FMT_LEN], c[HM_FMT_LEN];
        evbuffer_add_printf(out,
                            "<tr class=\"endpoint\" data-bytes-out=\"%" PRIu64
                            "\" data-bytes-in=\"%" PRIu64 "\"><td>",
                            e->bytes_out, e->bytes_in);
        hm_esc_html(out, site(cfg, e->local_site));
        evbuffer_add_printf(out, "</td><td>");
        hm_esc_html(out, site(cfg, e->remote_site));
        evbuffer_add_printf(out, "</td><td>");
        hm_esc_html(out, e->kind);
        evbuffer_add_printf(out, "</td><td>");
        hm_esc_html(out, e->endpoint);
        evbuffer_add_printf(out,
                            "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td "
                            "class=\"num\">%s</td><td class=\"num\">%" PRIu64 "</td></tr>",
                            hm_fmt_bytes((int64_t)e->bytes_out, a),
                            hm_fmt_bytes((int64_t)e->bytes_in, b), hm_fmt_pct(e->share, c),
                            e->connections);
    }
    evbuffer_add_printf(out, "</table></div>");
}

static void circuits_table(struct evbuffer *out, const struct cfg *cfg, const struct hm_dep_plan *p)
{
    bool mv = p->move_to >= 0;
    evbuffer_add_printf(out, "<div class=\"panel\"><h2>Circuit directions crossed</h2>");
    if (mv) {
        evbuffer_add_printf(out, "<p>If it ran at <b>");
        hm_esc_html(out, site(cfg, p->move_to));
        evbuffer_add_printf(out, "</b> (its remote endpoints unchanged, routes from the "
                                 "configuration):</p>");
    }
    evbuffer_add_printf(out,
                        "<table class=\"circuits\"><tr><th>direction</th><th "
                        "class=\"num\">today</th>%s<th class=\"num\">peak today</th>%s</tr>",
                        mv ? "<th class=\"num\">moved</th><th class=\"num\">change</th>" : "",
                        mv ? "<th class=\"num\">peak moved</th>" : "");
    for (size_t i = 0; i < p->n_circuits; i++) {
        const struct hm_dep_circuit *c = &p->circuits[i];
        char a[HM_FMT_LEN], b[HM_FMT_LEN], d[HM_FMT_LEN], u[HM_FMT_LEN];
        int64_t delta = (int64_t)c->bytes_moved - (int64_t)c->bytes_now;
        bool hot = mv ? c->exceeds_moved : c->exceeds_now;
        evbuffer_add_printf(out, "<tr class=\"circuit%s\" data-src=\"", hot ? " saturated" : "");
        hm_esc_html(out, site(cfg, c->src_site));
        evbuffer_add_printf(out, "\" data-dst=\"");
        hm_esc_html(out, site(cfg, c->dst_site));
        evbuffer_add_printf(out, "\" data-delta=\"%" PRId64 "\"><td>", mv ? delta : 0);
        hm_esc_html(out, site(cfg, c->src_site));
        evbuffer_add_printf(out, " \xe2\x86\x92 ");
        hm_esc_html(out, site(cfg, c->dst_site));
        evbuffer_add_printf(out, "</td><td class=\"num\">%s</td>",
                            hm_fmt_bytes((int64_t)c->bytes_now, a));
        if (mv)
            evbuffer_add_printf(out, "<td class=\"num\">%s</td><td class=\"num\">%s%s</td>",
                                hm_fmt_bytes((int64_t)c->bytes_moved, b),
                                delta < 0 ? "\xe2\x88\x92" : "+",
                                hm_fmt_bytes(delta < 0 ? -delta : delta, d));
        evbuffer_add_printf(out, "<td class=\"num\">%s</td>",
                            c->has_util ? hm_fmt_pct(c->peak_util_now, u) : "no counters");
        if (mv)
            evbuffer_add_printf(out, "<td class=\"num\">%s%s</td>",
                                c->has_util ? hm_fmt_pct(c->peak_util_moved, u) : "no counters",
                                c->exceeds_moved ? " \xe2\x9a\xa0 above saturation" : "");
        evbuffer_add_printf(out, "</tr>");
    }
    evbuffer_add_printf(out, "</table></div>");
}

void hm_deps_page(struct evbuffer *out, const struct cfg *cfg, const struct hm_deps_result *r)
{
    const struct hm_dep_plan *p = &r->plan;
    struct evbuffer *title = evbuffer_new();
    char t[HM_FMT_LEN], t2[HM_FMT_LEN], by[HM_FMT_LEN];
    if (title) {
        evbuffer_add_printf(title, "What %s %s talks to", hm_deps_by_name(r->q.by), r->q.name);
        evbuffer_add(title, "", 1);
    }
    hm_html_open(out, title ? (const char *)evbuffer_pullup(title, -1) : "deps", "../heatmap", 0);
    if (title)
        evbuffer_free(title);
    evbuffer_add_printf(out, "<div class=\"bar\"><h1 class=\"deps\" data-by=\"%s\" data-name=\"",
                        hm_deps_by_name(r->q.by));
    hm_esc_html(out, r->q.name);
    evbuffer_add_printf(out, "\">What %s <b>", hm_deps_by_name(r->q.by));
    hm_esc_html(out, r->q.name);
    evbuffer_add_printf(out,
                        "</b> talks to</h1><span class=\"span\">%s \xe2\x80\x93 %s, %" PRIu64
                        " windows with traffic, %s</span></div>",
                        hm_fmt_time(r->q.from_us, t), hm_fmt_time(r->q.to_us, t2), r->windows,
                        hm_fmt_bytes((int64_t)p->total_bytes, by));
    if (p->n_endpoints == 0) {
        evbuffer_add_printf(out, "<p class=\"muted\">No traffic recorded for it in this span.</p>");
    } else {
        sankey(out, cfg, r);
        endpoints_table(out, cfg, p);
        circuits_table(out, cfg, p);
    }
    hm_html_close(out, tm_now_us());
}
