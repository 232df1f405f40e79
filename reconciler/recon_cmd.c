/* `wanledger reconcile [--once]`, `wanledger top` and `wanledger alerts`: the programs around the
 * service parts (server, loop, webhooks) and the read-side reports. */
#include "recon_cmd.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "chstore.h"
#include "chstore_flush.h"
#include "db.h"
#include "log.h"
#include "leader.h"
#include "loop.h"
#include "metrics.h"
#include "recon_db.h"
#include "server.h"
#include "store.h"
#include "timeutil.h"
#include "top.h"
#include "webhook.h"

#define ONCE_WEBHOOK_WAIT_S 15 /* --once waits this long at most for webhook deliveries */

/* ---- reconcile ---------------------------------------------------------------------------- */

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    log_info("reconcile", "signal %d: shutting down", (int)sig);
    event_base_loopexit(arg, NULL);
}

static void on_once_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct webhook *w = arg;
    webhook_poll(w);
}

/* Delivers due alerts and waits (bounded) for the answers. */
static void once_webhooks(const struct cfg *cfg, struct metrics *m)
{
    if (cfg->n_webhooks == 0)
        return;
    char err[512];
    (void)evthread_use_pthreads(); /* the webhooks' database thread wakes the loop */
    struct event_base *base = event_base_new();
    struct webhook *w = base ? webhook_new(base, cfg, m, err, sizeof(err)) : NULL;
    if (!w) {
        log_error("reconcile", "webhooks: %s", base ? err : "no event base");
        if (base)
            event_base_free(base);
        return;
    }
    webhook_poll(w);
    int64_t deadline = tm_mono_ns() + (int64_t)ONCE_WEBHOOK_WAIT_S * 1000000000LL;
    struct event *tick = event_new(base, -1, EV_PERSIST, on_once_tick, w);
    struct timeval tv = {0, 200000};
    event_add(tick, &tv);
    while (webhook_busy(w) && tm_mono_ns() < deadline)
        event_base_loop(base, EVLOOP_ONCE);
    if (webhook_busy(w))
        log_warn("reconcile", "webhook deliveries still pending after %d s; the next run resends",
                 ONCE_WEBHOOK_WAIT_S);
    event_free(tick);
    webhook_free(w);
    event_base_free(base);
}

static int prepare_db(const struct cfg *cfg, struct store *st)
{
    char err[1024];
    int applied = 0;
    PGconn *db = store_db(st);
    if (!db || db_migrate(db, &applied, err, sizeof(err)) < 0 ||
        db_sync_config(db, cfg, err, sizeof(err)) < 0) {
        log_error("reconcile", "database: %s", db ? err : "unreachable");
        return -1;
    }
    if (applied)
        log_info("reconcile", "%d migration(s) applied", applied);
    return 0;
}

static int run_once(const struct cfg *cfg, struct store *st, struct metrics *m)
{
    char err[1024];
    struct loop_pass_stats ps;
    if (cfg->clickhouse.enabled && (chstore_ensure_schema(&cfg->clickhouse, err, sizeof(err)) < 0 ||
                                    chflush_drain(store_db(st), cfg, err, sizeof(err)) < 0))
        log_error("reconcile", "--once: %s", err); /* windows still in the outbox wait */
    if (loop_pass(store_db(st), cfg, m, tm_now_us(), &ps, err, sizeof(err)) < 0) {
        log_error("reconcile", "%s", err);
        return 1;
    }
    log_info("reconcile", "--once: %zu window(s) reconciled, %zu failed", ps.reconciled, ps.failed);
    /* the ended hours' owner rows into their hourly rollup, as the loop does (a day at most) */
    int hours = 0;
    if (recon_db_fold_hours(store_db(st), cfg, tm_now_us(), 24, &hours, NULL, err, sizeof(err)))
        log_error("reconcile", "--once: folding owner hours: %s", err);
    else if (hours)
        log_info("reconcile", "--once: folded %d hour(s) of owner rows", hours);
    once_webhooks(cfg, m);
    return ps.failed ? 1 : 0;
}

static int serve(const struct cfg *cfg, struct metrics *m)
{
    char err[1024];
    int rc = 1;
    struct srv *srv = NULL;
    struct webhook *wh = NULL;
    struct loop *loop = NULL;
    struct leader *leader = NULL;
    struct chflush *chf = NULL;
    struct event *sigterm = NULL, *sigint = NULL;
    /* the ingest workers wake the event loop from their threads */
    if (evthread_use_pthreads() < 0) {
        log_error("reconcile", "libevent without thread support");
        return 1;
    }
    struct event_base *base = event_base_new();
    if (!base) {
        log_error("reconcile", "cannot create the event base");
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    /* before anything listens: a SIGTERM from then on is a clean stop, not the default action */
    sigterm = evsignal_new(base, SIGTERM, on_signal, base);
    sigint = evsignal_new(base, SIGINT, on_signal, base);
    if (!sigterm || !sigint || event_add(sigterm, NULL) < 0 || event_add(sigint, NULL) < 0) {
        log_error("reconcile", "cannot install signal handlers");
        goto cleanup;
    }
    srv = srv_new(base, cfg, m, err, sizeof(err));
    if (!srv) {
        log_error("reconcile", "%s", err);
        goto cleanup;
    }
    wh = webhook_new(base, cfg, m, err, sizeof(err));
    if (!wh) {
        log_error("reconcile", "%s", err);
        goto cleanup;
    }
    leader = leader_start(cfg, m, err, sizeof(err));
    if (!leader) {
        log_error("reconcile", "%s", err);
        goto cleanup;
    }
    webhook_set_leader(wh, leader);
    loop = loop_start(cfg, m, leader, err, sizeof(err));
    if (!loop) {
        log_error("reconcile", "%s", err);
        goto cleanup;
    }
    if (cfg->clickhouse.enabled && !(chf = chflush_start(cfg, err, sizeof(err)))) {
        log_error("reconcile", "%s", err);
        goto cleanup;
    }
    log_info(
        "reconcile", "listening on port %d; window %d s, grace %d s, tick %d s, %zu webhook(s)",
        srv_port(srv), cfg->window_seconds, cfg->grace_seconds, cfg->tick_seconds, cfg->n_webhooks);
    event_base_dispatch(base);
    rc = 0;
cleanup:
    chflush_stop(chf);
    loop_stop(loop);
    leader_stop(leader);
    if (sigterm)
        event_free(sigterm);
    if (sigint)
        event_free(sigint);
    webhook_free(wh);
    srv_free(srv);
    event_base_free(base);
    return rc;
}

int recon_cmd_reconcile(const struct cfg *cfg, int argc, char **argv)
{
    static const struct option opts[] = {
        {"once", no_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool once = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            once = true;
            break;
        case 'h':
            printf(
                "usage: wanledger reconcile [--once]\n"
                "  serves the ingest API, pages and /metrics on `listen` and reconciles every\n"
                "  tick_seconds; --once reconciles every due window, delivers alerts and exits\n");
            return 0;
        default:
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "wanledger reconcile: unexpected argument %s\n", argv[optind]);
        return 2;
    }
    char err[1024];
    struct store *st = store_open(cfg, err, sizeof(err));
    if (!st) {
        log_error("reconcile", "%s", err);
        return 1;
    }
    struct metrics *m = metrics_new();
    int rc = 1;
    if (m && prepare_db(cfg, st) == 0) {
        if (once) {
            rc = run_once(cfg, st, m);
        } else { /* every part of the service opens the connections it needs */
            store_close(st);
            st = NULL;
            rc = serve(cfg, m);
        }
    }
    metrics_free(m);
    store_close(st);
    return rc;
}

/* ---- top ---------------------------------------------------------------------------------- */

int recon_cmd_top(const struct cfg *cfg, int argc, char **argv)
{
    static const struct option opts[] = {
        {"src", required_argument, NULL, 's'},   {"dst", required_argument, NULL, 'd'},
        {"from", required_argument, NULL, 'f'},  {"to", required_argument, NULL, 't'},
        {"limit", required_argument, NULL, 'n'}, {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
    const char *src = NULL, *dst = NULL, *from_s = NULL, *to_s = NULL;
    long limit = 20;
    bool json = false;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            src = optarg;
            break;
        case 'd':
            dst = optarg;
            break;
        case 'f':
            from_s = optarg;
            break;
        case 't':
            to_s = optarg;
            break;
        case 'n':
            limit = strtol(optarg, NULL, 10);
            break;
        case 'j':
            json = true;
            break;
        case 'h':
            printf("usage: wanledger top --src SITE --dst SITE [--from T] [--to T] [--limit N]"
                   " [--json]\n  T: RFC 3339, epoch seconds, or a duration ago (90m, 2h, 7d);"
                   " default the last hour\n");
            return 0;
        default:
            return 2;
        }
    }
    if (!src || cfg_site_index(cfg, src) < 0 || !dst || cfg_site_index(cfg, dst) < 0) {
        fprintf(stderr, "wanledger top: --src and --dst must name configured sites\n");
        return 2;
    }
    if (limit <= 0) {
        fprintf(stderr, "wanledger top: --limit must be a positive number\n");
        return 2;
    }
    int64_t now = tm_now_us(), to = now, from;
    if (to_s && api_parse_time(to_s, now, &to) < 0) {
        fprintf(stderr, "wanledger top: --to %s: expected RFC 3339, epoch seconds or a duration\n",
                to_s);
        return 2;
    }
    from = to - (int64_t)API_DEFAULT_SPAN_S * TM_USEC_PER_SEC;
    if (from_s && api_parse_time(from_s, now, &from) < 0) {
        fprintf(stderr,
                "wanledger top: --from %s: expected RFC 3339, epoch seconds or a duration\n",
                from_s);
        return 2;
    }
    if (from > to) {
        fprintf(stderr, "wanledger top: --from is after --to\n");
        return 2;
    }
    char err[1024];
    PGconn *db = db_connect(cfg, err, sizeof(err));
    if (!db) {
        log_error("top", "%s", err);
        return 1;
    }
    struct top_result r;
    int rc = 0;
    if (top_query(db, src, dst, from, to, cfg->window_seconds, (size_t)limit, &r, err,
                  sizeof(err)) < 0) {
        log_error("top", "%s", err);
        rc = 1;
    } else if (json) {
        struct evbuffer *out = evbuffer_new();
        top_json(out, &r);
        fwrite(evbuffer_pullup(out, -1), 1, evbuffer_get_length(out), stdout);
        evbuffer_free(out);
    } else {
        top_print(stdout, &r);
    }
    top_result_free(&r);
    PQfinish(db);
    return rc;
}

/* ---- alerts ------------------------------------------------------------------------------- */

static const char SQL_LIST_ALERTS[] =
    "SELECT id, kind, src_site || '->' || dst_site, state,"
    " to_char(opened_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'),"
    " coalesce(to_char(resolved_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '-'),"
    " coalesce(to_char(first_window AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '-'),"
    " coalesce(to_char(last_window AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '-'),"
    " coalesce(peak_unattributed_bytes::text, '-'),"
    " coalesce(round(peak_ratio::numeric, 3)::text, '-'), coalesce(nullif(circuit, ''), '-'),"
    " coalesce(summary, '')"
    " FROM gap_alerts WHERE (NOT $1::bool OR state = 'open')"
    " ORDER BY (state = 'open') DESC, opened_at DESC, id DESC LIMIT $2::int";

int recon_cmd_alerts(const struct cfg *cfg, int argc, char **argv)
{
    static const struct option opts[] = {{"open", no_argument, NULL, 'o'},
                                         {"limit", required_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool only_open = false;
    long limit = 50;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            only_open = true;
            break;
        case 'n':
            limit = strtol(optarg, NULL, 10);
            break;
        case 'h':
            printf("usage: wanledger alerts [--open] [--limit N]\n"
                   "  gap, over and saturation alerts, open ones first, newest first\n");
            return 0;
        default:
            return 2;
        }
    }
    if (limit <= 0) {
        fprintf(stderr, "wanledger alerts: --limit must be a positive number\n");
        return 2;
    }
    char err[1024], lim[24];
    PGconn *db = db_connect(cfg, err, sizeof(err));
    if (!db) {
        log_error("alerts", "%s", err);
        return 1;
    }
    snprintf(lim, sizeof(lim), "%ld", limit);
    const char *params[2] = {only_open ? "true" : "false", lim};
    PGresult *r = PQexecParams(db, SQL_LIST_ALERTS, 2, NULL, params, NULL, NULL, 0);
    int rc = 0;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        log_error("alerts", "%s", PQresultErrorMessage(r));
        rc = 1;
    } else {
        printf("%-6s %-10s %-16s %-8s %-20s %-20s %-20s %-20s %16s %7s %-12s %s\n", "ID", "KIND",
               "PAIR", "STATE", "OPENED", "RESOLVED", "FIRST_WINDOW", "LAST_WINDOW",
               "PEAK_GAP_BYTES", "RATIO", "CIRCUIT", "SUMMARY");
        for (int i = 0; i < PQntuples(r); i++)
            printf("%-6s %-10s %-16s %-8s %-20s %-20s %-20s %-20s %16s %7s %-12s %s\n",
                   PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
                   PQgetvalue(r, i, 3), PQgetvalue(r, i, 4), PQgetvalue(r, i, 5),
                   PQgetvalue(r, i, 6), PQgetvalue(r, i, 7), PQgetvalue(r, i, 8),
                   PQgetvalue(r, i, 9), PQgetvalue(r, i, 10), PQgetvalue(r, i, 11));
        if (PQntuples(r) == 0)
            printf("(no %salerts)\n", only_open ? "open " : "");
    }
    PQclear(r);
    PQfinish(db);
    return rc;
}
