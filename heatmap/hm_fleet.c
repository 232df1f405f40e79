/* The heatmap page at fleet size (see hm_fleet.h). */
#include "hm_fleet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_esc.h"
#include "hm_fmt.h"
#include "hm_status.h"

#define GROUP_LEN 64

const char *hm_fleet_group(const char *site, int group_chars, char *buf, size_t len)
{
    size_t n = strlen(site);
    if (group_chars > 0) {
        if ((size_t)group_chars < n)
            n = (size_t)group_chars;
    } else {
        size_t sep = strcspn(site, "-_.");
        n = sep < n ? sep : n > 3 ? n - 2 : n;
    }
    if (n >= len)
        n = len - 1;
    memcpy(buf, site, n);
    buf[n] = 0;
    return buf;
}

static int has_filter(const struct hm_fleet_opts *o)
{
    return o && ((o->site && *o->site) || (o->group && *o->group) || o->group_chars > 0);
}

int hm_fleet_wanted(const struct hm_grid *g, const struct hm_fleet_opts *o)
{
    return g->n_sites > HM_FLEET_MATRIX_MAX_SITES || has_filter(o);
}

static long site_of(const struct hm_grid *g, const char *name)
{
    for (size_t i = 0; name && i < g->n_sites; i++)
        if (!strcmp(g->sites[i], name))
            return (long)i;
    return -1;
}

/* circ[s * n + d]: a configured circuit joins s and d (either direction) */
static void mark_circuits(const struct hm_grid *g, const struct cfg *cfg, unsigned char *circ)
{
    size_t n = g->n_sites;
    for (size_t i = 0; cfg && i < cfg->n_links; i++) {
        long a = site_of(g, cfg->links[i].site), b = site_of(g, cfg->links[i].peer_site);
        if (a >= 0 && b >= 0)
            circ[(size_t)a * n + (size_t)b] = circ[(size_t)b * n + (size_t)a] = 1;
    }
}

struct row {
    size_t s, d;
    int64_t unattributed;
};

static int cmp_row(const void *a, const void *b)
{
    const struct row *x = a, *y = b;
    if (x->unattributed != y->unattributed)
        return x->unattributed < y->unattributed ? 1 : -1;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return x->d < y->d ? -1 : x->d > y->d;
}

static void status_cell(struct evbuffer *out, enum cell_status st, double cov)
{
    const struct hm_status_info *si = hm_status_info(st);
    char c[HM_FMT_LEN];
    evbuffer_add_printf(out, "<td style=\"background:%s;color:%s\" title=\"%s\">%c %s</td>",
                        si->fill, si->ink, si->label, si->letter,
                        isnan(cov) ? "\xe2\x80\x94" : hm_fmt_pct(cov, c));
}

static void pair_link(struct evbuffer *out, const struct hm_grid *g, const char *base,
                      const char *src, const char *dst)
{
    char t[HM_FMT_LEN];
    evbuffer_add_printf(out, "<a href=\"");
    hm_esc_html(out, base);
    evbuffer_add_printf(out, "/heatmap/cell?src=");
    hm_esc_url(out, src);
    evbuffer_add_printf(out, "&amp;dst=");
    hm_esc_url(out, dst);
    if (g->span.kind == HM_SPAN_RANGE) {
        evbuffer_add_printf(out, "&amp;from=%s", hm_fmt_rfc3339(g->from_us, t));
        evbuffer_add_printf(out, "&amp;to=%s", hm_fmt_rfc3339(g->to_us, t));
    } else {
        evbuffer_add_printf(out, "&amp;window=%s", hm_fmt_rfc3339(g->from_us, t));
    }
    evbuffer_add_printf(out, "\">");
    hm_esc_html(out, src);
    evbuffer_add_printf(out, " \xe2\x86\x92 ");
    hm_esc_html(out, dst);
    evbuffer_add_printf(out, "</a>");
}

static void form(struct evbuffer *out, const char *base, const struct hm_fleet_opts *o)
{
    evbuffer_add_printf(out, "<form class=\"filter\" method=\"get\" action=\"");
    hm_esc_html(out, base ? base : "");
    evbuffer_add_printf(out, "/heatmap\">Site <input name=\"site\" value=\"");
    hm_esc_html(out, o && o->site ? o->site : "");
    evbuffer_add_printf(out, "\"> group <input name=\"group\" value=\"");
    hm_esc_html(out, o && o->group ? o->group : "");
    evbuffer_add_printf(out,
                        "\"> group by the first <input name=\"group_chars\" size=\"2\" "
                        "value=\"%d\"> characters (0: up to the first - _ .) "
                        "<button>Filter</button></form>",
                        o ? o->group_chars : 0);
}

/* The group x group matrix (sums of the pairs in the filter). */
static void groups(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg,
                   char (*grp)[GROUP_LEN], const unsigned char *keep)
{
    char names[HM_FLEET_MAX_GROUPS][GROUP_LEN];
    size_t n = 0, more = 0;
    int *gi = malloc((g->n_sites + 1) * sizeof *gi);
    struct hm_totals *t = calloc(HM_FLEET_MAX_GROUPS * HM_FLEET_MAX_GROUPS, sizeof *t);
    if (!gi || !t) {
        free(gi);
        free(t);
        return;
    }
    for (size_t i = 0; i < g->n_sites; i++) {
        size_t k = 0;
        while (k < n && strcmp(names[k], grp[i]))
            k++;
        if (k == n) {
            if (n < HM_FLEET_MAX_GROUPS)
                snprintf(names[n++], GROUP_LEN, "%s", grp[i]);
            else
                k = SIZE_MAX, more++;
        }
        gi[i] = k == SIZE_MAX ? -1 : (int)k;
    }
    for (size_t s = 0; s < g->n_sites; s++)
        for (size_t d = 0; d < g->n_sites; d++)
            if (keep[s * g->n_sites + d] && gi[s] >= 0 && gi[d] >= 0)
                hm_totals_add(&t[gi[s] * HM_FLEET_MAX_GROUPS + gi[d]], &hm_grid_pair(g, s, d)->t);
    evbuffer_add_printf(out,
                        "<h2>Site groups (%zu)</h2><table class=\"groups\"><tr><th>from "
                        "\\ to</th>",
                        n);
    for (size_t k = 0; k < n; k++) {
        evbuffer_add_printf(out, "<th>");
        hm_esc_html(out, names[k]);
        evbuffer_add_printf(out, "</th>");
    }
    evbuffer_add_printf(out, "</tr>");
    for (size_t a = 0; a < n; a++) {
        evbuffer_add_printf(out, "<tr><th>");
        hm_esc_html(out, names[a]);
        evbuffer_add_printf(out, "</th>");
        for (size_t b = 0; b < n; b++) {
            const struct hm_totals *x = &t[a * HM_FLEET_MAX_GROUPS + b];
            if (!x->n_windows)
                evbuffer_add_printf(out, "<td></td>");
            else
                status_cell(out, hm_status_of_totals(x, CELL_NONE, cfg), hm_totals_coverage(x));
        }
        evbuffer_add_printf(out, "</tr>");
    }
    evbuffer_add_printf(out, "</table>");
    if (more)
        evbuffer_add_printf(out,
                            "<p class=\"muted\">%zu more sites in further groups: filter by "
                            "group or site.</p>",
                            more);
    free(gi);
    free(t);
}

/* Keeps a pair when it passes the filter and has a circuit or rows in the span. */
static unsigned char *select_pairs(const struct hm_grid *g, const struct cfg *cfg,
                                   char (*grp)[GROUP_LEN], const struct hm_fleet_opts *o)
{
    size_t n = g->n_sites;
    unsigned char *keep = calloc(n * n + 1, 1);
    unsigned char *site_ok = calloc(n + 1, 1), *circ = calloc(n * n + 1, 1);
    if (!keep || !site_ok || !circ) {
        free(keep);
        free(site_ok);
        free(circ);
        return NULL;
    }
    mark_circuits(g, cfg, circ);
    const char *f = o && o->site && *o->site ? o->site : NULL;
    const char *gr = o && o->group && *o->group ? o->group : NULL;
    for (size_t i = 0; i < n; i++)
        site_ok[i] = (!f || strstr(g->sites[i], f)) && (!gr || !strcmp(grp[i], gr));
    for (size_t s = 0; s < n; s++)
        for (size_t d = 0; d < n; d++) {
            if (s == d || !(site_ok[s] || site_ok[d]))
                continue;
            const struct hm_pair *p = hm_grid_pair(g, s, d);
            keep[s * n + d] = p->status != CELL_NONE || p->t.n_windows > 0 || circ[s * n + d];
        }
    free(site_ok);
    free(circ);
    return keep;
}

void hm_fleet_html(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg,
                   const char *base, const struct hm_fleet_opts *o)
{
    size_t n = g->n_sites;
    char(*grp)[GROUP_LEN] = calloc(n + 1, sizeof *grp);
    if (!grp)
        return;
    for (size_t i = 0; i < n; i++)
        hm_fleet_group(g->sites[i], o ? o->group_chars : 0, grp[i], GROUP_LEN);
    unsigned char *keep = select_pairs(g, cfg, grp, o);
    struct row *rows = keep ? malloc((n * n + 1) * sizeof *rows) : NULL;
    if (!rows) {
        free(keep);
        free(grp);
        return;
    }
    size_t nr = 0;
    for (size_t s = 0; s < n; s++)
        for (size_t d = 0; d < n; d++)
            if (keep[s * n + d])
                rows[nr++] = (struct row){s, d, hm_grid_pair(g, s, d)->t.unattributed};
    qsort(rows, nr, sizeof *rows, cmp_row);
    if (base)
        form(out, base, o);
    groups(out, g, cfg, grp, keep);
    evbuffer_add_printf(out,
                        "<h2>Pairs with a circuit or traffic (%zu of %zu sites' %zu directed "
                        "pairs), most unattributed first</h2><table class=\"pairs\"><tr><th>pair"
                        "</th><th>status, coverage</th><th>observed</th><th>attributed</th>"
                        "<th>unattributed</th><th>last 24 h</th></tr>",
                        nr, n, n * (n ? n - 1 : 0));
    size_t shown = nr < HM_FLEET_MAX_ROWS ? nr : HM_FLEET_MAX_ROWS;
    for (size_t i = 0; i < shown; i++) {
        const struct hm_pair *p = hm_grid_pair(g, rows[i].s, rows[i].d);
        char a[HM_FMT_LEN], b[HM_FMT_LEN], c[HM_FMT_LEN];
        evbuffer_add_printf(out, "<tr><td>");
        if (base)
            pair_link(out, g, base, g->sites[rows[i].s], g->sites[rows[i].d]);
        else {
            hm_esc_html(out, g->sites[rows[i].s]);
            evbuffer_add_printf(out, " \xe2\x86\x92 ");
            hm_esc_html(out, g->sites[rows[i].d]);
        }
        evbuffer_add_printf(out, "</td>");
        if (p->status == CELL_NONE)
            evbuffer_add_printf(out, "<td class=\"muted\">no rows (circuit only)</td>");
        else
            status_cell(out, p->status, p->coverage);
        evbuffer_add_printf(out, "<td>%s</td><td>%s</td><td>%s</td><td class=\"strip\">",
                            hm_totals_bytes(&p->t, p->t.observed, a),
                            hm_totals_bytes(&p->t, p->t.attributed, b),
                            hm_totals_bytes(&p->t, p->t.unattributed, c));
        for (int h = 0; h < HM_STRIP_HOURS; h++)
            evbuffer_add_printf(out, "%c",
                                p->strip[h] == CELL_NONE
                                    ? '.'
                                    : hm_status_info((enum cell_status)p->strip[h])->letter);
        evbuffer_add_printf(out, "</td></tr>");
    }
    evbuffer_add_printf(out, "</table>");
    if (nr > shown)
        evbuffer_add_printf(out,
                            "<p class=\"muted\">%zu more pairs not listed: filter by site "
                            "or group.</p>",
                            nr - shown);
    free(rows);
    free(keep);
    free(grp);
}
