/* Helpers shared by the heatmap tests (see hm_seed.h). */
#include "hm_seed.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db.h"
#include "harness.h"
#include "hm_pages.h"

struct cfg *hm_test_cfg(const char *conninfo)
{
    char json[2048];
    snprintf(json, sizeof json,
             "{\"window_seconds\": 60, \"database\": \"%s\","
             " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
             " {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},"
             " {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]},"
             " {\"name\": \"lon\", \"prefixes\": [\"10.4.0.0/16\"]}]}",
             conninfo);
    struct cfg_errors errs = {0};
    struct cfg *cfg = cfg_parse("hm-test.json", json, &errs);
    if (!cfg) {
        cfg_errors_print(NULL, "hm-test.json", &errs, stderr);
        cfg_errors_free(&errs);
        abort();
    }
    return cfg;
}

void hm_test_exec(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        fprintf(stderr, "SQL failed: %s\n%s\n", PQresultErrorMessage(r), sql);
        PQclear(r);
        abort();
    }
    PQclear(r);
}

char *hm_test_value(PGconn *db, const char *sql)
{
    PGresult *r = PQexec(db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1) {
        fprintf(stderr, "SQL failed: %s\n%s\n", PQresultErrorMessage(r), sql);
        PQclear(r);
        abort();
    }
    char *v = PQgetisnull(r, 0, 0) ? NULL : strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

char *hm_test_slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            cap *= 2;
            char *b = realloc(buf, cap + 1);
            if (!b) {
                free(buf);
                buf = NULL;
            }
            buf = b;
        }
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

const char *hm_test_artifacts(void)
{
    static char dir[1024];
    const char *b = getenv("WL_BUILD_DIR");
    snprintf(dir, sizeof dir, "%s/tests/heatmap/artifacts", b ? b : "/tmp");
    th_sh("mkdir -p '%s'", dir);
    return dir;
}

size_t hm_test_count(const char *hay, const char *needle)
{
    size_t n = 0, l = strlen(needle);
    for (const char *p = strstr(hay, needle); p; p = strstr(p + l, needle))
        n++;
    return n;
}

struct hm_test_server {
    struct event_base *base;
    struct evhttp *http;
    struct event *tick;
    PGconn *db;
    const struct cfg *cfg;
    pthread_t thread;
    atomic_int stop;
};

static void handle(struct evhttp_request *req, void *arg)
{
    struct hm_test_server *s = arg;
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = evhttp_uri_get_path(u);
    const char *query = evhttp_uri_get_query(u);
    struct evbuffer *body = evbuffer_new();
    const char *ct = "text/plain";
    int code;
    if (path && strcmp(path, "/heatmap") == 0)
        code = hm_page_heatmap(s->db, s->cfg, query, body, &ct);
    else if (path && strcmp(path, "/heatmap/cell") == 0)
        code = hm_page_cell(s->db, s->cfg, query, body, &ct);
    else {
        code = 404;
        evbuffer_add_printf(body, "not found\n");
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ct);
    evhttp_send_reply(req, code, code == 200 ? "OK" : "Error", body);
    evbuffer_free(body);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct hm_test_server *s = arg;
    if (atomic_load(&s->stop))
        event_base_loopbreak(s->base);
}

static void *run(void *arg)
{
    struct hm_test_server *s = arg;
    event_base_dispatch(s->base);
    return NULL;
}

struct hm_test_server *hm_test_server_start(const char *conninfo, const struct cfg *cfg, int *port)
{
    struct hm_test_server *s = calloc(1, sizeof *s);
    char err[256];
    s->db = db_connect_str(conninfo, err, sizeof err);
    if (!s->db) {
        fprintf(stderr, "server db: %s\n", err);
        abort();
    }
    s->cfg = cfg;
    s->base = event_base_new();
    s->http = evhttp_new(s->base);
    evhttp_set_gencb(s->http, handle, s);
    struct evhttp_bound_socket *h = NULL;
    for (int tries = 0; tries < 20 && !h; tries++) {
        *port = th_free_port();
        h = evhttp_bind_socket_with_handle(s->http, "127.0.0.1", (ev_uint16_t)*port);
    }
    if (!h)
        abort();
    struct timeval tv = {0, 100000};
    s->tick = event_new(s->base, -1, EV_PERSIST, on_tick, s);
    event_add(s->tick, &tv);
    pthread_create(&s->thread, NULL, run, s);
    return s;
}

void hm_test_server_stop(struct hm_test_server *s)
{
    if (!s)
        return;
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    event_free(s->tick);
    evhttp_free(s->http);
    event_base_free(s->base);
    PQfinish(s->db);
    free(s);
}
