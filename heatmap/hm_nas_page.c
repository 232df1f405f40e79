/* The /heatmap/nas page: "which pods and workflows load this filer right now", with the latency
 * they see (hm_nas.h). Every figure says its span and unit; latencies are p50/p99/p999/max of
 * the merged buckets with the sample count. */
#include <inttypes.h>
#include <stdio.h>

#include "hm_esc.h"
#include "hm_fmt.h"
#include "hm_html.h"
#include "hm_nas.h"
#include "timeutil.h"

#define PAGE_WINDOWS 30 /* newest windows listed per instance */

/* A latency in us for people: "740 µs", "12.3 ms", "1.25 s"; the overflow bucket "≥ 16.8 s". */
static const char *fmt_us(uint64_t us, char buf[HM_FMT_LEN])
{
    if (us == UINT64_MAX)
        snprintf(buf, HM_FMT_LEN, "\xe2\x89\xa5 16.8 s");
    else if (us < 1000)
        snprintf(buf, HM_FMT_LEN, "%" PRIu64 " \xc2\xb5s", us);
    else if (us < 1000000)
        snprintf(buf, HM_FMT_LEN, "%.3g ms", (double)us / 1e3);
    else
        snprintf(buf, HM_FMT_LEN, "%.3g s", (double)us / 1e6);
    return buf;
}

static void figure_cells(struct evbuffer *out, const struct hm_nas_figures *f, int64_t seconds)
{
    char a[HM_FMT_LEN], b[HM_FMT_LEN], c[HM_FMT_LEN], d[HM_FMT_LEN];
    double s = seconds > 0 ? (double)seconds : 1;
    evbuffer_add_printf(out, "<td class=\"num\" data-ops=\"%" PRIu64 "\">%.1f</td>", f->ops,
                        (double)f->ops / s);
    hm_fmt_bytes((int64_t)((double)f->bytes / s), a);
    evbuffer_add_printf(out, "<td class=\"num\" data-bytes=\"%" PRIu64 "\">%s/s</td>", f->bytes, a);
    if (f->lat.count)
        evbuffer_add_printf(out,
                            "<td class=\"num lat\" data-p99-us=\"%" PRIu64 "\">%s</td>"
                            "<td class=\"num\">%s</td><td class=\"num\">%s</td>"
                            "<td class=\"num\">%s</td><td class=\"num\">%" PRIu64 "</td>",
                            f->lat.p99, fmt_us(f->lat.p50, a), fmt_us(f->lat.p99, b),
                            fmt_us(f->lat.p999, c), fmt_us(f->lat.max, d), f->lat.count);
    else
        evbuffer_add_printf(out, "<td class=\"num lat none\" colspan=\"4\">no latency "
                                 "reported</td><td class=\"num\">0</td>");
    if (f->detail_ops)
        evbuffer_add_printf(out, "<td class=\"num\">%" PRIu64 " of %" PRIu64 "</td>", f->errors,
                            f->detail_ops);
    else
        evbuffer_add_printf(out, "<td class=\"num none\">unknown</td>");
}

static const char FIG_HEAD[] =
    "<th class=\"num\">IOPS</th><th class=\"num\">throughput</th><th class=\"num\">p50</th>"
    "<th class=\"num\">p99</th><th class=\"num\">p999</th><th class=\"num\">max</th>"
    "<th class=\"num\">samples</th><th class=\"num\">errors</th>";

/* The instance's own page over the same span. */
static void instance_link(struct evbuffer *out, const struct hm_nas_result *r,
                          const struct hm_nas_instance *in)
{
    char a[HM_FMT_LEN], b[HM_FMT_LEN];
    evbuffer_add_printf(out, "<a href=\"nas?server=");
    hm_esc_url(out, in->server);
    evbuffer_add_printf(out, "&amp;export=");
    hm_esc_url(out, in->export_path);
    evbuffer_add_printf(out, "&amp;from=%s&amp;to=%s\">", hm_fmt_rfc3339(r->q.from_us, a),
                        hm_fmt_rfc3339(r->q.to_us, b));
    hm_esc_html(out, in->server);
    evbuffer_add_printf(out, ":%d ", in->port);
    hm_esc_html(out, in->export_path[0] ? in->export_path : "(export unknown)");
    evbuffer_add_printf(out, "</a>");
}

static void instances_table(struct evbuffer *out, const struct hm_nas_result *r)
{
    evbuffer_add_printf(out,
                        "<div class=\"panel\"><h2>NAS instances (rates over the span)</h2>"
                        "<table class=\"nas-instances\"><tr><th>server, export</th>%s</tr>",
                        FIG_HEAD);
    for (size_t i = 0; i < r->n_inst; i++) {
        evbuffer_add_printf(out, "<tr class=\"instance\"><td>");
        instance_link(out, r, &r->inst[i]);
        evbuffer_add_printf(out, "</td>");
        figure_cells(out, &r->inst[i].total, r->span_seconds);
        evbuffer_add_printf(out, "</tr>");
    }
    evbuffer_add_printf(out, "</table></div>");
}

static void owner_cell(struct evbuffer *out, const char *s)
{
    evbuffer_add_printf(out, "<td>");
    hm_esc_html(out, s && s[0] ? s : "\xe2\x80\x93");
    evbuffer_add_printf(out, "</td>");
}

static void instance_detail(struct evbuffer *out, const struct hm_nas_result *r,
                            const struct hm_nas_instance *in)
{
    char t[HM_FMT_LEN];
    evbuffer_add_printf(out, "<div class=\"panel nas-instance\"><h2>Who loads ");
    instance_link(out, r, in);
    evbuffer_add_printf(out,
                        " (%zu of %zu owners, busiest first)</h2>"
                        "<table class=\"nas-owners\"><tr><th>namespace</th><th>pod</th>"
                        "<th>container</th><th>workflow</th><th>user</th><th>program</th>"
                        "<th>host</th>%s</tr>",
                        in->n_owners, in->n_owners_all, FIG_HEAD);
    for (size_t i = 0; i < in->n_owners; i++) {
        const struct hm_nas_owner *o = &in->owners[i];
        evbuffer_add_printf(out, "<tr class=\"owner\">");
        owner_cell(out, o->namespace_);
        owner_cell(out, o->pod);
        owner_cell(out, o->container);
        owner_cell(out, o->workflow);
        owner_cell(out, o->user);
        owner_cell(out, o->program);
        owner_cell(out, o->host);
        figure_cells(out, &o->f, r->span_seconds);
        evbuffer_add_printf(out, "</tr>");
    }
    evbuffer_add_printf(out,
                        "</table><h2>By operation</h2><table class=\"nas-ops\"><tr>"
                        "<th>op</th>%s</tr>",
                        FIG_HEAD);
    const struct hm_nas_figures *ops[2] = {&in->read, &in->write};
    static const char *const names[2] = {"read", "write"};
    for (int k = 0; k < 2; k++) {
        evbuffer_add_printf(out, "<tr class=\"op\"><td>%s</td>", names[k]);
        figure_cells(out, ops[k], r->span_seconds);
        evbuffer_add_printf(out, "</tr>");
    }
    evbuffer_add_printf(out,
                        "</table><h2>Per window (%d s, newest first)</h2>"
                        "<table class=\"nas-windows\"><tr><th>window</th>%s</tr>",
                        r->window_seconds, FIG_HEAD);
    for (size_t i = 0; i < in->n_windows && i < PAGE_WINDOWS; i++) {
        evbuffer_add_printf(out, "<tr class=\"window\"><td>%s</td>",
                            hm_fmt_time(in->windows[i].start_us, t));
        figure_cells(out, &in->windows[i].f, r->window_seconds);
        evbuffer_add_printf(out, "</tr>");
    }
    evbuffer_add_printf(out, "</table></div>");
}

void hm_nas_page(struct evbuffer *out, const struct hm_nas_result *r)
{
    char t[HM_FMT_LEN], t2[HM_FMT_LEN], d[HM_FMT_LEN];
    hm_html_open(out, "NAS view: who loads each filer", "../heatmap", 60);
    evbuffer_add_printf(out, "<div class=\"bar\"><h1 class=\"nas\">Which pods and workflows load ");
    if (r->q.server) {
        evbuffer_add_printf(out, "<b>");
        hm_esc_html(out, r->q.server);
        if (r->q.export_path) {
            evbuffer_add_printf(out, " ");
            hm_esc_html(out, r->q.export_path);
        }
        evbuffer_add_printf(out, "</b>");
    } else {
        evbuffer_add_printf(out, "each filer");
    }
    evbuffer_add_printf(out,
                        "</h1><span class=\"span\">%s \xe2\x80\x93 %s (%s of windows); "
                        "latency: upper bound of its log-linear bucket, at most 6.25 %% above "
                        "the true value</span></div>",
                        hm_fmt_time(r->q.from_us, t), hm_fmt_time(r->q.to_us, t2),
                        hm_fmt_duration(r->span_seconds, d));
    if (r->n_inst == 0) {
        evbuffer_add_printf(out, "<p class=\"none\">No NFS traffic recorded in this span.</p>");
    } else {
        instances_table(out, r);
        for (size_t i = 0; i < r->n_inst && (r->q.server || i < 5); i++)
            instance_detail(out, r, &r->inst[i]);
    }
    evbuffer_add_printf(out, "<p class=\"none\">From nas_windows: the agents' NFS records, "
                             "per report once; IOPS and throughput are averages over the windows "
                             "shown; errors are out of the requests whose detail the agent "
                             "kept.</p>");
    hm_html_close(out, tm_now_us());
}
