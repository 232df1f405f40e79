/* GET /api/v1/nas and the /heatmap/nas page (api_nas.h): parameters in, hm_nas out. */
#include "api_nas.h"

#include <sys/queue.h>

#include <arpa/inet.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "db.h"
#include "hm_nas.h"
#include "jsonw.h"
#include "log.h"
#include "timeutil.h"

#define NAS_EXPORT_MAX 1024

/* Fills q from the parameters (server canonicalised into server_buf). 0, or -1 with msg, path.
 * Without "to": the start of the current window (the windows agents have reported); without
 * "from": an hour before "to". */
static int nas_args(const struct cfg *cfg, const char *server, const char *export_path,
                    const char *from_s, const char *to_s, char server_buf[INET6_ADDRSTRLEN],
                    struct hm_nas_query *q, const char **msg, const char **path)
{
    memset(q, 0, sizeof(*q));
    if (server && *server) {
        unsigned char bin[16];
        int fam = strchr(server, ':') ? AF_INET6 : AF_INET;
        if (inet_pton(fam, server, bin) != 1 ||
            !inet_ntop(fam, bin, server_buf, INET6_ADDRSTRLEN)) {
            *msg = "expected the NFS server's IP address";
            *path = "server";
            return -1;
        }
        q->server = server_buf;
    }
    if (export_path) {
        if (strlen(export_path) > NAS_EXPORT_MAX) {
            *msg = "expected an export path of at most 1024 bytes";
            *path = "export";
            return -1;
        }
        q->export_path = export_path;
    }
    int64_t now = tm_now_us();
    if (api_range(from_s, to_s, now, tm_window_start(now, cfg->window_seconds), &q->from_us,
                  &q->to_us, msg, path) < 0)
        return -1;
    return 0;
}

static int from_query(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                      const char **content_type, bool page)
{
    struct evkeyvalq kv;
    TAILQ_INIT(&kv);
    *content_type = "application/json";
    if (query && evhttp_parse_query_str(query, &kv) < 0) {
        jw_error(out, "malformed query string", "?");
        return 400;
    }
    struct hm_nas_query q;
    char server[INET6_ADDRSTRLEN];
    const char *msg, *path;
    int status = 200;
    if (nas_args(cfg, evhttp_find_header(&kv, "server"), evhttp_find_header(&kv, "export"),
                 evhttp_find_header(&kv, "from"), evhttp_find_header(&kv, "to"), server, &q, &msg,
                 &path) < 0) {
        jw_error(out, msg, path);
        status = 400;
        goto done;
    }
    struct hm_nas_result r;
    char err[512];
    if (hm_nas_run(db, cfg, &q, &r, err, sizeof err) < 0) {
        log_error("nas", "%s", err);
        jw_error(out, "database error", "");
        status = 500;
        goto done;
    }
    if (page) {
        *content_type = "text/html; charset=utf-8";
        hm_nas_page(out, &r);
    } else {
        hm_nas_json(out, &r);
    }
    hm_nas_result_free(&r);
done:
    evhttp_clear_headers(&kv);
    return status;
}

int api_nas(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
            const char **content_type)
{
    return from_query(db, cfg, query, out, content_type, false);
}

int api_nas_page(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                 const char **content_type)
{
    return from_query(db, cfg, query, out, content_type, true);
}

int api_nas_cmd(const struct cfg *cfg, int argc, char **argv)
{
    static const struct option opts[] = {{"server", required_argument, NULL, 's'},
                                         {"export", required_argument, NULL, 'e'},
                                         {"from", required_argument, NULL, 'f'},
                                         {"to", required_argument, NULL, 't'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *server = NULL, *export_path = NULL, *from = NULL, *to = NULL;
    bool json = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            server = optarg;
            break;
        case 'e':
            export_path = optarg;
            break;
        case 'f':
            from = optarg;
            break;
        case 't':
            to = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            printf("usage: wanledger nas [--server ADDR] [--export PATH] [--from T] [--to T] "
                   "[--json]\n  T: RFC 3339, epoch seconds, or a duration ago (90m, 2h, 7d); "
                   "default the last hour of reported windows\n");
            return 0;
        default:
            return 2;
        }
    }
    struct hm_nas_query q;
    char server_buf[INET6_ADDRSTRLEN];
    const char *msg, *path;
    if (nas_args(cfg, server, export_path, from, to, server_buf, &q, &msg, &path) < 0) {
        fprintf(stderr, "wanledger nas: --%s: %s\n", path, msg);
        return 2;
    }
    char err[1024];
    PGconn *db = db_connect(cfg, err, sizeof err);
    if (!db) {
        log_error("nas", "%s", err);
        return 1;
    }
    struct hm_nas_result r;
    int rc = 0;
    struct evbuffer *out = evbuffer_new();
    if (!out) {
        rc = 1;
    } else if (hm_nas_run(db, cfg, &q, &r, err, sizeof err) < 0) {
        log_error("nas", "%s", err);
        rc = 1;
    } else {
        if (json)
            hm_nas_json(out, &r);
        else
            hm_nas_print(out, &r);
        hm_nas_result_free(&r);
        fwrite(evbuffer_pullup(out, -1), 1, evbuffer_get_length(out), stdout);
    }
    if (out)
        evbuffer_free(out);
    PQfinish(db);
    return rc;
}
