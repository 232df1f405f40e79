/* GET /api/v1/deps, the /heatmap/deps page and `wanledger deps` (api_deps.h). */
#include "api_deps.h"

#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "db.h"
#include "hm_deps.h"
#include "jsonw.h"
#include "log.h"
#include "timeutil.h"

#define DEPS_NAME_MAX 1024

/* Checks the selector, the span and the target site; fills q. 0, or -1 with msg and *path. */
static int deps_args(const struct cfg *cfg, const char *workflow, const char *program,
                     const char *user, const char *from_s, const char *to_s, const char *move_to,
                     struct hm_deps_query *q, const char **msg, const char **path)
{
    int given = !!workflow + !!program + !!user;
    if (given != 1) {
        *msg = "give exactly one of workflow, program, user";
        *path = "workflow";
        return -1;
    }
    q->by = workflow ? HM_DEPS_WORKFLOW : program ? HM_DEPS_PROGRAM : HM_DEPS_USER;
    q->name = workflow ? workflow : program ? program : user;
    *path = hm_deps_by_name(q->by);
    if (!*q->name || strlen(q->name) > DEPS_NAME_MAX) {
        *msg = "expected a non-empty name of at most 1024 bytes";
        return -1;
    }
    int64_t now = tm_now_us();
    if (api_range(from_s, to_s, now, now, &q->from_us, &q->to_us, msg, path) < 0)
        return -1;
    q->move_to = -1;
    if (move_to && *move_to && (q->move_to = cfg_site_index(cfg, move_to)) < 0) {
        *msg = "expected a configured site name";
        *path = "move_to";
        return -1;
    }
    return 0;
}

static int from_query(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                      const char **content_type, bool page)
{
    struct evkeyvalq kv;
    *content_type = "application/json";
    if (api_query(query, &kv, out) != 0)
        return 400;
    struct hm_deps_query q;
    const char *msg, *path;
    int status = 200;
    if (deps_args(cfg, evhttp_find_header(&kv, "workflow"), evhttp_find_header(&kv, "program"),
                  evhttp_find_header(&kv, "user"), evhttp_find_header(&kv, "from"),
                  evhttp_find_header(&kv, "to"), evhttp_find_header(&kv, "move_to"), &q, &msg,
                  &path) < 0) {
        jw_error(out, msg, path);
        status = 400;
        goto done;
    }
    struct hm_deps_result r;
    char err[512];
    if (hm_deps_run(db, cfg, &q, &r, err, sizeof err) < 0) {
        log_error("deps", "%s", err);
        jw_error(out, "database error", "");
        status = 500;
        goto done;
    }
    if (page) {
        *content_type = "text/html; charset=utf-8";
        hm_deps_page(out, cfg, &r);
    } else {
        hm_deps_json(out, cfg, &r);
    }
    hm_deps_result_free(&r);
done:
    evhttp_clear_headers(&kv);
    return status;
}

int api_deps(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
             const char **content_type)
{
    return from_query(db, cfg, query, out, content_type, false);
}

int api_deps_page(PGconn *db, const struct cfg *cfg, const char *query, struct evbuffer *out,
                  const char **content_type)
{
    return from_query(db, cfg, query, out, content_type, true);
}

int api_deps_cmd(const struct cfg *cfg, int argc, char **argv)
{
    static const struct option opts[] = {{"workflow", required_argument, NULL, 'w'},
                                         {"program", required_argument, NULL, 'p'},
                                         {"user", required_argument, NULL, 'u'},
                                         {"from", required_argument, NULL, 'f'},
                                         {"to", required_argument, NULL, 't'},
                                         {"move-to", required_argument, NULL, 'm'},
                                         {"json", no_argument, NULL, 'j'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *wf = NULL, *pr = NULL, *us = NULL, *from = NULL, *to = NULL, *mv = NULL;
    bool json = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'w':
            wf = optarg;
            break;
        case 'p':
            pr = optarg;
            break;
        case 'u':
            us = optarg;
            break;
        case 'f':
            from = optarg;
            break;
        case 't':
            to = optarg;
            break;
        case 'm':
            mv = optarg;
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            printf("usage: wanledger deps --workflow W | --program P | --user U [--from T] "
                   "[--to T]\n                      [--move-to SITE] [--json]\n"
                   "  T: RFC 3339, epoch seconds, or a duration ago (90m, 2h, 7d); default the "
                   "last hour\n");
            return 0;
        default:
            return 2;
        }
    }
    struct hm_deps_query q;
    const char *msg, *path;
    if (deps_args(cfg, wf, pr, us, from, to, mv, &q, &msg, &path) < 0) {
        fprintf(stderr, "wanledger deps: --%s: %s\n",
                strcmp(path, "move_to") == 0 ? "move-to" : path, msg);
        return 2;
    }
    char err[1024];
    PGconn *db = db_connect(cfg, err, sizeof err);
    if (!db) {
        log_error("deps", "%s", err);
        return 1;
    }
    struct hm_deps_result r;
    int rc = 0;
    if (hm_deps_run(db, cfg, &q, &r, err, sizeof err) < 0) {
        log_error("deps", "%s", err);
        rc = 1;
    } else {
        if (json) {
            struct evbuffer *out = evbuffer_new();
            if (out) {
                hm_deps_json(out, cfg, &r);
                fwrite(evbuffer_pullup(out, -1), 1, evbuffer_get_length(out), stdout);
                evbuffer_free(out);
            }
        } else {
            hm_deps_print(stdout, cfg, &r);
        }
        hm_deps_result_free(&r);
    }
    PQfinish(db);
    return rc;
}
