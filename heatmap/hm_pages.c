/* GET /heatmap and GET /heatmap/cell: query parsing, error bodies, and the page renderers. */
#include "hm_pages.h"

#include <sys/queue.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hm_cell.h"
#include "hm_grid.h"
#include "hm_heatmap_html.h"
#include "hm_span.h"
#include "jsonw.h"

static int bad_request(struct evbuffer *out, const char **content_type, const char *path,
                       const char *msg)
{
    jw_error(out, msg, path);
    *content_type = "application/json";
    return 400;
}

static int plain(struct evbuffer *out, const char **content_type, int code, const char *msg)
{
    *content_type = "text/plain; charset=utf-8";
    evbuffer_add_printf(out, "%s\n", msg);
    return code;
}

static int parse_query(const char *query, struct evkeyvalq *kv, struct evbuffer *out,
                       const char **content_type)
{
    TAILQ_INIT(kv);
    if (query && *query && evhttp_parse_query_str(query, kv) < 0) {
        bad_request(out, content_type, "query", "query: not a valid URL query string");
        return -1;
    }
    return 0;
}

static int parse_span(struct evkeyvalq *kv, struct hm_span *span, struct evbuffer *out,
                      const char **content_type)
{
    const char *param = "";
    char err[256];
    if (hm_span_parse(evhttp_find_header(kv, "window"), evhttp_find_header(kv, "from"),
                      evhttp_find_header(kv, "to"), span, &param, err, sizeof err) < 0) {
        bad_request(out, content_type, param, err);
        return -1;
    }
    return 0;
}

int hm_page_heatmap(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                    const char **content_type)
{
    struct evkeyvalq kv;
    if (parse_query(query, &kv, out, content_type) < 0)
        return 400;
    struct hm_span span;
    int rc = parse_span(&kv, &span, out, content_type);
    /* the fleet view's filter (hm_fleet.h): ?site=, ?group=, ?group_chars=0..32 */
    char site[128], group[128];
    const char *v = evhttp_find_header(&kv, "site");
    snprintf(site, sizeof site, "%s", v ? v : "");
    v = evhttp_find_header(&kv, "group");
    snprintf(group, sizeof group, "%s", v ? v : "");
    v = evhttp_find_header(&kv, "group_chars");
    char *end = NULL;
    long gc = v && *v ? strtol(v, &end, 10) : 0;
    evhttp_clear_headers(&kv);
    if (rc < 0)
        return 400;
    if (v && *v && (*end || gc < 0 || gc > 32)) {
        return bad_request(out, content_type, "group_chars", "group_chars: expected 0..32");
    }
    struct hm_fleet_opts fo = {.site = site, .group = group, .group_chars = (int)gc};
    if (!db || PQstatus(db) != CONNECTION_OK)
        return plain(out, content_type, 500, "heatmap: no database connection");
    struct hm_grid *g = NULL;
    char err[512];
    if (hm_grid_load(db, cfg, &span, &g, err, sizeof err) < 0)
        return plain(out, content_type, 500, err);
    *content_type = "text/html; charset=utf-8";
    hm_heatmap_html_opts(out, g, cfg, "", &fo);
    hm_grid_free(g);
    return 200;
}

int hm_page_cell(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                 const char **content_type)
{
    struct evkeyvalq kv;
    if (parse_query(query, &kv, out, content_type) < 0)
        return 400;
    struct hm_span span;
    int rc = 0;
    const char *src = evhttp_find_header(&kv, "src");
    const char *dst = evhttp_find_header(&kv, "dst");
    if (!src || !*src)
        rc = bad_request(out, content_type, "src", "src: the source site is required");
    else if (!dst || !*dst)
        rc = bad_request(out, content_type, "dst", "dst: the destination site is required");
    else if (parse_span(&kv, &span, out, content_type) < 0)
        rc = 400;
    if (rc == 0 && (!db || PQstatus(db) != CONNECTION_OK))
        rc = plain(out, content_type, 500, "heatmap: no database connection");
    if (rc == 0) {
        char err[512];
        struct evbuffer *page = evbuffer_new();
        if (!page) {
            rc = plain(out, content_type, 500, "out of memory");
        } else {
            rc = hm_cell_html(page, db, cfg, src, dst, &span, "", err, sizeof err);
            if (rc == 200) {
                evbuffer_add_buffer(out, page);
                *content_type = "text/html; charset=utf-8";
            } else {
                plain(out, content_type, rc, err);
            }
            evbuffer_free(page);
        }
    }
    evhttp_clear_headers(&kv);
    return rc;
}
