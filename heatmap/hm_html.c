/* Shared HTML frame and stylesheet (see hm_html.h). */
#include <stdint.h>

#include "hm_html.h"

#include "hm_esc.h"
#include "hm_fmt.h"

static const char css[] =
    "*{box-sizing:border-box}"
    "body{margin:0;font:14px/1.45 'DejaVu Sans',Verdana,Arial,sans-serif;color:#1b1f24;"
    "background:#eef1f4}"
    "a{color:#1f5fbf}"
    ".top{background:#1d2733;color:#fff;padding:10px 22px;display:flex;align-items:baseline;"
    "gap:18px;flex-wrap:wrap}"
    ".top .brand{font-weight:bold;font-size:17px;color:#fff;text-decoration:none}"
    ".top .sub{color:#b8c2cf}"
    ".wrap{padding:16px 22px}"
    ".bar{display:flex;flex-wrap:wrap;gap:10px 22px;align-items:center;margin-bottom:12px}"
    ".bar .span{font-size:16px;font-weight:bold}"
    ".bar nav a,.bar nav span{margin-right:10px}"
    ".bar form{display:flex;gap:6px;align-items:center;font-size:13px}"
    ".bar input{font:inherit;padding:2px 4px;width:190px}"
    ".kpis{display:flex;flex-wrap:wrap;gap:10px;margin:0 0 14px}"
    ".kpi{background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:8px 14px;"
    "min-width:150px}"
    ".kpi b{display:block;font-size:19px}"
    ".kpi span{color:#5b6470;font-size:12px}"
    ".main{display:flex;gap:18px;align-items:flex-start;flex-wrap:wrap}"
    ".panel{background:#fff;border:1px solid #d8dde3;border-radius:8px;padding:14px}"
    ".alerts{width:360px;flex:0 0 360px}"
    ".alerts h2,.panel h2{font-size:15px;margin:0 0 10px}"
    ".alerts ul{list-style:none;margin:0;padding:0}"
    ".alerts li{border-left:5px solid #d62839;background:#fff5f5;padding:8px 10px;"
    "margin-bottom:8px;border-radius:4px}"
    ".alerts li.over{border-color:#7e4bc4;background:#f7f2fd}"
    ".alerts li.saturation{border-color:#e07b00;background:#fff7ec}"
    ".alerts .kind{font-weight:bold;text-transform:uppercase;font-size:12px;margin-right:6px}"
    ".alerts .meta{color:#4a525d;font-size:12.5px}"
    ".none{color:#5b6470}"
    "table{border-collapse:collapse;width:100%;font-size:13px}"
    "th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #e6e9ed;vertical-align:top;"
    "overflow-wrap:break-word}" /* long names wrap; short words keep their column width */
    "th{background:#f4f6f8;font-weight:bold}"
    "td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    ".cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(260px,1fr));gap:14px;"
    "margin-top:14px}"
    ".banner{border-radius:8px;padding:10px 14px;margin-bottom:14px;background:#fff5f5;"
    "border:2px solid #d62839}"
    ".status{display:inline-flex;align-items:center;gap:6px;font-weight:bold}"
    ".muted{color:#5b6470;font-size:12.5px}"
    "footer{color:#6b7380;font-size:12px;padding:10px 22px 22px}"
    "svg{max-width:100%;height:auto}"
    ".panel.grid{flex:0 1 auto;min-width:0;max-width:100%;overflow:auto}"
    ".panel.grid svg{max-width:none}"
    "svg.swatch{vertical-align:middle}"
    "h1{font-size:20px;margin:0 0 6px}"
    "h2{font-size:16px}";

void hm_html_open(struct evbuffer *out, const char *title, const char *home, int refresh_seconds)
{
    evbuffer_add_printf(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                             "<meta name=\"viewport\" content=\"width=device-width, "
                             "initial-scale=1\"><title>");
    hm_esc_html(out, title);
    evbuffer_add_printf(out, "</title>");
    if (refresh_seconds > 0)
        evbuffer_add_printf(out, "<meta http-equiv=\"refresh\" content=\"%d\">", refresh_seconds);
    evbuffer_add_printf(out, "<style>%s</style></head><body><div class=\"top\">", css);
    if (home) {
        evbuffer_add_printf(out, "<a class=\"brand\" href=\"");
        hm_esc_html(out, home);
        evbuffer_add_printf(out, "\">wanledger</a>");
    } else {
        evbuffer_add_printf(out, "<span class=\"brand\">wanledger</span>");
    }
    evbuffer_add_printf(out, "<span class=\"sub\">");
    hm_esc_html(out, title);
    evbuffer_add_printf(out, "</span></div><div class=\"wrap\">");
}

void hm_html_close(struct evbuffer *out, int64_t generated_us)
{
    char t[HM_FMT_LEN];
    evbuffer_add_printf(out,
                        "</div><footer>Generated %s from PostgreSQL (heatmap_cells, "
                        "attribution_rollup, link_windows, gap_alerts). Volumes in decimal "
                        "bytes (1 GB = 10<sup>9</sup> B) per span shown; coverage = attributed / "
                        "observed payload.</footer></body></html>\n",
                        hm_fmt_time(generated_us, t));
}
