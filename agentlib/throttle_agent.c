/* The agent's throttle loop (see throttle_agent.h). */
#include "throttle_agent.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <event2/event.h>

#include "agent_opts.h"
#include "httpc.h"
#include "procmeta.h"
#include "log.h"
#include "throttle_probe.h"
#include "throttle_rules.h"
#include "throttle_set.h"
#include "timeutil.h"

#define FETCH_TIMEOUT_MS 2000

/* The reconciler is asked on a thread of its own: a reconciler that hangs (stopped, overloaded,
 * a black-holed route) must not hold the agent's event loop, whose window timer drains the
 * counters: a GET waiting out its timeout there made the next drain late, and a late drain's
 * counts are reported as lost (agentlib/README.md "Throttle rules"). The loop asks for a fetch
 * and hands over report bodies; the thread parses the answer and wakes the loop through an
 * eventfd; rules are applied, and the kernel maps touched, on the loop only. */
struct fetcher {
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop, want_fetch, busy; /* busy: a GET or POST in flight */
    char *report_body;           /* the newest report to POST, owned; replaces an unsent one */
    struct throttle_rules *work, *ready; /* the thread parses into work, then swaps with ready */
    bool have_ready;
    int efd;                      /* written when ready is filled */
    _Atomic int64_t last_ok_mono; /* last answer from the reconciler (monotonic ns) */
    atomic_ullong fetches, fetch_errors, reports, report_errors;
};

struct throttle_agent {
    struct throttle_agent_opts o;
    char rules_url[1024], report_url[1024];
    struct throttle_probe *tp;
    struct throttle_set *ts;
    struct event *tick, *events, *answer;
    struct throttle_rules rules; /* the last fetched */
    struct fetcher f;
    int64_t last_fetch_mono; /* when the loop last asked for a fetch */
    bool failed_open;
    uint64_t fail_opens, expired;
    uint64_t clamp_errors;           /* runs of the receive-window iterator that failed */
    unsigned clamped;                /* TCP sockets holding a receive-window clamp */
    size_t peer_rules, peer_sockets; /* sender side: rules and connections limited here */
};

/* Thread: POSTs body (the rules' counters). */
static void post_report(struct throttle_agent *ta, char *body)
{
    struct httpc_response resp = {0};
    char err[256];
    if (httpc_post(ta->report_url, ta->o.token, body, strlen(body), FETCH_TIMEOUT_MS, &resp, err,
                   sizeof(err)) != 0 ||
        resp.status / 100 != 2) {
        ta->f.report_errors++;
        log_debug("throttle", "report: %s", resp.status ? "refused" : err);
    } else {
        ta->f.reports++;
    }
    httpc_response_free(&resp);
    free(body);
}

/* Thread: one GET; a parsed answer goes to f.ready and wakes the loop. */
static void get_rules(struct throttle_agent *ta)
{
    struct fetcher *f = &ta->f;
    struct httpc_response resp = {0};
    char err[512];
    f->fetches++;
    if (httpc_get(ta->rules_url, ta->o.token, FETCH_TIMEOUT_MS, &resp, err, sizeof(err)) != 0) {
        f->fetch_errors++;
        log_debug("throttle", "GET %s: %s", ta->rules_url, err);
        httpc_response_free(&resp);
        return;
    }
    if (resp.status != 200 || !resp.body) {
        f->fetch_errors++;
        log_warn("throttle", "GET %s: HTTP %d", ta->rules_url, resp.status);
        httpc_response_free(&resp);
        return;
    }
    /* an answer, even one we cannot use, is contact: rules stay as they are then */
    atomic_store(&f->last_ok_mono, tm_mono_ns());
    int rc = throttle_rules_parse(resp.body, tm_now_us(), f->work, err, sizeof(err));
    httpc_response_free(&resp);
    if (rc != 0) {
        f->fetch_errors++;
        log_warn("throttle", "GET %s: %s; keeping the rules applied", ta->rules_url, err);
        return;
    }
    pthread_mutex_lock(&f->mu);
    struct throttle_rules *t = f->ready;
    f->ready = f->work;
    f->work = t;
    f->have_ready = true;
    pthread_mutex_unlock(&f->mu);
    uint64_t one = 1;
    if (write(f->efd, &one, sizeof one) != (ssize_t)sizeof one)
        log_warn("throttle", "cannot wake the agent's loop: %s", strerror(errno));
}

static void *fetcher_main(void *arg)
{
    struct throttle_agent *ta = arg;
    struct fetcher *f = &ta->f;
    pthread_mutex_lock(&f->mu);
    for (;;) {
        while (!f->stop && !f->want_fetch && !f->report_body)
            pthread_cond_wait(&f->cv, &f->mu);
        if (f->stop)
            break;
        f->busy = true;
        if (f->want_fetch) {
            f->want_fetch = false;
            pthread_mutex_unlock(&f->mu);
            get_rules(ta);
        } else {
            char *body = f->report_body;
            f->report_body = NULL;
            pthread_mutex_unlock(&f->mu);
            post_report(ta, body);
        }
        pthread_mutex_lock(&f->mu);
        f->busy = false;
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

/* Loop: a fetch, unless one is asked for or in flight already. */
static void ask_fetch(struct throttle_agent *ta)
{
    pthread_mutex_lock(&ta->f.mu);
    if (!ta->f.want_fetch && !ta->f.busy) {
        ta->f.want_fetch = true;
        pthread_cond_signal(&ta->f.cv);
    }
    pthread_mutex_unlock(&ta->f.mu);
}

/* Loop: the counters of the rules applied, to be POSTed by the thread. */
static void report(struct throttle_agent *ta)
{
    struct throttle_rule_stat st[THROTTLE_MAX_CLASSES];
    size_t n = throttle_set_stats(ta->ts, st, THROTTLE_MAX_CLASSES);
    if (n == 0)
        return;
    char *body = throttle_rules_report(ta->o.host, ta->o.agent_id, st, n);
    if (!body) {
        ta->f.report_errors++;
        return;
    }
    pthread_mutex_lock(&ta->f.mu);
    free(ta->f.report_body); /* not sent yet: the newer counters include its */
    ta->f.report_body = body;
    pthread_cond_signal(&ta->f.cv);
    pthread_mutex_unlock(&ta->f.mu);
}

/* Loop: the rules the thread fetched, applied. */
static void apply_fetched(struct throttle_agent *ta)
{
    pthread_mutex_lock(&ta->f.mu);
    bool have = ta->f.have_ready;
    if (have)
        memcpy(&ta->rules, ta->f.ready, sizeof ta->rules);
    ta->f.have_ready = false;
    pthread_mutex_unlock(&ta->f.mu);
    if (!have)
        return;
    size_t had = throttle_set_count(ta->ts), had_peers = ta->peer_rules;
    if (ta->rules.kill_switch) {
        ta->rules.n = 0;
        ta->rules.peers.n = 0;
        ta->rules.peers.n_sock = 0;
    }
    size_t n = throttle_set_apply(ta->ts, ta->rules.rule, ta->rules.n, ta->rules.allow,
                                  ta->rules.n_allow, tm_now_us());
    /* the sender side: this host's connections towards throttled sockets elsewhere */
    ta->peer_rules = throttle_set_peers(ta->ts, &ta->rules.peers, tm_now_us());
    ta->peer_sockets = throttle_set_peer_sockets(ta->ts);
    if (throttle_set_count(ta->ts) != had || ta->peer_rules != had_peers || ta->failed_open)
        log_info("throttle", "%zu rules applied, %zu as the sender (%zu connections)%s", n,
                 ta->peer_rules, ta->peer_sockets,
                 ta->rules.kill_switch ? " (kill switch on)" : "");
    ta->failed_open = false;
    report(ta);
}

static void on_answer(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    uint64_t v;
    if (read(fd, &v, sizeof v) < 0 && errno != EAGAIN)
        log_warn("throttle", "eventfd: %s", strerror(errno));
    apply_fetched(arg);
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct throttle_agent *ta = arg;
    (void)fd;
    (void)what;
    int64_t now = tm_mono_ns();
    ta->expired += throttle_set_expire(ta->ts, tm_now_us());
    if (now - ta->last_fetch_mono >= (int64_t)ta->o.interval_s * 1000000000LL) {
        ta->last_fetch_mono = now;
        ask_fetch(ta);
    }
    if (!ta->failed_open && throttle_set_count(ta->ts) > 0 &&
        now - atomic_load(&ta->f.last_ok_mono) >= (int64_t)ta->o.fail_open_s * 1000000000LL) {
        log_warn("throttle", "no answer from the reconciler for %d s: removing every rule",
                 ta->o.fail_open_s);
        throttle_set_clear(ta->ts);
        ta->failed_open = true;
        ta->fail_opens++;
    }
    /* downloads: receive-window clamps follow the rules (and are lifted after them) */
    if (throttle_set_count(ta->ts) > 0 || ta->clamped > 0) {
        unsigned c = 0;
        if (throttle_probe_clamp(ta->tp, &c) != 0)
            ta->clamp_errors++;
        ta->clamped = c;
    }
}

static void on_events(evutil_socket_t fd, short what, void *arg)
{
    struct throttle_agent *ta = arg;
    (void)fd;
    (void)what;
    throttle_set_on_events(ta->ts);
}

struct throttle_agent *throttle_agent_start(struct event_base *base,
                                            const struct throttle_agent_opts *o, char *err,
                                            size_t errlen)
{
    struct throttle_agent *ta = calloc(1, sizeof(*ta));
    if (!ta) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ta->o = *o;
    ta->f.efd = -1;
    pthread_mutex_init(&ta->f.mu, NULL);
    pthread_cond_init(&ta->f.cv, NULL);
    size_t bl = strlen(o->base_url);
    while (bl && o->base_url[bl - 1] == '/')
        bl--;
    const char *sfx = "/v1/attributions";
    if (bl >= strlen(sfx) && strncmp(o->base_url + bl - strlen(sfx), sfx, strlen(sfx)) == 0)
        bl -= strlen(sfx);
    snprintf(ta->rules_url, sizeof(ta->rules_url), "%.*s/v1/throttles?host=%s%s%s", (int)bl,
             o->base_url, o->host, o->site ? "&site=" : "", o->site ? o->site : "");
    snprintf(ta->report_url, sizeof(ta->report_url), "%.*s/v1/throttles/report", (int)bl,
             o->base_url);
    ta->tp = throttle_probe_open(o->cgroup_dir, err, errlen);
    if (!ta->tp)
        goto fail;
    if (o->netns_path && throttle_probe_set_netns(ta->tp, o->netns_path) != 0) {
        snprintf(err, errlen, "netns %s: %s", o->netns_path, strerror(errno));
        goto fail;
    }
    ta->ts =
        throttle_set_new(ta->tp, o->workflow_env, o->n_workflow_env, o->netns_ino, err, errlen);
    if (!ta->ts)
        goto fail;
    ta->f.work = malloc(sizeof *ta->f.work);
    ta->f.ready = malloc(sizeof *ta->f.ready);
    ta->f.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (!ta->f.work || !ta->f.ready || ta->f.efd < 0) {
        snprintf(err, errlen, "out of memory or file descriptors");
        goto fail;
    }
    ta->tick = event_new(base, -1, EV_PERSIST, on_tick, ta);
    ta->events =
        event_new(base, throttle_probe_events_fd(ta->tp), EV_READ | EV_PERSIST, on_events, ta);
    ta->answer = event_new(base, ta->f.efd, EV_READ | EV_PERSIST, on_answer, ta);
    struct timeval one = {.tv_sec = 1};
    if (!ta->tick || !ta->events || !ta->answer || event_add(ta->tick, &one) != 0 ||
        event_add(ta->events, NULL) != 0 || event_add(ta->answer, NULL) != 0) {
        snprintf(err, errlen, "cannot add its events to the loop");
        goto fail;
    }
    atomic_store(&ta->f.last_ok_mono, tm_mono_ns());
    ta->last_fetch_mono = tm_mono_ns();
    ta->f.want_fetch = true; /* the first rules: applied when the answer comes */
    if (pthread_create(&ta->f.thread, NULL, fetcher_main, ta) != 0) {
        snprintf(err, errlen, "cannot start its thread");
        goto fail;
    }
    ta->f.started = true;
    return ta;
fail:
    throttle_agent_stop(ta);
    return NULL;
}

void throttle_agent_stop(struct throttle_agent *ta)
{
    if (!ta)
        return;
    if (ta->f.started) { /* waits out a request in flight (FETCH_TIMEOUT_MS at most) */
        pthread_mutex_lock(&ta->f.mu);
        ta->f.stop = true;
        pthread_cond_signal(&ta->f.cv);
        pthread_mutex_unlock(&ta->f.mu);
        pthread_join(ta->f.thread, NULL);
    }
    if (ta->tick)
        event_free(ta->tick);
    if (ta->events)
        event_free(ta->events);
    if (ta->answer)
        event_free(ta->answer);
    if (ta->f.efd >= 0)
        close(ta->f.efd);
    free(ta->f.report_body);
    free(ta->f.work);
    free(ta->f.ready);
    pthread_mutex_destroy(&ta->f.mu);
    pthread_cond_destroy(&ta->f.cv);
    throttle_set_free(ta->ts);
    unsigned c = 0;
    /* rules gone: lift the receive-window clamps before detaching */
    if (ta->tp && ta->clamped > 0 && throttle_probe_clamp(ta->tp, &c) != 0)
        log_warn("throttle", "cannot lift the receive-window clamps of %u sockets", ta->clamped);
    throttle_probe_close(ta->tp);
    free(ta);
}

char *throttle_agent_metrics(const struct throttle_agent *ta)
{
    struct throttle_rule_stat st[THROTTLE_MAX_CLASSES];
    size_t n = throttle_set_stats(ta->ts, st, THROTTLE_MAX_CLASSES);
    size_t cap = 2048 + n * 1024, len = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
#define PUT(...) len += (size_t)snprintf(out + len, cap - len, __VA_ARGS__)
    PUT("# HELP wanledger_agent_throttle_rules Throttle rules applied on this host.\n"
        "# TYPE wanledger_agent_throttle_rules gauge\n"
        "wanledger_agent_throttle_rules %zu\n",
        n);
    PUT("# TYPE wanledger_agent_throttle_fetches_total counter\n"
        "wanledger_agent_throttle_fetches_total %llu\n"
        "# TYPE wanledger_agent_throttle_fetch_errors_total counter\n"
        "wanledger_agent_throttle_fetch_errors_total %llu\n"
        "# TYPE wanledger_agent_throttle_report_errors_total counter\n"
        "wanledger_agent_throttle_report_errors_total %llu\n"
        "# HELP wanledger_agent_throttle_fail_opens_total Times every rule was removed because "
        "the reconciler did not answer.\n"
        "# TYPE wanledger_agent_throttle_fail_opens_total counter\n"
        "wanledger_agent_throttle_fail_opens_total %llu\n"
        "# TYPE wanledger_agent_throttle_expired_total counter\n"
        "wanledger_agent_throttle_expired_total %llu\n"
        "# HELP wanledger_agent_throttle_clamped_sockets TCP sockets whose receive window the "
        "throttle clamps (downloads).\n"
        "# TYPE wanledger_agent_throttle_clamped_sockets gauge\n"
        "wanledger_agent_throttle_clamped_sockets %u\n"
        "# TYPE wanledger_agent_throttle_clamp_errors_total counter\n"
        "wanledger_agent_throttle_clamp_errors_total %llu\n"
        "# HELP wanledger_agent_throttle_peer_rules Rules this host limits as the sender (its "
        "connections towards throttled sockets on other hosts).\n"
        "# TYPE wanledger_agent_throttle_peer_rules gauge\n"
        "wanledger_agent_throttle_peer_rules %zu\n"
        "# TYPE wanledger_agent_throttle_peer_sockets gauge\n"
        "wanledger_agent_throttle_peer_sockets %zu\n",
        (unsigned long long)ta->f.fetches, (unsigned long long)ta->f.fetch_errors,
        (unsigned long long)ta->f.report_errors, (unsigned long long)ta->fail_opens,
        (unsigned long long)ta->expired, ta->clamped, (unsigned long long)ta->clamp_errors,
        ta->peer_rules, ta->peer_sockets);
    PUT("# HELP wanledger_agent_throttle_bytes_total Bytes of throttled sockets by what the rule "
        "did (dry-run rules: what enforcement would have done).\n"
        "# TYPE wanledger_agent_throttle_bytes_total counter\n");
    for (size_t i = 0; i < n; i++) {
        const char *mode = st[i].mode == THROTTLE_DRY_RUN ? "dry_run" : "enforce";
        long long id = (long long)st[i].id;
        PUT("wanledger_agent_throttle_bytes_total{rule=\"%lld\",mode=\"%s\",action=\"passed\"} "
            "%llu\n",
            id, mode, (unsigned long long)st[i].c.pass_bytes);
        PUT("wanledger_agent_throttle_bytes_total{rule=\"%lld\",mode=\"%s\",action=\"delayed\"} "
            "%llu\n",
            id, mode, (unsigned long long)st[i].c.delay_bytes);
        PUT("wanledger_agent_throttle_bytes_total{rule=\"%lld\",mode=\"%s\",action=\"dropped\"} "
            "%llu\n",
            id, mode, (unsigned long long)st[i].c.drop_bytes);
    }
#undef PUT
    return out;
}

struct throttle_agent *throttle_agent_from_opts(struct event_base *base, const struct agent_opts *o,
                                                const char *agent_id, uint32_t netns_ino)
{
    char root[PATH_MAX], err[512];
    if (o->throttle_off)
        return NULL;
    if (!o->reconciler) {
        log_info("throttle", "off: no --reconciler to fetch rules from");
        return NULL;
    }
    if (!o->cgroup && procmeta_cgroup2_root(root, sizeof(root)) != 0) {
        log_warn("throttle", "off: this host has no cgroup v2 mount to attach to");
        return NULL;
    }
    struct throttle_agent_opts to = {
        .base_url = o->reconciler,
        .token = o->token,
        .host = o->host,
        .site = o->site,
        .agent_id = agent_id,
        .cgroup_dir = o->cgroup ? o->cgroup : root,
        .netns_ino = netns_ino,
        .netns_path = o->netns,
        .workflow_env = (const char *const *)o->workflow_env,
        .n_workflow_env = o->n_workflow_env,
        .interval_s = o->throttle_interval,
        .fail_open_s = o->throttle_fail_open,
    };
    struct throttle_agent *ta = throttle_agent_start(base, &to, err, sizeof(err));
    if (!ta)
        log_warn("throttle", "off: %s", err);
    else
        log_info("throttle", "on: rules from %s every %d s, removed after %d s without an answer",
                 ta->rules_url, to.interval_s, to.fail_open_s);
    return ta;
}
