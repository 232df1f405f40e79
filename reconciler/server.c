/* The evhttp server of `wanledger reconcile` (see server.h). */
#include "server.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "api.h"
#include "gate.h"
#include "api_deps.h"
#include "api_nas.h"
#include "body.h"
#include "flowin.h"
#include "fluent.h"
#include "hm_pages.h"
#include "hostport.h"
#include "http_reason.h"
#include "ingest.h"
#include "jsonw.h"
#include "srv_limits.h"
#include "log.h"
#include "readers.h"
#include "rejects.h"
#include "throttle_api.h"
#include "timeutil.h"
#include "tls_server.h"
#include "unrec.h"
#include "workers.h"

struct srv {
    const struct cfg *cfg;
    struct event_base *base;
    struct evhttp *http;
    struct metrics *metrics;
    struct wk_pool *workers;
    struct rd_pool *readers;
    struct gate *gate;
    SSL_CTX *ssl;
    int port;
};

enum access {
    ACCESS_OPEN, /* /healthz, /metrics */
    ACCESS_ROLE, /* a token of the route's role */
    ACCESS_PAGE, /* reader token, or none from loopback with open_on_loopback */
};

enum handler {
    H_INGEST,
    H_HEALTHZ,
    H_METRICS,
    H_CELLS,
    H_TOP,
    H_HEATMAP,
    H_CELL,
    H_DEPS,
    H_DEPS_PAGE,
    H_NAS,
    H_NAS_PAGE,
    H_FLOWS,
    H_UNREC,
    H_REJECTS,
    H_THROTTLE /* /v1/throttles..., dispatched by path (handle_throttle) */
};

struct route {
    const char *path;
    enum evhttp_cmd_type method;
    enum access access;
    enum srv_role role;
    enum handler handler;
    enum ingest_kind kind;
    enum metrics_endpoint ep;
};

static const struct route ROUTES[] = {
    {"/v1/attributions", EVHTTP_REQ_POST, ACCESS_ROLE, SRV_ROLE_AGENT, H_INGEST,
     INGEST_ATTRIBUTIONS, METRICS_EP_ATTRIBUTIONS},
    {"/v1/counters", EVHTTP_REQ_POST, ACCESS_ROLE, SRV_ROLE_POLLER, H_INGEST, INGEST_COUNTERS,
     METRICS_EP_COUNTERS},
    {"/v1/transfers", EVHTTP_REQ_POST, ACCESS_ROLE, SRV_ROLE_SERVICE, H_INGEST, INGEST_TRANSFERS,
     METRICS_EP_TRANSFERS},
    {"/v1/flowsamples", EVHTTP_REQ_POST, ACCESS_ROLE, SRV_ROLE_POLLER, H_FLOWS, 0,
     METRICS_EP_OTHER},
    {"/api/v1/unrecorded", EVHTTP_REQ_GET, ACCESS_ROLE, SRV_ROLE_READER, H_UNREC, 0,
     METRICS_EP_API},
    {"/healthz", EVHTTP_REQ_GET, ACCESS_OPEN, 0, H_HEALTHZ, 0, METRICS_EP_OTHER},
    {"/metrics", EVHTTP_REQ_GET, ACCESS_OPEN, 0, H_METRICS, 0, METRICS_EP_OTHER},
    {"/api/v1/cells", EVHTTP_REQ_GET, ACCESS_ROLE, SRV_ROLE_READER, H_CELLS, 0, METRICS_EP_API},
    {"/api/v1/top", EVHTTP_REQ_GET, ACCESS_ROLE, SRV_ROLE_READER, H_TOP, 0, METRICS_EP_API},
    {"/heatmap", EVHTTP_REQ_GET, ACCESS_PAGE, SRV_ROLE_READER, H_HEATMAP, 0, METRICS_EP_PAGES},
    {"/heatmap/cell", EVHTTP_REQ_GET, ACCESS_PAGE, SRV_ROLE_READER, H_CELL, 0, METRICS_EP_PAGES},
    {"/api/v1/deps", EVHTTP_REQ_GET, ACCESS_ROLE, SRV_ROLE_READER, H_DEPS, 0, METRICS_EP_API},
    {"/heatmap/deps", EVHTTP_REQ_GET, ACCESS_PAGE, SRV_ROLE_READER, H_DEPS_PAGE, 0,
     METRICS_EP_PAGES},
    {"/api/v1/nas", EVHTTP_REQ_GET, ACCESS_ROLE, SRV_ROLE_READER, H_NAS, 0, METRICS_EP_API},
    {"/heatmap/nas", EVHTTP_REQ_GET, ACCESS_PAGE, SRV_ROLE_READER, H_NAS_PAGE, 0, METRICS_EP_PAGES},
    {"/rejects", EVHTTP_REQ_GET, ACCESS_PAGE, SRV_ROLE_READER, H_REJECTS, 0, METRICS_EP_PAGES},
};

static const char *const ROLE_NAMES[SRV_ROLE_N] = {"agent", "poller", "service", "reader",
                                                   "operator"};

static int role_of_header(const struct cfg *cfg, const char *h);

/* ---- authentication ----------------------------------------------------------------------- */

/* Compares without an early exit; the time depends only on the configured token's length. */
static bool ct_equal(const char *given, size_t glen, const char *token)
{
    size_t tlen = strlen(token);
    volatile unsigned char diff = glen != tlen;
    for (size_t i = 0; i < tlen; i++) {
        unsigned char g = i < glen ? (unsigned char)given[i] : 0;
        diff |= g ^ (unsigned char)token[i];
    }
    return diff == 0;
}

int srv_role_of_token(const struct cfg *cfg, const char *token, size_t len)
{
    const struct cfg_tokens *t = &cfg->tokens;
    char **lists[SRV_ROLE_N] = {t->agent, t->poller, t->service, t->reader, t->operator};
    size_t ns[SRV_ROLE_N] = {t->n_agent, t->n_poller, t->n_service, t->n_reader, t->n_operator};
    int role = -1;
    /* every token is compared, so the time does not tell which one matched */
    for (int r = 0; r < SRV_ROLE_N; r++)
        for (size_t i = 0; i < ns[r]; i++)
            if (ct_equal(token, len, lists[r][i]))
                role = r;
    return role;
}

/* The role of the request's bearer token, or -1. */
static int request_role(const struct cfg *cfg, struct evhttp_request *req)
{
    return role_of_header(
        cfg, evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization"));
}

/* The bearer token of an Authorization header (*len bytes), or NULL. */
static const char *bearer(const char *h, size_t *len)
{
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    const char *tok = h + 7;
    while (*tok == ' ')
        tok++;
    *len = strlen(tok);
    while (*len && (tok[*len - 1] == ' ' || tok[*len - 1] == '\t'))
        (*len)--;
    return *len ? tok : NULL;
}

/* The role of an Authorization header's bearer token, or -1. */
static int role_of_header(const struct cfg *cfg, const char *h)
{
    size_t len;
    const char *tok = bearer(h, &len);
    return tok ? srv_role_of_token(cfg, tok, len) : -1;
}

/* The host the request's agent token is bound to (tokens file "agent_hosts"), or NULL. */
static const char *request_agent_host(const struct cfg *cfg, struct evhttp_request *req)
{
    size_t len;
    const char *tok =
        bearer(evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization"), &len);
    const char *host = NULL;
    for (size_t i = 0; tok && cfg->tokens.agent_host && i < cfg->tokens.n_agent; i++)
        if (ct_equal(tok, len, cfg->tokens.agent[i]))
            host = cfg->tokens.agent_host[i];
    return host;
}

static bool peer_is_loopback(struct evhttp_request *req)
{
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    char *addr = NULL;
    ev_uint16_t port = 0;
    if (!con)
        return false;
    evhttp_connection_get_peer(con, &addr, &port);
    if (!addr)
        return false;
    return strncmp(addr, "127.", 4) == 0 || strcmp(addr, "::1") == 0 ||
           strncmp(addr, "::ffff:127.", 11) == 0;
}

static const char *peer_of(struct evhttp_request *req)
{
    struct evhttp_connection *con = evhttp_request_get_connection(req);
    char *addr = NULL;
    ev_uint16_t port = 0;
    if (con)
        evhttp_connection_get_peer(con, &addr, &port);
    return addr ? addr : "?";
}

/* The route of path and method; *path_known tells 405 from 404. */
static const struct route *find_route(const char *path, enum evhttp_cmd_type method,
                                      bool *path_known)
{
    const struct route *rt = NULL;
    *path_known = false;
    for (size_t i = 0; i < sizeof(ROUTES) / sizeof(ROUTES[0]); i++) {
        if (strcmp(ROUTES[i].path, path) != 0)
            continue;
        *path_known = true;
        if (ROUTES[i].method == method ||
            (method == EVHTTP_REQ_HEAD && ROUTES[i].method == EVHTTP_REQ_GET))
            rt = &ROUTES[i];
    }
    return rt;
}

static enum evhttp_cmd_type method_of(const char *m)
{
    static const struct {
        const char *name;
        enum evhttp_cmd_type t;
    } M[] = {{"GET", EVHTTP_REQ_GET},        {"POST", EVHTTP_REQ_POST},
             {"HEAD", EVHTTP_REQ_HEAD},      {"PUT", EVHTTP_REQ_PUT},
             {"DELETE", EVHTTP_REQ_DELETE},  {"PATCH", EVHTTP_REQ_PATCH},
             {"OPTIONS", EVHTTP_REQ_OPTIONS}};
    for (size_t i = 0; i < sizeof(M) / sizeof(M[0]); i++)
        if (strcmp(m, M[i].name) == 0)
            return M[i].t;
    return 0;
}

#define THROTTLE_MAX_BODY (1 << 20) /* throttle rules are small JSON objects */

#define VERDICT(v, st, p, ...)                                                                     \
    do {                                                                                           \
        (v)->status = (st);                                                                        \
        snprintf((v)->msg, sizeof((v)->msg), __VA_ARGS__);                                         \
        snprintf((v)->path, sizeof((v)->path), "%s", (p));                                         \
    } while (0)

/* The gate's question, from the request head alone (before any body byte is read): route,
 * token, role, encoding and the role's body limit. on_request checks route and role again. */
static void gate_decide(void *arg, const struct gate_head *h, struct gate_verdict *v)
{
    struct srv *s = arg;
    bool known;
    v->log = true;
    if (thr_api_owns(h->path)) { /* handle_throttle checks the role per method */
        if (role_of_header(s->cfg, h->authorization) < 0)
            VERDICT(v, 401, "Authorization", "missing or unknown bearer token");
        else if (h->has_length && h->content_length > THROTTLE_MAX_BODY)
            VERDICT(v, 413, "$", "the body of %llu bytes is larger than %d bytes",
                    (unsigned long long)h->content_length, THROTTLE_MAX_BODY);
        else
            v->log = false;
        return;
    }
    const struct route *rt = find_route(h->path, method_of(h->method), &known);
    if (!rt) {
        if (known)
            VERDICT(v, 405, h->path, "method not allowed here");
        else
            VERDICT(v, 404, h->path, "no such endpoint");
        return;
    }
    int role = -1;
    if (rt->access != ACCESS_OPEN &&
        !(rt->access == ACCESS_PAGE && s->cfg->open_on_loopback && h->peer_loopback)) {
        role = role_of_header(s->cfg, h->authorization);
        if (role < 0) {
            VERDICT(v, 401, "Authorization", "missing or unknown bearer token");
            return;
        }
        if (role != (int)rt->role) {
            VERDICT(v, 403, "Authorization",
                    "a token of role %s may not use this endpoint (it needs role %s)",
                    ROLE_NAMES[role], ROLE_NAMES[rt->role]);
            return;
        }
    }
    /* Content-Encoding: body.c decodes gzip/deflate/zstd with its own bounds (415 for others) */
    uint64_t limit = rt->handler == H_INGEST ? lim_body_bytes(s->cfg, (int)rt->role) : 64 << 10;
    if (h->has_length && h->content_length > limit) {
        VERDICT(v, 413, "$",
                "the body of %llu bytes is larger than the %s limit of %llu bytes "
                "(limits.max_body_%s)",
                (unsigned long long)h->content_length,
                rt->handler == H_INGEST ? ROLE_NAMES[rt->role] : "request",
                (unsigned long long)limit,
                rt->handler == H_INGEST ? ROLE_NAMES[rt->role] : "bytes");
        return;
    }
    v->log = false;
}

/* ---- replies ------------------------------------------------------------------------------ */

static void reply(struct srv *s, struct evhttp_request *req, enum metrics_endpoint ep, int64_t t0,
                  int status, const char *content_type, struct evbuffer *body)
{
    struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
    evhttp_add_header(oh, "Content-Type", content_type);
    evhttp_add_header(oh, "Cache-Control", "no-store");
    struct gate_conn *gc = gate_conn_of(s->gate, req);
    evhttp_send_reply(req, status, http_reason(status), body);
    gate_answered(gc);
    metrics_request(s->metrics, ep, status, tm_mono_ns() - t0);
}

static void reply_error(struct srv *s, struct evhttp_request *req, enum metrics_endpoint ep,
                        int64_t t0, int status, const char *msg, const char *path)
{
    struct evbuffer *out = evbuffer_new();
    jw_error(out, msg, path);
    if (status == 401)
        evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate",
                          "Bearer realm=\"wanledger\"");
    reply(s, req, ep, t0, status, "application/json", out);
    evbuffer_free(out);
}

/* ---- handlers ----------------------------------------------------------------------------- */

/* On the event loop thread: the answer of a worker (see workers.h). */
static void on_ingested(struct wk_job *job, void *arg)
{
    struct srv *s = arg;
    struct evbuffer *out = evbuffer_new();
    if (out && job->reply)
        evbuffer_add(out, job->reply, strlen(job->reply));
    if (job->status == 503) /* the database did not commit: every client retries a 503 */
        evhttp_add_header(evhttp_request_get_output_headers(job->req), "Retry-After", "5");
    reply(s, job->req, job->ep, job->t0_ns, job->status ? job->status : 500, "application/json",
          out);
    if (out)
        evbuffer_free(out);
    wk_job_free(job);
}

static void handle_ingest(struct srv *s, struct evhttp_request *req, const struct route *rt,
                          int64_t t0)
{
    struct evkeyvalq *ih = evhttp_request_get_input_headers(req);
    enum body_coding coding;
    struct body_error be;
    if (body_coding_of(evhttp_find_header(ih, "Content-Encoding"), &coding, &be) < 0) {
        reply_error(s, req, rt->ep, t0, be.status, be.msg, "Content-Encoding");
        return;
    }
    bool msgpack = false;
    if (fl_content_type(rt->kind == INGEST_TRANSFERS, evhttp_find_header(ih, "Content-Type"),
                        &msgpack, be.msg, sizeof(be.msg)) < 0) {
        reply_error(s, req, rt->ep, t0, 415, be.msg, "Content-Type");
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    if (len > s->cfg->max_body_bytes) {
        reply_error(s, req, rt->ep, t0, 413, "body larger than max_body_bytes", "$");
        return;
    }
    struct wk_job *job = calloc(1, sizeof(*job));
    if (job)
        job->body = malloc(len + 1);
    if (!job || !job->body) {
        wk_job_free(job);
        reply_error(s, req, rt->ep, t0, 503, "out of memory", "$");
        return;
    }
    evbuffer_remove(in, job->body, len);
    job->body[len] = 0;
    job->len = len;
    job->coding = coding; /* decoded, within max_body_bytes, by the worker (body.h) */
    job->msgpack = msgpack;
    job->max_body = s->cfg->max_body_bytes; /* the received size's bound bounds the decoded one */
    job->req = req;
    job->kind = rt->kind;
    job->ep = rt->ep;
    job->path = rt->path;
    job->t0_ns = t0;
    snprintf(job->peer, sizeof(job->peer), "%s", peer_of(req));
    if (wk_submit(s->workers, job) < 0) {
        wk_job_free(job);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
        reply_error(s, req, rt->ep, t0, 503, "busy: too many requests waiting, retry", "$");
    }
    /* answered by on_ingested once a worker has committed (or refused) the batch */
}

/* On a reader thread (readers.h): the answer of a read request, from the reader's own
 * connection (db NULL: unreachable). */
static void run_read(PGconn *db, struct rd_job *j, void *arg)
{
    struct srv *s = arg;
    const char *query = j->query;
    struct evbuffer *out = j->out;
    const char *ct = "application/json";
    int status;
    if (j->handler == H_METRICS) {
        metrics_render(s->metrics, db, out); /* the gate's part is added on the loop */
        ct = "text/plain; version=0.0.4; charset=utf-8";
        status = 200;
    } else if (!db) {
        jw_error(out, "database unreachable", "");
        status = 503;
    } else {
        switch (j->handler) {
        case H_HEALTHZ: {
            PGresult *r = PQexec(db, "SELECT 1");
            status = PQresultStatus(r) == PGRES_TUPLES_OK ? 200 : 503;
            PQclear(r);
            struct jw w;
            jw_init(&w, out);
            jw_begin_object(&w);
            jw_kv_str(&w, "status", status == 200 ? "ok" : "database unreachable");
            jw_end(&w);
            evbuffer_add(out, "\n", 1);
            break;
        }
        case H_CELLS:
            status = api_cells(db, s->cfg, query, out);
            break;
        case H_TOP:
            status = api_top(db, s->cfg, query, out);
            break;
        case H_HEATMAP:
            status = hm_page_heatmap(db, s->cfg, query, out, &ct);
            break;
        case H_CELL:
            status = hm_page_cell(db, s->cfg, query, out, &ct);
            break;
        case H_DEPS:
            status = api_deps(db, s->cfg, query, out, &ct);
            break;
        case H_DEPS_PAGE:
            status = api_deps_page(db, s->cfg, query, out, &ct);
            break;
        case H_NAS:
            status = api_nas(db, s->cfg, query, out, &ct);
            break;
        case H_NAS_PAGE:
            status = api_nas_page(db, s->cfg, query, out, &ct);
            break;
        case H_UNREC:
            status = unrec_api(db, s->cfg, query, out);
            break;
        case H_FLOWS: { /* sampled flows: small batches (reconciler/flowin.c) */
            const char *text = j->body ? j->body : "";
            enum body_coding coding;
            struct body_error be;
            char *plain = NULL;
            size_t plain_len = 0;
            if (body_coding_of(j->coding, &coding, &be) < 0 ||
                (coding != BODY_IDENTITY &&
                 body_decode(coding, text, j->len, (size_t)s->cfg->max_body_role[SRV_ROLE_POLLER],
                             &plain, &plain_len, &be) < 0)) {
                jw_error(out, be.msg, "Content-Encoding");
                status = be.status;
                break;
            }
            status = flowin_post(db, s->cfg, plain ? plain : text, plain ? plain_len : j->len,
                                 tm_now_us(), out);
            free(plain);
            break;
        }
        case H_THROTTLE:
            status = thr_api_handle(db, j->role, j->agent_host, j->method, j->path, query,
                                    j->body ? j->body : "", j->len, out);
            break;
        case H_REJECTS:
            status = rj_page(db, query, out, &ct);
            break;
        default:
            status = 500;
        }
    }
    j->status = status;
    j->ct = ct;
}

/* On the event loop thread: a reader's answer sent. */
static void on_read(struct rd_job *j, void *arg)
{
    struct srv *s = arg;
    if (j->handler == H_METRICS) {
        gate_metrics(s->gate, j->out); /* the gate's state belongs to the loop */
        size_t queued, running;
        rd_depth(s->readers, &queued, &running);
        evbuffer_add_printf(
            j->out,
            "# HELP wanledger_ingest_bodies_pending Bodies received and not yet answered "
            "(waiting for an ingest worker, parsed and waiting for a grouped commit, or being "
            "written).\n"
            "# TYPE wanledger_ingest_bodies_pending gauge\n"
            "wanledger_ingest_bodies_pending %zu\n"
            "# HELP wanledger_reads_queued Read requests waiting for a reader.\n"
            "# TYPE wanledger_reads_queued gauge\n"
            "wanledger_reads_queued %zu\n"
            "# HELP wanledger_reads_running Read requests a reader is answering (in the "
            "database).\n"
            "# TYPE wanledger_reads_running gauge\n"
            "wanledger_reads_running %zu\n",
            wk_pending(s->workers), queued, running);
    }
    reply(s, j->req, (enum metrics_endpoint)j->ep, j->t0_ns, j->status, j->ct, j->out);
    rd_job_free(j);
}

static char *dup_or_null(const char *v)
{
    return v ? strdup(v) : NULL;
}

/* Copies what a reader needs out of req (the body too when with_body) and queues it. */
static void submit_read(struct srv *s, struct evhttp_request *req, enum handler h,
                        enum metrics_endpoint ep, int64_t t0, bool with_body, struct rd_job *j)
{
    bool ok = j != NULL;
    if (ok) {
        j->req = req;
        j->t0_ns = t0;
        j->handler = (int)h;
        j->ep = (int)ep;
        const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
        j->query = dup_or_null(q);
        ok = !q || j->query;
    }
    if (ok && with_body) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        j->len = evbuffer_get_length(in);
        j->body = malloc(j->len + 1);
        ok = j->body != NULL;
        if (ok) {
            evbuffer_remove(in, j->body, j->len);
            j->body[j->len] = 0;
        }
        const char *ce =
            evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Encoding");
        j->coding = dup_or_null(ce);
        ok = ok && (!ce || j->coding);
    }
    if (!ok) {
        rd_job_free(j);
        reply_error(s, req, ep, t0, 503, "out of memory", "$");
        return;
    }
    if (rd_submit(s->readers, j) < 0) {
        rd_job_free(j);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "1");
        reply_error(s, req, ep, t0, 503, "busy: too many requests waiting, retry", "$");
    }
    /* answered by on_read once a reader has the answer */
}

static void handle_get(struct srv *s, struct evhttp_request *req, const struct route *rt,
                       int64_t t0)
{
    submit_read(s, req, rt->handler, rt->ep, t0, rt->handler == H_FLOWS, rd_job_new());
}

/* /v1/throttles...: any known token; the module decides per role (throttle_api.h), on a
 * reader. */
static void handle_throttle(struct srv *s, struct evhttp_request *req, const char *path, int64_t t0)
{
    int role = request_role(s->cfg, req);
    if (role < 0) {
        reply_error(s, req, METRICS_EP_API, t0, 401, "missing or unknown bearer token",
                    "Authorization");
        return;
    }
    enum evhttp_cmd_type m = evhttp_request_get_command(req);
    const char *method = m == EVHTTP_REQ_GET      ? "GET"
                         : m == EVHTTP_REQ_POST   ? "POST"
                         : m == EVHTTP_REQ_DELETE ? "DELETE"
                                                  : "OTHER";
    struct rd_job *j = rd_job_new();
    if (j) {
        j->method = method;
        j->role = ROLE_NAMES[role];
        j->agent_host = role == SRV_ROLE_AGENT ? request_agent_host(s->cfg, req) : NULL;
        if (!(j->path = strdup(path))) {
            rd_job_free(j);
            j = NULL;
        }
    }
    submit_read(s, req, H_THROTTLE, METRICS_EP_API, t0, true, j);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct srv *s = arg;
    int64_t t0 = tm_mono_ns();
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    if (!path || !*path)
        path = "/";
    if (thr_api_owns(path)) {
        handle_throttle(s, req, path, t0);
        return;
    }
    bool path_known;
    const struct route *rt = find_route(path, evhttp_request_get_command(req), &path_known);
    if (!rt) {
        if (path_known)
            reply_error(s, req, METRICS_EP_OTHER, t0, 405, "method not allowed here", path);
        else
            reply_error(s, req, METRICS_EP_OTHER, t0, 404, "no such endpoint", path);
        return;
    }
    if (rt->access != ACCESS_OPEN) {
        bool open = rt->access == ACCESS_PAGE && s->cfg->open_on_loopback && peer_is_loopback(req);
        if (!open) {
            int role = request_role(s->cfg, req);
            if (role < 0) {
                log_info(peer_of(req), "%s: missing or unknown bearer token", path);
                reply_error(s, req, rt->ep, t0, 401, "missing or unknown bearer token",
                            "Authorization");
                return;
            }
            if (role != (int)rt->role) {
                char msg[120];
                snprintf(msg, sizeof(msg),
                         "a token of role %s may not use this endpoint (it needs role %s)",
                         ROLE_NAMES[role], ROLE_NAMES[rt->role]);
                log_info(peer_of(req), "%s: %s", path, msg);
                reply_error(s, req, rt->ep, t0, 403, msg, "Authorization");
                return;
            }
        }
    }
    if (rt->handler == H_INGEST)
        handle_ingest(s, req, rt, t0);
    else
        handle_get(s, req, rt, t0);
}

/* ---- life cycle --------------------------------------------------------------------------- */

struct srv *srv_new(struct event_base *base, const struct cfg *cfg, struct metrics *metrics,
                    char *err, size_t errlen)
{
    struct hostport hp; /* "127.0.0.1:7070", "[::1]:7070"; port 0 lets tests take a free one */
    char herr[300];
    if (!cfg->listen || hostport_parse(cfg->listen, strlen(cfg->listen), HOSTPORT_ALLOW_ZERO, &hp,
                                       herr, sizeof(herr)) < 0) {
        snprintf(err, errlen, "listen: expected HOST:PORT, got %s", cfg->listen ? herr : "nothing");
        return NULL;
    }
    /* tokens cross the network only inside TLS: plain HTTP is for loopback */
    bool loopback = strncmp(hp.host, "127.", 4) == 0 || strcmp(hp.host, "::1") == 0 ||
                    strcmp(hp.host, "localhost") == 0;
    if (!cfg->tls_cert && !loopback && !cfg->allow_plain_http) {
        snprintf(err, errlen,
                 "listen %s is not a loopback address: configure $.server.tls (cert_file, "
                 "key_file) or, inside a private network only, $.server.allow_plain_http",
                 cfg->listen);
        return NULL;
    }
    struct srv *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (cfg->tls_cert) {
        s->ssl = tls_server_ctx(cfg, err, errlen);
        if (!s->ssl) {
            free(s);
            return NULL;
        }
    }
    s->cfg = cfg;
    s->base = base;
    s->metrics = metrics;
    s->http = evhttp_new(base);
    if (!s->http) {
        snprintf(err, errlen, "evhttp_new failed");
        SSL_CTX_free(s->ssl);
        free(s);
        return NULL;
    }
    /* the gate refuses over-limit bodies from their Content-Length (JSON 413) before evhttp's
     * own bound, which stays as a backstop */
    uint64_t max_body = 64 << 10;
    for (int r = 0; r < SRV_ROLE_N; r++)
        if (lim_body_bytes(cfg, r) > max_body)
            max_body = lim_body_bytes(cfg, r);
    evhttp_set_max_body_size(s->http, (ev_ssize_t)max_body);
    evhttp_set_max_headers_size(s->http, LIM_HEADER_BYTES + 4);
    evhttp_set_timeout(s->http, 120); /* idle keep-alive; the gate bounds each request */
    struct gate_opts go = {.max_connections = lim_connections(cfg),
                           .header_timeout_s = lim_header_timeout(cfg),
                           .body_timeout_s = lim_body_timeout(cfg),
                           .max_header_bytes = LIM_HEADER_BYTES,
                           .ssl = s->ssl};
    s->gate = gate_new(base, s->http, &go, gate_decide, s);
    if (!s->gate) {
        snprintf(err, errlen, "cannot set up the connection gate");
        evhttp_free(s->http);
        SSL_CTX_free(s->ssl);
        free(s);
        return NULL;
    }
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH);
    s->workers = wk_start(base, cfg, metrics, on_ingested, s, err, errlen);
    s->readers =
        s->workers ? rd_start(base, cfg, RD_THREADS, run_read, on_read, s, err, errlen) : NULL;
    if (!s->readers) {
        wk_stop(s->workers);
        evhttp_free(s->http);
        gate_free(s->gate);
        SSL_CTX_free(s->ssl);
        free(s);
        return NULL;
    }
    evhttp_set_gencb(s->http, on_request, s);
    struct evhttp_bound_socket *bs =
        evhttp_bind_socket_with_handle(s->http, hp.host, (ev_uint16_t)hp.port);
    if (!bs) {
        snprintf(err, errlen, "cannot listen on %s", cfg->listen);
        wk_stop(s->workers);
        rd_stop(s->readers);
        evhttp_free(s->http);
        gate_free(s->gate);
        SSL_CTX_free(s->ssl);
        free(s);
        return NULL;
    }
    gate_listen(s->gate, bs);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    s->port = hp.port;
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0)
        s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return s;
}

void srv_free(struct srv *s)
{
    if (!s)
        return;
    wk_stop(s->workers); /* unanswered requests are dropped; evhttp_free closes them */
    rd_stop(s->readers);
    evhttp_free(s->http);
    gate_free(s->gate);
    SSL_CTX_free(s->ssl);
    free(s);
}

int srv_port(const struct srv *s)
{
    return s->port;
}
