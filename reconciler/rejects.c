/* `wanledger rejects` and the /rejects page (see rejects.h). */
#include "rejects.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "hm_esc.h"
#include "log.h"

#define SQL_LIST_REJECTS                                                                           \
    "SELECT id, to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"        \
    " endpoint, peer, record_index, path, error, raw, count(*) OVER ()"                            \
    " FROM rejected_records ORDER BY received_at DESC, id DESC LIMIT $1"

static PGresult *list(PGconn *db, long limit)
{
    char lim[24];
    snprintf(lim, sizeof(lim), "%ld", limit);
    const char *params[1] = {lim};
    return PQexecParams(db, SQL_LIST_REJECTS, 1, NULL, params, NULL, NULL, 0);
}

int rj_cmd(const struct cfg *cfg, int argc, char **argv)
{
    static const struct option opts[] = {{"limit", required_argument, NULL, 'n'},
                                         {"full", no_argument, NULL, 'f'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    long limit = 50;
    bool full = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            limit = strtol(optarg, NULL, 10);
            break;
        case 'f':
            full = true;
            break;
        case 'h':
            printf("usage: wanledger rejects [--limit N] [--full]\n"
                   "  records refused from accepted /v1/transfers batches, newest first, with\n"
                   "  the error, its JSON path and the record (cut at 120 bytes without --full)\n");
            return 0;
        default:
            return 2;
        }
    }
    if (limit <= 0) {
        fprintf(stderr, "wanledger rejects: --limit must be a positive number\n");
        return 2;
    }
    char err[1024];
    PGconn *db = db_connect(cfg, err, sizeof(err));
    if (!db) {
        log_error("rejects", "%s", err);
        return 1;
    }
    PGresult *r = list(db, limit);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        log_error("rejects", "%s", PQresultErrorMessage(r));
        rc = 1;
    } else {
        struct evbuffer *out = evbuffer_new();
        evbuffer_add_printf(out, "%-6s %-20s %-10s %-15s %5s %-20s %s\n", "ID", "RECEIVED",
                            "ENDPOINT", "PEER", "INDEX", "PATH", "ERROR / RECORD");
        for (int i = 0; i < PQntuples(r); i++) {
            evbuffer_add_printf(out, "%-6s %-20s %-10s %-15s %5s ", PQgetvalue(r, i, 0),
                                PQgetvalue(r, i, 1), PQgetvalue(r, i, 2), PQgetvalue(r, i, 3),
                                PQgetvalue(r, i, 4));
            hm_esc_term(out, PQgetvalue(r, i, 5));
            evbuffer_add(out, " ", 1);
            hm_esc_term(out, PQgetvalue(r, i, 6));
            evbuffer_add_printf(out, "\n       ");
            const char *raw = PQgetvalue(r, i, 7);
            size_t n = strlen(raw);
            if (!full && n > 120) {
                char cut[121];
                memcpy(cut, raw, 120);
                cut[120] = 0;
                hm_esc_term(out, cut);
                evbuffer_add_printf(out, "… (%zu bytes)", n);
            } else {
                hm_esc_term(out, raw);
            }
            evbuffer_add(out, "\n", 1);
        }
        if (PQntuples(r) == 0)
            evbuffer_add_printf(out, "(no rejected records)\n");
        else
            evbuffer_add_printf(out, "%d of %s rejected records\n", PQntuples(r),
                                PQgetvalue(r, 0, 8));
        fwrite(evbuffer_pullup(out, -1), 1, evbuffer_get_length(out), stdout);
        evbuffer_free(out);
    }
    PQclear(r);
    PQfinish(db);
    return rc;
}

int rj_page(PGconn *db, const char *query, struct evbuffer *out, const char **ct)
{
    long limit = 200;
    const char *l = query ? strstr(query, "limit=") : NULL;
    if (l) {
        limit = strtol(l + 6, NULL, 10);
        if (limit <= 0 || limit > 10000)
            limit = 200;
    }
    *ct = "text/html; charset=utf-8";
    PGresult *r = list(db, limit);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        PQclear(r);
        evbuffer_add_printf(out, "<!doctype html><title>error</title><p>database error</p>\n");
        return 503;
    }
    evbuffer_add_printf(out,
                        "<!doctype html><html><head><meta charset=\"utf-8\"><title>wanledger: "
                        "rejected records</title><style>body{font-family:sans-serif}td{"
                        "vertical-align:top;padding:2px 8px}code{white-space:pre-wrap;"
                        "word-break:break-all}</style></head><body><h1>Rejected records</h1>"
                        "<p>Records refused from accepted <code>/v1/transfers</code> batches "
                        "(the rest of each batch was stored), newest first: %d of %s.</p>"
                        "<table><tr><th>id</th><th>received</th><th>endpoint</th><th>peer</th>"
                        "<th>index</th><th>path</th><th>error</th><th>record</th></tr>\n",
                        PQntuples(r), PQntuples(r) ? PQgetvalue(r, 0, 8) : "0");
    for (int i = 0; i < PQntuples(r); i++) {
        evbuffer_add(out, "<tr>", 4);
        for (int k = 0; k < 8; k++) {
            evbuffer_add_printf(out, "<td>%s", k == 7 || k == 5 ? "<code>" : "");
            hm_esc_html(out, PQgetvalue(r, i, k));
            evbuffer_add_printf(out, "%s</td>", k == 7 || k == 5 ? "</code>" : "");
        }
        evbuffer_add(out, "</tr>\n", 6);
    }
    evbuffer_add_printf(out, "</table></body></html>\n");
    PQclear(r);
    return 200;
}
