/* `wanledger heatmap` and `wanledger report`: read PostgreSQL, write a file or the terminal. */
#include "hm_cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db.h"
#include "hm_grid.h"
#include "hm_grid_ansi.h"
#include "hm_grid_svg.h"
#include "hm_heatmap_html.h"
#include "hm_report.h"
#include "hm_span.h"
#include "timeutil.h"

/* Writes buf to path (through a temporary file and rename, so a reader never sees half a
 * file) or to stdout when path is NULL or "-". 0 or -1 with a message on stderr. */
static int write_out(const char *cmd, struct evbuffer *buf, const char *path)
{
    size_t len = evbuffer_get_length(buf);
    const unsigned char *data = evbuffer_pullup(buf, -1);
    if (!path || strcmp(path, "-") == 0) {
        if (len && fwrite(data, 1, len, stdout) != len) {
            fprintf(stderr, "wanledger %s: writing stdout: %s\n", cmd, strerror(errno));
            return -1;
        }
        fflush(stdout);
        return 0;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fprintf(stderr, "wanledger %s: --output %s: %s\n", cmd, path, strerror(errno));
        return -1;
    }
    bool ok = (len == 0 || fwrite(data, 1, len, f) == len);
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "wanledger %s: --output %s: %s\n", cmd, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

static PGconn *connect_db(const char *cmd, const struct cfg *cfg)
{
    char err[512];
    PGconn *db = db_connect(cfg, err, sizeof err);
    if (!db)
        fprintf(stderr, "wanledger %s: database: %s\n", cmd, err);
    return db;
}

/* Link base for files: public_url, else reconciler_url, without a trailing slash. */
static const char *link_base(const struct cfg *cfg, char *buf, size_t len)
{
    const char *u = cfg->public_url ? cfg->public_url : cfg->reconciler_url;
    if (!u || !*u)
        return NULL;
    snprintf(buf, len, "%s", u);
    size_t n = strlen(buf);
    while (n && buf[n - 1] == '/')
        buf[--n] = 0;
    return buf;
}

static void heatmap_usage(void)
{
    fprintf(stderr, "usage: wanledger heatmap [--format svg|html|ansi] [--window T | --from A "
                    "--to B] [--output FILE] [--color auto|always|never]\n"
                    "  times are RFC 3339 (2026-11-29T18:53:00Z); default: the latest window, "
                    "ansi to stdout\n");
}

int hm_cmd_heatmap(const struct cfg *cfg, int argc, char **argv)
{
    static const struct option opts[] = {{"format", required_argument, NULL, 'f'},
                                         {"window", required_argument, NULL, 'w'},
                                         {"from", required_argument, NULL, 'F'},
                                         {"to", required_argument, NULL, 'T'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"color", required_argument, NULL, 'c'},
                                         {"colour", required_argument, NULL, 'c'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *format = "ansi", *window = NULL, *from = NULL, *to = NULL, *output = NULL;
    const char *color = "auto";
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+f:w:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            format = optarg;
            break;
        case 'w':
            window = optarg;
            break;
        case 'F':
            from = optarg;
            break;
        case 'T':
            to = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'c':
            color = optarg;
            break;
        case 'h':
            heatmap_usage();
            return 0;
        default:
            fprintf(stderr, "wanledger heatmap: unknown or incomplete option \"%s\"\n",
                    argv[optind - 1]);
            heatmap_usage();
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "wanledger heatmap: unexpected argument \"%s\"\n", argv[optind]);
        heatmap_usage();
        return 2;
    }
    if (strcmp(format, "svg") && strcmp(format, "html") && strcmp(format, "ansi")) {
        fprintf(stderr, "wanledger heatmap: --format: expected svg, html or ansi, got \"%s\"\n",
                format);
        return 2;
    }
    if (strcmp(color, "auto") && strcmp(color, "always") && strcmp(color, "never")) {
        fprintf(stderr, "wanledger heatmap: --color: expected auto, always or never, got \"%s\"\n",
                color);
        return 2;
    }
    struct hm_span span;
    const char *param;
    char err[512];
    if (hm_span_parse(window, from, to, &span, &param, err, sizeof err) < 0) {
        fprintf(stderr, "wanledger heatmap: --%s\n", err);
        return 2;
    }
    PGconn *db = connect_db("heatmap", cfg);
    if (!db)
        return 1;
    struct hm_grid *g = NULL;
    if (hm_grid_load(db, cfg, &span, &g, err, sizeof err) < 0) {
        fprintf(stderr, "wanledger heatmap: %s\n", err);
        PQfinish(db);
        return 1;
    }
    PQfinish(db);
    struct evbuffer *buf = evbuffer_new();
    if (!buf) {
        hm_grid_free(g);
        fprintf(stderr, "wanledger heatmap: out of memory\n");
        return 1;
    }
    char base[1024];
    const char *lb = link_base(cfg, base, sizeof base);
    if (strcmp(format, "svg") == 0) {
        char href[1100];
        if (lb)
            snprintf(href, sizeof href, "%s/heatmap/cell", lb);
        struct hm_svg_opts o = {.cell_href = lb ? href : NULL, .standalone = true, .cfg = cfg};
        hm_grid_svg(buf, g, &o);
    } else if (strcmp(format, "html") == 0) {
        hm_heatmap_html(buf, g, cfg, lb);
    } else {
        bool to_stdout = !output || strcmp(output, "-") == 0;
        bool colour = strcmp(color, "always") == 0 ||
                      (strcmp(color, "auto") == 0 && to_stdout && isatty(STDOUT_FILENO));
        hm_grid_ansi(buf, g, cfg, colour);
    }
    hm_grid_free(g);
    int rc = write_out("heatmap", buf, output) < 0 ? 1 : 0;
    evbuffer_free(buf);
    return rc;
}

static void report_usage(void)
{
    fprintf(stderr, "usage: wanledger report [--week 2026-W48] [--format md|html] "
                    "[--output FILE]\n  default: the last complete ISO week, Markdown to stdout\n");
}

int hm_cmd_report(const struct cfg *cfg, int argc, char **argv)
{
    static const struct option opts[] = {{"week", required_argument, NULL, 'w'},
                                         {"format", required_argument, NULL, 'f'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *week = NULL, *format = "md", *output = NULL;
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+w:f:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'w':
            week = optarg;
            break;
        case 'f':
            format = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case 'h':
            report_usage();
            return 0;
        default:
            fprintf(stderr, "wanledger report: unknown or incomplete option \"%s\"\n",
                    argv[optind - 1]);
            report_usage();
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "wanledger report: unexpected argument \"%s\"\n", argv[optind]);
        report_usage();
        return 2;
    }
    enum hm_report_format f;
    if (strcmp(format, "md") == 0 || strcmp(format, "markdown") == 0)
        f = HM_REPORT_MD;
    else if (strcmp(format, "html") == 0)
        f = HM_REPORT_HTML;
    else {
        fprintf(stderr, "wanledger report: --format: expected md or html, got \"%s\"\n", format);
        return 2;
    }
    int64_t week_us;
    if (week) {
        if (hm_report_parse_week(week, &week_us) < 0) {
            fprintf(stderr,
                    "wanledger report: --week: expected an ISO week such as 2026-W48, got "
                    "\"%s\"\n",
                    week);
            return 2;
        }
    } else {
        char label[16];
        hm_report_week_label(tm_now_us() - 7 * 86400LL * TM_USEC_PER_SEC, label);
        if (hm_report_parse_week(label, &week_us) < 0)
            return 1;
    }
    PGconn *db = connect_db("report", cfg);
    if (!db)
        return 1;
    struct evbuffer *buf = evbuffer_new();
    char err[512];
    int rc = 0;
    if (!buf) {
        fprintf(stderr, "wanledger report: out of memory\n");
        rc = 1;
    } else if (hm_report_render(buf, db, cfg, week_us, f, err, sizeof err) < 0) {
        fprintf(stderr, "wanledger report: %s\n", err);
        rc = 1;
    } else if (write_out("report", buf, output) < 0) {
        rc = 1;
    }
    if (buf)
        evbuffer_free(buf);
    PQfinish(db);
    return rc;
}
