/* Alertmanager API v2 delivery of gap_alerts (see webhook.h). */
#include "webhook.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>

#include <event2/http.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostport.h"
#include "httpc.h"
#include "jsonw.h"
#include "leader.h"
#include "log.h"
#include "readers.h"
#include "timeutil.h"

#define POLL_INTERVAL_MS 1000
#define POST_TIMEOUT_S   10
#define STR_(x)          #x
#define STR(x)           STR_(x)

/* What one target has received of one alert. */
struct sent {
    int64_t id;
    int64_t last_sent_us;
    bool resolved_sent;
    bool refused; /* the receiver refused it alone (400/422): not re-sent before the retry time */
    bool seen;    /* still listed by the last poll */
};

struct target {
    struct webhook *w;
    char *url, *host, *path;
    int port;
    bool tls; /* https: verified against $.delivery.ca_file (else the system CAs) and the host */
    struct evhttp_connection *conn;
    bool in_flight;
    int64_t next_attempt_us;
    int backoff_s;
    struct sent *sent;
    size_t n_sent, cap_sent;
    /* the alerts carried by the POST in flight */
    int64_t *fl_id;
    bool *fl_resolved;
    size_t n_fl;
    char *fl_body; /* its JSON, for the log when it is refused */
    bool split;    /* a batch was refused: send one alert per POST until none is due */
};

struct webhook {
    struct event_base *base;
    const struct cfg *cfg;
    struct metrics *metrics;
    struct event *timer;
    struct target *targets;
    size_t n_targets;
    const struct leader *leader; /* only the leader delivers (NULL: always) */
    SSL_CTX *ssl_ctx;            /* for https:// webhooks */
    uint64_t term;               /* leader_term when the sent state was started */
    struct rd_pool *db;          /* one thread: the polls and marks, in order, off the loop */
    bool polling;                /* a poll is in the database */
    uint64_t poll_term;          /* the term it was asked in */
    size_t db_pending;           /* database jobs asked for, not yet done */
};

static const char SQL_ALERTS[] =
    "SELECT id, kind, src_site, dst_site, state = 'resolved', coalesce(circuit, ''),"
    " coalesce(summary, ''),"
    " (extract(epoch FROM opened_at) * 1000000)::bigint,"
    " coalesce((extract(epoch FROM resolved_at) * 1000000)::bigint, 0),"
    " coalesce((extract(epoch FROM first_window) * 1000000)::bigint, 0),"
    " coalesce((extract(epoch FROM last_window) * 1000000)::bigint, 0),"
    " coalesce(peak_unattributed_bytes, -1), coalesce(peak_ratio, -1),"
    " coalesce((extract(epoch FROM last_sent_at) * 1000000)::bigint, 0)"
    " FROM gap_alerts WHERE state = 'open' OR NOT resolved_sent ORDER BY id LIMIT 1000";

/* ---- payload ------------------------------------------------------------------------------ */

static const char *alertname_of(const char *kind)
{
    if (strcmp(kind, "gap") == 0)
        return "WanledgerGap";
    if (strcmp(kind, "over") == 0)
        return "WanledgerOver";
    if (strcmp(kind, "saturation") == 0)
        return "WanledgerSaturation";
    return "Wanledger";
}

static const char *severity_of(const char *kind)
{
    return strcmp(kind, "over") == 0 ? "info" : "warning";
}

/* public_url, else reconciler_url, else http:// + listen; no trailing slash. */
static void base_url(const struct cfg *cfg, char *out, size_t cap)
{
    if (cfg->public_url)
        snprintf(out, cap, "%s", cfg->public_url);
    else if (cfg->reconciler_url)
        snprintf(out, cap, "%s", cfg->reconciler_url);
    else
        snprintf(out, cap, "http://%s", cfg->listen ? cfg->listen : "127.0.0.1:7070");
    size_t n = strlen(out);
    while (n && out[n - 1] == '/')
        out[--n] = 0;
}

void webhook_alert_json(struct evbuffer *out, const struct cfg *cfg, const struct webhook_alert *a)
{
    char t0[TM_RFC3339_LEN], t1[TM_RFC3339_LEN], fw[TM_RFC3339_LEN], lw[TM_RFC3339_LEN];
    char num[64], summary[512], base[512];
    tm_format_rfc3339(a->first_window_us, fw);
    tm_format_rfc3339(a->last_window_us, lw);
    struct jw w;
    jw_init(&w, out);
    jw_begin_object(&w);
    jw_key(&w, "labels");
    jw_begin_object(&w);
    jw_kv_str(&w, "alertname", alertname_of(a->kind));
    jw_kv_str(&w, "kind", a->kind);
    jw_kv_str(&w, "src_site", a->src_site);
    jw_kv_str(&w, "dst_site", a->dst_site);
    if (a->circuit && *a->circuit)
        jw_kv_str(&w, "circuit", a->circuit);
    jw_kv_str(&w, "severity", severity_of(a->kind));
    jw_end(&w);

    jw_key(&w, "annotations"); /* Alertmanager annotations are strings */
    jw_begin_object(&w);
    if (a->summary && *a->summary)
        snprintf(summary, sizeof(summary), "%s", a->summary);
    else
        snprintf(summary, sizeof(summary), "%s alert on %s -> %s since the window of %s", a->kind,
                 a->src_site, a->dst_site, fw);
    jw_kv_str(&w, "summary", summary);
    if (a->peak_unattributed_bytes >= 0) {
        snprintf(num, sizeof(num), "%lld", (long long)a->peak_unattributed_bytes);
        jw_kv_str(&w, "peak_unattributed_bytes", num);
    }
    if (a->peak_ratio >= 0) {
        snprintf(num, sizeof(num), "%.4f", a->peak_ratio);
        jw_kv_str(&w, "peak_ratio", num);
    }
    jw_kv_str(&w, "first_window", fw);
    jw_kv_str(&w, "last_window", lw);
    jw_end(&w);

    jw_kv_str(&w, "startsAt", tm_format_rfc3339(a->opened_at_us, t0));
    /* open: valid for 4 re-sends, so Alertmanager's resolve_timeout never ends it early */
    int64_t ends_us = a->resolved ? (a->resolved_at_us ? a->resolved_at_us : tm_now_us())
                                  : tm_now_us() + (int64_t)WEBHOOK_ENDS_RESENDS *
                                                      cfg->resend_seconds * TM_USEC_PER_SEC;
    jw_kv_str(&w, "endsAt", tm_format_rfc3339(ends_us, t1));
    base_url(cfg, base, sizeof(base));
    char *src = evhttp_uriencode(a->src_site, -1, 0);
    char *dst = evhttp_uriencode(a->dst_site, -1, 0);
    char *win = evhttp_uriencode(lw, -1, 0);
    char *url = NULL;
    if (src && dst && win &&
        asprintf(&url, "%s/heatmap/cell?src=%s&dst=%s&window=%s", base, src, dst, win) > 0)
        jw_kv_str(&w, "generatorURL", url);
    else
        jw_kv_str(&w, "generatorURL", base);
    free(url);
    free(src);
    free(dst);
    free(win);
    jw_end(&w);
}

/* ---- per-target bookkeeping --------------------------------------------------------------- */

static struct sent *sent_find(struct target *t, int64_t id, bool add)
{
    for (size_t i = 0; i < t->n_sent; i++)
        if (t->sent[i].id == id)
            return &t->sent[i];
    if (!add)
        return NULL;
    if (t->n_sent == t->cap_sent) {
        size_t cap = t->cap_sent ? 2 * t->cap_sent : 16;
        struct sent *p = realloc(t->sent, cap * sizeof(*p));
        if (!p)
            return NULL;
        t->sent = p;
        t->cap_sent = cap;
    }
    t->sent[t->n_sent] = (struct sent){.id = id};
    return &t->sent[t->n_sent++];
}

/* ---- the database, on a thread of its own ---------------------------------------------------
 * The poll's SELECT and the delivery marks run on one thread with its own connection, in the
 * order they were asked for, never on the event loop: a mark that meets an alert row held by a
 * window's transaction waits there, not in front of every agent report. */

enum { WH_POLL, WH_MARK_SENT, WH_MARK_RESOLVED };

static const char SQL_MARK_SENT[] =
    "UPDATE gap_alerts SET last_sent_at = now() WHERE id = ANY($1::bigint[])";
static const char SQL_MARK_RESOLVED[] =
    "UPDATE gap_alerts SET resolved_sent = true WHERE id = ANY($1::bigint[])";

static void free_result(void *r)
{
    PQclear(r);
}

/* On the database thread. */
static void db_run(PGconn *db, struct rd_job *j, void *arg)
{
    (void)arg;
    if (!db) {
        j->status = 503;
        evbuffer_add_printf(j->out, "the database is unreachable");
        return;
    }
    PGresult *r;
    if (j->handler == WH_POLL) {
        r = PQexec(db, SQL_ALERTS);
    } else {
        const char *p[1] = {j->body};
        r = PQexecParams(db, j->handler == WH_MARK_SENT ? SQL_MARK_SENT : SQL_MARK_RESOLVED, 1,
                         NULL, p, NULL, NULL, 0);
    }
    if (PQresultStatus(r) != (j->handler == WH_POLL ? PGRES_TUPLES_OK : PGRES_COMMAND_OK)) {
        j->status = 500;
        evbuffer_add_printf(j->out, "%s", PQresultErrorMessage(r));
        PQclear(r);
        return;
    }
    j->status = 200;
    if (j->handler == WH_POLL) {
        j->data = r;
        j->data_free = free_result;
    } else {
        PQclear(r);
    }
}

/* ids: a PostgreSQL array literal ({1,2}) of n alerts, taken over. */
static int db_submit(struct webhook *w, int kind, char *ids, size_t n)
{
    struct rd_job *j = ids || kind == WH_POLL ? rd_job_new() : NULL;
    if (j) {
        j->handler = kind;
        j->ep = (int)n; /* the alerts a record names, for /metrics if it is lost */
        j->body = ids;
        ids = NULL;
    }
    if (!j || rd_submit(w->db, j) < 0) {
        log_warn("webhooks", "cannot queue a database %s (%s)",
                 kind == WH_POLL ? "read of gap_alerts" : "record of a delivery",
                 j ? "queue full" : "out of memory");
        if (kind != WH_POLL)
            metrics_webhook_mark_lost(w->metrics, true, n);
        rd_job_free(j);
        free(ids);
        return -1;
    }
    w->db_pending++;
    metrics_webhook_db(w->metrics, 1);
    return 0;
}

/* A PostgreSQL array literal of n ids, NULL when out of memory. */
static char *id_array(const int64_t *id, size_t n)
{
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return NULL;
    evbuffer_add(b, "{", 1);
    for (size_t i = 0; i < n; i++)
        evbuffer_add_printf(b, "%s%lld", i ? "," : "", (long long)id[i]);
    evbuffer_add(b, "}", 1);
    char *s = jw_take(b, NULL);
    evbuffer_free(b);
    return s;
}

/* A resolution is delivered once every target has it. */
static bool resolved_everywhere(struct webhook *w, int64_t id)
{
    for (size_t k = 0; k < w->n_targets; k++) {
        struct sent *s = sent_find(&w->targets[k], id, false);
        if (!s || !s->resolved_sent)
            return false;
    }
    return true;
}

static void db_mark_sent(struct webhook *w, struct target *t)
{
    if (t->n_fl == 0)
        return;
    db_submit(w, WH_MARK_SENT, id_array(t->fl_id, t->n_fl), t->n_fl);
    int64_t *done = calloc(t->n_fl, sizeof(*done));
    size_t n = 0;
    for (size_t i = 0; done && i < t->n_fl; i++)
        if (t->fl_resolved[i] && resolved_everywhere(w, t->fl_id[i]))
            done[n++] = t->fl_id[i];
    if (n)
        db_submit(w, WH_MARK_RESOLVED, id_array(done, n), n);
    free(done);
}

/* A 400/422: the receiver will never take this batch as it is. A batch is split into one POST
 * per alert; a lone alert is logged and set aside (refused). */
static void on_refused(struct target *t, struct evhttp_request *req, int code, int64_t now)
{
    struct evbuffer *in = req ? evhttp_request_get_input_buffer(req) : NULL;
    size_t n = in ? evbuffer_get_length(in) : 0;
    char answer[512] = "";
    if (n)
        evbuffer_copyout(in, answer, n < sizeof(answer) - 1 ? n : sizeof(answer) - 1);
    for (char *p = answer; *p; p++)
        if ((unsigned char)*p < 0x20)
            *p = ' ';
    if (t->n_fl > 1) {
        log_warn(t->url, "refused a batch of %zu alerts (HTTP %d: %s); sending them one by one",
                 t->n_fl, code, answer);
        t->split = true;
        t->next_attempt_us = 0;
        event_active(t->w->timer, 0, 0);
        return;
    }
    log_error(t->url, "refused alert %lld (HTTP %d: %s); %s: %s", (long long)t->fl_id[0], code,
              answer,
              t->fl_resolved[0] ? "its resolution is given up"
                                : "not offered again for " STR(WEBHOOK_REFUSED_RETRY_S) " s",
              t->fl_body ? t->fl_body : "");
    metrics_webhook_refused(t->w->metrics, 1);
    struct sent *s = sent_find(t, t->fl_id[0], true);
    if (s) {
        s->last_sent_us = now;
        s->refused = true;
        s->seen = true;
        if (t->fl_resolved[0])
            s->resolved_sent = true;
    }
    db_mark_sent(t->w, t);
    event_active(t->w->timer, 0, 0); /* the next alert of a split batch */
}

static void on_posted(struct evhttp_request *req, void *arg)
{
    struct target *t = arg;
    struct webhook *w = t->w;
    int code = req ? evhttp_request_get_response_code(req) : 0;
    int64_t now = tm_now_us();
    t->in_flight = false;
    bool ok = code >= 200 && code < 300;
    metrics_webhook(w->metrics, ok, t->n_fl);
    if (code == 400 || code == 422) {
        on_refused(t, req, code, now);
    } else if (ok) {
        for (size_t i = 0; i < t->n_fl; i++) {
            struct sent *s = sent_find(t, t->fl_id[i], true);
            if (!s)
                continue;
            s->last_sent_us = now;
            s->seen = true;
            s->refused = false;
            if (t->fl_resolved[i])
                s->resolved_sent = true;
        }
        t->backoff_s = 0;
        t->next_attempt_us = 0;
        log_debug(t->url, "%zu alert(s) delivered", t->n_fl);
        db_mark_sent(w, t);
        if (t->split)
            event_active(w->timer, 0, 0); /* the next alert at once */
    } else {
        t->backoff_s = t->backoff_s ? t->backoff_s * 2 : WEBHOOK_BACKOFF_MIN_S;
        if (t->backoff_s > WEBHOOK_BACKOFF_MAX_S)
            t->backoff_s = WEBHOOK_BACKOFF_MAX_S;
        t->next_attempt_us = now + (int64_t)t->backoff_s * TM_USEC_PER_SEC;
        log_warn(t->url, "delivery of %zu alert(s) failed (%s %d); retrying in %d s", t->n_fl,
                 code ? "HTTP" : "no answer", code, t->backoff_s);
    }
    t->n_fl = 0;
}

/* A connection over TLS that checks the certificate chain and the host name (or IP address). */
static struct evhttp_connection *tls_connection(struct target *t)
{
    SSL *ssl = SSL_new(t->w->ssl_ctx);
    if (!ssl)
        return NULL;
    if (httpc_tls_set_peer(ssl, t->host) != 0) {
        SSL_free(ssl);
        return NULL;
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        t->w->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
    if (!bev) {
        SSL_free(ssl);
        return NULL;
    }
    struct evhttp_connection *c = evhttp_connection_base_bufferevent_new(
        t->w->base, NULL, bev, t->host, (ev_uint16_t)t->port);
    if (!c)
        bufferevent_free(bev);
    return c;
}

static int post(struct target *t, struct evbuffer *body)
{
    if (t->tls && t->conn) {
        /* a TLS bufferevent cannot be reconnected: a new connection for every POST (the previous
         * one has completed: posts to a target never overlap) */
        evhttp_connection_free(t->conn);
        t->conn = NULL;
    }
    if (!t->conn) {
        t->conn = t->tls
                      ? tls_connection(t)
                      : evhttp_connection_base_new(t->w->base, NULL, t->host, (ev_uint16_t)t->port);
        if (!t->conn)
            return -1;
        evhttp_connection_set_timeout(t->conn, POST_TIMEOUT_S);
        evhttp_connection_set_retries(t->conn, 0);
    }
    struct evhttp_request *req = evhttp_request_new(on_posted, t);
    if (!req)
        return -1;
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    char hostport[300];
    hostport_format(t->host, (unsigned)t->port, hostport, sizeof(hostport)); /* [v6]:port */
    evhttp_add_header(h, "Host", hostport);
    evhttp_add_header(h, "Content-Type", "application/json");
    evhttp_add_header(h, "User-Agent", "wanledger");
    evbuffer_add_buffer(evhttp_request_get_output_buffer(req), body);
    if (evhttp_make_request(t->conn, req, EVHTTP_REQ_POST, t->path) < 0)
        return -1; /* libevent freed req */
    t->in_flight = true;
    return 0;
}

/* ---- polling ------------------------------------------------------------------------------ */

static bool ready(const struct target *t, int64_t now)
{
    return !t->in_flight && now >= t->next_attempt_us;
}

void webhook_set_leader(struct webhook *w, const struct leader *ld)
{
    if (w)
        w->leader = ld;
}

/* Only the leader delivers. A new term starts from what the table says was sent (last_sent_at),
 * not from an empty memory: the previous leader's resend schedule carries over. */
static bool lead(struct webhook *w)
{
    if (!leader_is(w->leader))
        return false;
    uint64_t term = leader_term(w->leader);
    if (term != w->term) {
        w->term = term;
        for (size_t i = 0; i < w->n_targets; i++)
            w->targets[i].n_sent = 0;
    }
    return true;
}

/* On the loop: what the poll read, made into POSTs. */
static void deliver(struct webhook *w, PGresult *r)
{
    int64_t now = tm_now_us();
    int n = PQntuples(r);
    int64_t resend_us = (int64_t)w->cfg->resend_seconds * TM_USEC_PER_SEC;
    /* a resolution every target has, still listed: its resolved_sent update failed; redo it */
    int64_t *redo = calloc((size_t)n + 1, sizeof(*redo));
    size_t n_redo = 0;
    for (int row = 0; row < n && redo; row++) {
        int64_t id = strtoll(PQgetvalue(r, row, 0), NULL, 10);
        if (PQgetvalue(r, row, 4)[0] == 't' && resolved_everywhere(w, id))
            redo[n_redo++] = id;
    }
    if (n_redo)
        db_submit(w, WH_MARK_RESOLVED, id_array(redo, n_redo), n_redo);
    free(redo);
    for (size_t ti = 0; ti < w->n_targets; ti++) {
        struct target *t = &w->targets[ti];
        for (size_t i = 0; i < t->n_sent; i++)
            t->sent[i].seen = false;
        struct evbuffer *body = evbuffer_new();
        size_t n_due = 0;
        int64_t *ids = calloc((size_t)n + 1, sizeof(*ids));
        bool *res = calloc((size_t)n + 1, sizeof(*res));
        for (int row = 0; row < n && ids && res; row++) {
            struct webhook_alert a = {
                .id = strtoll(PQgetvalue(r, row, 0), NULL, 10),
                .kind = PQgetvalue(r, row, 1),
                .src_site = PQgetvalue(r, row, 2),
                .dst_site = PQgetvalue(r, row, 3),
                .resolved = PQgetvalue(r, row, 4)[0] == 't',
                .circuit = PQgetvalue(r, row, 5),
                .summary = PQgetvalue(r, row, 6),
                .opened_at_us = strtoll(PQgetvalue(r, row, 7), NULL, 10),
                .resolved_at_us = strtoll(PQgetvalue(r, row, 8), NULL, 10),
                .first_window_us = strtoll(PQgetvalue(r, row, 9), NULL, 10),
                .last_window_us = strtoll(PQgetvalue(r, row, 10), NULL, 10),
                .peak_unattributed_bytes = strtoll(PQgetvalue(r, row, 11), NULL, 10),
                .peak_ratio = strtod(PQgetvalue(r, row, 12), NULL),
            };
            struct sent *s = sent_find(t, a.id, false);
            int64_t db_sent_us = strtoll(PQgetvalue(r, row, 13), NULL, 10);
            if (!s && !a.resolved && db_sent_us > 0 && (s = sent_find(t, a.id, true)) != NULL)
                s->last_sent_us = db_sent_us; /* sent by an earlier leader (or run) */
            if (s)
                s->seen = true;
            int64_t every =
                s && s->refused ? (int64_t)WEBHOOK_REFUSED_RETRY_S * TM_USEC_PER_SEC : resend_us;
            bool due = a.resolved ? !(s && s->resolved_sent) : !s || now - s->last_sent_us >= every;
            if (!due || !ready(t, now) || (t->split && n_due == 1))
                continue;
            if (n_due)
                evbuffer_add(body, ",", 1);
            else
                evbuffer_add(body, "[", 1);
            webhook_alert_json(body, w->cfg, &a);
            ids[n_due] = a.id;
            res[n_due] = a.resolved;
            n_due++;
        }
        /* forget alerts the table no longer lists (resolutions delivered everywhere) */
        size_t keep = 0;
        for (size_t i = 0; i < t->n_sent; i++)
            if (t->sent[i].seen)
                t->sent[keep++] = t->sent[i];
        t->n_sent = keep;
        if (!n_due)
            t->split = false; /* a split batch is through */
        if (n_due) {
            evbuffer_add(body, "]", 1);
            free(t->fl_body);
            size_t blen = evbuffer_get_length(body);
            t->fl_body = malloc(blen + 1); /* a copy: body itself is sent */
            if (t->fl_body) {
                evbuffer_copyout(body, t->fl_body, blen);
                t->fl_body[blen] = 0;
            }
            free(t->fl_id);
            free(t->fl_resolved);
            t->fl_id = ids;
            t->fl_resolved = res;
            t->n_fl = n_due;
            ids = NULL;
            res = NULL;
            if (post(t, body) < 0) {
                t->in_flight = true; /* on_posted resets it and schedules the retry */
                on_posted(NULL, t);
            }
        }
        free(ids);
        free(res);
        evbuffer_free(body);
    }
}

/* On the loop, for every database job done. */
static void db_done(struct rd_job *j, void *arg)
{
    struct webhook *w = arg;
    w->db_pending--;
    metrics_webhook_db(w->metrics, -1);
    evbuffer_add(j->out, "", 1); /* the database's message, NUL-terminated */
    const char *why = (const char *)evbuffer_pullup(j->out, -1);
    if (j->handler == WH_POLL) {
        w->polling = false;
        if (j->status != 200)
            log_warn("webhooks", "reading gap_alerts: %s", why ? why : "");
        else if (lead(w) && w->term == w->poll_term) /* still the leader of the same term */
            deliver(w, j->data);
    } else if (j->status != 200) {
        metrics_webhook_mark_lost(w->metrics, false, (uint64_t)j->ep);
        log_warn("webhooks",
                 "recording deliveries of alerts %s: %s (a later leader may resend them)", j->body,
                 why ? why : "");
    }
    rd_job_free(j);
}

void webhook_poll(struct webhook *w)
{
    if (!w || w->n_targets == 0 || !lead(w) || w->polling)
        return;
    int64_t now = tm_now_us();
    bool any = false;
    for (size_t i = 0; i < w->n_targets; i++)
        any |= ready(&w->targets[i], now);
    if (!any || db_submit(w, WH_POLL, NULL, 0) < 0)
        return;
    w->polling = true;
    w->poll_term = w->term;
}

size_t webhook_busy(const struct webhook *w)
{
    size_t n = 0;
    int64_t now = tm_now_us();
    for (size_t i = 0; w && i < w->n_targets; i++)
        n += w->targets[i].in_flight || w->targets[i].next_attempt_us > now;
    return n + (w ? w->db_pending : 0);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    webhook_poll(arg);
}

/* ---- life cycle --------------------------------------------------------------------------- */

/* The TLS client context of https:// webhooks: the HTTP client's (common/httpc_tls.c) with
 * $.delivery's CA file and client certificate. */
static SSL_CTX *client_ctx(const struct cfg *cfg, char *err, size_t errlen)
{
    struct httpc_tls tls = {.ca_file = cfg->delivery.ca_file,
                            .cert_file = cfg->delivery.client_cert,
                            .key_file = cfg->delivery.client_key};
    char e[400];
    SSL_CTX *ctx = httpc_tls_ctx_new(&tls, e, sizeof e);
    if (!ctx)
        snprintf(err, errlen, "webhooks: %s", e);
    return ctx;
}

static int target_init(struct target *t, struct webhook *w, const char *url, char *err,
                       size_t errlen)
{
    t->w = w;
    t->url = strdup(url);
    struct evhttp_uri *u = evhttp_uri_parse(url);
    const char *scheme = u ? evhttp_uri_get_scheme(u) : NULL;
    const char *host = u ? evhttp_uri_get_host(u) : NULL;
    if (!u || !scheme || (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) || !host ||
        !*host) {
        snprintf(err, errlen, "webhook %s: expected http(s)://HOST[:PORT]/PATH", url);
        if (u)
            evhttp_uri_free(u);
        return -1;
    }
    t->host = strdup(host);
    t->tls = strcmp(scheme, "https") == 0;
    t->port = evhttp_uri_get_port(u) > 0 ? evhttp_uri_get_port(u) : t->tls ? 443 : 80;
    const char *path = evhttp_uri_get_path(u);
    const char *query = evhttp_uri_get_query(u);
    if (asprintf(&t->path, "%s%s%s", path && *path ? path : "/", query ? "?" : "",
                 query ? query : "") < 0)
        t->path = NULL;
    evhttp_uri_free(u);
    if (!t->url || !t->host || !t->path) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

struct webhook *webhook_new(struct event_base *base, const struct cfg *cfg, struct metrics *m,
                            char *err, size_t errlen)
{
    struct webhook *w = calloc(1, sizeof(*w));
    if (!w) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    w->base = base;
    w->cfg = cfg;
    w->metrics = m;
    w->targets = calloc(cfg->n_webhooks + 1, sizeof(*w->targets));
    if (!w->targets) {
        free(w);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < cfg->n_webhooks; i++)
        if (strncmp(cfg->webhooks[i], "https://", 8) == 0 && !w->ssl_ctx &&
            !(w->ssl_ctx = client_ctx(cfg, err, errlen))) {
            webhook_free(w);
            return NULL;
        }
    for (size_t i = 0; i < cfg->n_webhooks; i++) {
        w->n_targets++;
        if (target_init(&w->targets[i], w, cfg->webhooks[i], err, errlen) < 0) {
            webhook_free(w);
            return NULL;
        }
    }
    if (w->n_targets && !(w->db = rd_start(base, cfg, 1, db_run, db_done, w, err, errlen))) {
        webhook_free(w);
        return NULL;
    }
    if (w->n_targets) {
        w->timer = event_new(base, -1, EV_PERSIST, on_timer, w);
        struct timeval tv = {POLL_INTERVAL_MS / 1000, (POLL_INTERVAL_MS % 1000) * 1000};
        if (!w->timer || event_add(w->timer, &tv) < 0) {
            snprintf(err, errlen, "cannot start the webhook timer");
            webhook_free(w);
            return NULL;
        }
    }
    return w;
}

void webhook_free(struct webhook *w)
{
    if (!w)
        return;
    rd_stop(w->db); /* a query still running is cancelled; marks not yet made are dropped */
    if (w->timer)
        event_free(w->timer);
    for (size_t i = 0; i < w->n_targets; i++) {
        struct target *t = &w->targets[i];
        if (t->conn)
            evhttp_connection_free(t->conn);
        free(t->url);
        free(t->host);
        free(t->path);
        free(t->sent);
        free(t->fl_id);
        free(t->fl_resolved);
        free(t->fl_body);
    }
    free(w->targets);
    if (w->ssl_ctx)
        SSL_CTX_free(w->ssl_ctx);
    free(w);
}
