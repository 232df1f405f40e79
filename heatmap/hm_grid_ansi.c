/* Terminal rendering of the heatmap grid (see hm_grid_ansi.h). */
#include "hm_grid_ansi.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hm_esc.h"
#include "hm_fmt.h"
#include "utf8.h"
#include "hm_grid_svg.h"
#include "timeutil.h"

#define CELL_CHARS 24
#define NAME_CHARS 14

/* name, made safe for a terminal, cut or padded to width characters. */
static void padded(struct evbuffer *out, const char *name, size_t width, bool right)
{
    char buf[256];
    size_t n;
    size_t i = utf8_prefix(name, width, sizeof buf - 8, &n);
    snprintf(buf, sizeof buf, "%.*s", (int)i, name);
    size_t pad = width - n;
    if (right)
        for (size_t k = 0; k < pad; k++)
            evbuffer_add(out, " ", 1);
    hm_esc_term(out, buf);
    if (!right)
        for (size_t k = 0; k < pad; k++)
            evbuffer_add(out, " ", 1);
}

static void cell_open(struct evbuffer *out, enum cell_status s, bool colour)
{
    if (colour)
        evbuffer_add_printf(out, "\033[%sm", s == CELL_NONE ? "2" : hm_status_info(s)->ansi);
}

static void cell_close(struct evbuffer *out, bool colour)
{
    if (colour)
        evbuffer_add_printf(out, "\033[0m");
}

static void text_cell(struct evbuffer *out, const char *text, enum cell_status s, bool colour)
{
    char buf[64];
    snprintf(buf, sizeof buf, " %-*.*s", CELL_CHARS - 2, CELL_CHARS - 2, text);
    cell_open(out, s, colour);
    evbuffer_add(out, buf, strlen(buf));
    cell_close(out, colour);
    evbuffer_add(out, " ", 1);
}

void hm_grid_ansi(struct evbuffer *out, const struct hm_grid *g, const struct cfg *cfg, bool colour)
{
    char cap[160];
    size_t n = g->n_sites;
    evbuffer_add_printf(out, "%swanledger coverage \xe2\x80\x94 %s%s\n\n", colour ? "\033[1m" : "",
                        hm_grid_caption(g, cap, sizeof cap), colour ? "\033[0m" : "");
    evbuffer_add_printf(out, "%-*s ", NAME_CHARS, "from \\ to");
    for (size_t j = 0; j < n; j++) {
        evbuffer_add(out, " ", 1);
        padded(out, g->sites[j], CELL_CHARS - 1, false);
    }
    evbuffer_add_printf(out, "\n");
    for (size_t i = 0; i < n; i++) {
        for (int line = 0; line < 2; line++) {
            if (line == 0)
                padded(out, g->sites[i], NAME_CHARS, false);
            else
                evbuffer_add_printf(out, "%*s", NAME_CHARS, "");
            evbuffer_add(out, " ", 1);
            for (size_t j = 0; j < n; j++) {
                const struct hm_pair *p = hm_grid_pair(g, i, j);
                char text[96], a[HM_FMT_LEN], b[HM_FMT_LEN];
                if (i == j || p->status == CELL_NONE) {
                    text_cell(out, line == 0 ? (i == j ? "." : "no data") : "", CELL_NONE, colour);
                    continue;
                }
                const struct hm_status_info *si = hm_status_info(p->status);
                if (line == 0)
                    snprintf(text, sizeof text, "%c %-10s %8s%s", si->letter, si->label,
                             hm_fmt_pct(p->coverage, a), p->n_open_alerts ? "!" : " ");
                else if (p->status == CELL_NO_COUNTER)
                    snprintf(text, sizeof text, "  attributed %s",
                             hm_totals_bytes(&p->t, p->t.attributed, a));
                else
                    snprintf(text, sizeof text, "%9s / %-9s",
                             hm_totals_bytes(&p->t, p->t.observed, a),
                             hm_totals_bytes(&p->t, p->t.unattributed, b));
                text_cell(out, text, p->status, colour);
            }
            evbuffer_add_printf(out, "\n");
        }
    }
    evbuffer_add_printf(out, "\ncell: status letter and name, coverage (! = open alert); "
                             "observed / unattributed volume in the span\n");
    /* strips */
    char t[HM_FMT_LEN];
    evbuffer_add_printf(out, "\nLast %d hours from %s, one letter per hour (. = no data):\n",
                        HM_STRIP_HOURS, hm_fmt_time(g->strip_from_us, t));
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            const struct hm_pair *p = hm_grid_pair(g, i, j);
            if (i == j || p->status == CELL_NONE)
                continue;
            evbuffer_add_printf(out, "  ");
            padded(out, g->sites[i], NAME_CHARS, true);
            evbuffer_add_printf(out, " -> ");
            padded(out, g->sites[j], NAME_CHARS, false);
            evbuffer_add_printf(out, " ");
            for (int h = 0; h < HM_STRIP_HOURS; h++) {
                enum cell_status s = (enum cell_status)p->strip[h];
                char c = s == CELL_NONE ? '.' : hm_status_info(s)->letter;
                if (colour && s != CELL_NONE)
                    evbuffer_add_printf(out, "\033[%sm%c\033[0m", hm_status_info(s)->ansi, c);
                else
                    evbuffer_add(out, &c, 1);
            }
            evbuffer_add_printf(out, "\n");
        }
    /* legend */
    evbuffer_add_printf(out, "\nLegend:\n");
    for (int s = 0; s < CELL_N_STATUS; s++) {
        char m[256];
        const struct hm_status_info *si = hm_status_info((enum cell_status)s);
        evbuffer_add_printf(out, "  ");
        if (colour)
            evbuffer_add_printf(out, "\033[%sm %c \033[0m", si->ansi, si->letter);
        else
            evbuffer_add_printf(out, " %c ", si->letter);
        evbuffer_add_printf(out, " %-11s %s\n", si->label,
                            hm_status_meaning((enum cell_status)s, cfg, m, sizeof m));
    }
    /* alerts */
    evbuffer_add_printf(out, "\nOpen alerts: %zu\n", g->n_alerts);
    for (size_t k = 0; k < g->n_alerts; k++) {
        const struct hm_alert *a = &g->alerts[k];
        char d[HM_FMT_LEN], pk[HM_FMT_LEN], o[HM_FMT_LEN];
        evbuffer_add_printf(out, "  %-10s ", a->kind);
        hm_esc_term(out, a->src);
        evbuffer_add_printf(out, " -> ");
        hm_esc_term(out, a->dst);
        evbuffer_add_printf(out, "  open %s since %s, peak unattributed %s",
                            hm_fmt_duration((g->generated_us - a->opened_us) / TM_USEC_PER_SEC, d),
                            hm_fmt_time(a->opened_us, o), hm_fmt_bytes(a->peak_unattributed, pk));
        if (a->summary[0]) {
            evbuffer_add_printf(out, ": ");
            hm_esc_term(out, a->summary);
        }
        evbuffer_add_printf(out, "\n");
    }
}
