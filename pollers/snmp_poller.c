/* SNMP poller: per device, resolve configured interface names to ifIndex (ifName, then ifDescr),
 * then every interval GET only the needed IF-MIB columns for those indexes, several interfaces per
 * PDU, a few PDUs in flight, each PDU carrying sysUpTime so every sample pairs its counters with
 * the uptime and arrival time of the same response.
 *
 * Why libevent rather than net-snmp's select loop: the gNMI listener, the batch timer and signal
 * handling already live on a libevent loop; each net-snmp session contributes one socket event and
 * one timer (from snmp_sess_select_info2), which is all its retry logic needs. */
#include "snmp_poller.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <net-snmp/net-snmp-config.h>
#include <net-snmp/net-snmp-includes.h>
#include <net-snmp/library/large_fd_set.h>

#include "log.h"
#include "snmp_clock.h"
#include "snmp_ifcols.h"
#include "snmp_session.h"
#include "snmp_wrap.h"
#include "timeutil.h"

static const oid sys_uptime_oid[] = {1, 3, 6, 1, 2, 1, 1, 3, 0};

const double snmp_duration_buckets[SNMP_N_DURATION_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1,
                                                               0.25,  0.5,  1,     2.5,  10};

enum phase { PH_IDLE, PH_PROBE, PH_RESOLVE, PH_POLL };

struct snmp_dev;
struct req {
    struct snmp_dev *d;
    unsigned gen;
    int reqid;       /* net-snmp request id: a reused slot ignores its old request's answer */
    size_t from, to; /* active[] range of a GET */
    int64_t send_us; /* wall clock when first sent: the agent read it no earlier */
};

struct snmp_dev {
    struct snmp_poller *p;
    const struct cfg_device *cd;
    void *sess;
    struct event *rd_ev, *to_ev, *tick_ev;
    struct snmp_if *ifs;
    size_t n_ifs;
    size_t *active; /* indexes into ifs[] of resolved interfaces */
    size_t n_active;
    enum phase phase;
    unsigned gen; /* bumped whenever a cycle is abandoned: late responses are ignored */
    bool need_resolve;
    bool engine_known; /* SNMPv3: the agent's engine ID has been discovered */
    bool hc;           /* 64-bit columns available */
    int max_vb;
    int reresolves; /* within one cycle */
    /* resolve walk */
    bool walk_descr;
    oid cursor[MAX_OID_LEN];
    size_t cursor_len;
    /* poll */
    size_t next, inflight, done;
    struct req *reqs; /* one per possible chunk */
    size_t n_reqs;
    struct req walk_req;
    bool rebooted;
    int64_t cycle_start_ns; /* monotonic, for the poll-duration log line */
    int64_t last_uptime_cs;
    struct snmp_clock clock; /* device time of responses from sysUpTime */
    bool need_reopen;        /* a transport error: a new session before the next cycle */
    struct snmp_dev_stats st;
    /* state for logging once per change */
    int up; /* -1 unknown, 0 down, 1 up */
    unsigned fails;
    char last_err[256];
    bool finished_once;
};

struct snmp_poller {
    struct event_base *base;
    const struct cfg *cfg;
    struct poll_sink *sink;
    struct snmp_poller_opts o;
    struct snmp_dev *devs;
    size_t n_devs;
    size_t n_done, n_failed;
};

static void dev_tick(evutil_socket_t fd, short what, void *arg);
static void start_resolve(struct snmp_dev *d);
static void start_poll(struct snmp_dev *d);

/* SNMPv1 has no Counter64 and answers noSuchName for a whole PDU when one object is missing:
 * v1 devices start in 32-bit mode and are not asked for ifCounterDiscontinuityTime. */
static int n_cols(const struct snmp_dev *d)
{
    if (d->hc)
        return N_COLS;
    return d->cd->snmp.version == 1 ? C_DISC : C_DISC + 1;
}

static const char *dname(const struct snmp_dev *d)
{
    return d->cd->name;
}

static void cycle_fail(struct snmp_dev *d, enum snmp_fail_reason why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool probe_learnt(struct snmp_dev *d);

/* Re-arms the net-snmp retry timer from the session's earliest pending timeout. A cycle in
 * progress with nothing pending means net-snmp dropped our request without calling back (it does
 * so for an SNMPv3 report of a wrong password): that is a failure too. */
static void arm_timeout(struct snmp_dev *d)
{
    int numfds = 0, block = 1;
    struct timeval tv = {0, 0};
    netsnmp_large_fd_set fds;
    netsnmp_large_fd_set_init(&fds, FD_SETSIZE);
    snmp_sess_select_info2(d->sess, &numfds, &fds, &tv, &block);
    netsnmp_large_fd_set_cleanup(&fds);
    if (!block) {
        evtimer_add(d->to_ev, &tv);
        return;
    }
    evtimer_del(d->to_ev);
    if (d->phase == PH_PROBE && probe_learnt(d))
        return;
    if (d->phase != PH_IDLE) {
        netsnmp_session *s = snmp_sess_session(d->sess);
        int e = s ? s->s_snmp_errno : 0;
        if (d->cd->snmp.version == 3)
            cycle_fail(d, SNMP_FAIL_AUTH,
                       "request rejected: %s (wrong SNMPv3 user, password or protocol?)",
                       e ? snmp_api_errstring(e) : "no answer");
        else
            cycle_fail(d, SNMP_FAIL_TRANSPORT, "request dropped: %s",
                       e ? snmp_api_errstring(e) : "no answer");
    }
}

static void on_readable(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct snmp_dev *d = arg;
    netsnmp_large_fd_set fds;
    netsnmp_large_fd_set_init(&fds, fd + 1);
    NETSNMP_LARGE_FD_SET(fd, &fds);
    snmp_sess_read2(d->sess, &fds);
    netsnmp_large_fd_set_cleanup(&fds);
    netsnmp_transport *t = snmp_sess_transport(d->sess);
    if (!t || t->sock != fd) {
        /* net-snmp closed a stream transport (the agent went away): stop watching the old fd,
         * fail the cycle in progress, reopen the session before the next one */
        event_del(d->rd_ev);
        d->need_reopen = true;
        if (d->phase != PH_IDLE)
            cycle_fail(d, SNMP_FAIL_TRANSPORT, "connection closed by the agent");
        return;
    }
    arm_timeout(d);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct snmp_dev *d = arg;
    snmp_sess_timeout(d->sess);
    arm_timeout(d);
}

static void schedule(struct snmp_dev *d, int64_t delay_ms)
{
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    evtimer_add(d->tick_ev, &tv);
}

static void cycle_end(struct snmp_dev *d, bool ok)
{
    struct snmp_poller *p = d->p;
    d->phase = PH_IDLE;
    d->gen++;
    if (p->o.once) {
        if (!d->finished_once) {
            d->finished_once = true;
            p->n_done++;
            if (!ok)
                p->n_failed++;
            if (p->n_done == p->n_devs && p->o.done)
                p->o.done(p->o.done_arg);
        }
        return;
    }
    int64_t ivl = (int64_t)d->cd->snmp.interval_seconds * 1000;
    if (ivl <= 0)
        ivl = 30000;
    int64_t delay;
    if (ok) {
        /* +-5% jitter keeps devices from falling into step */
        int64_t j = ivl / 20;
        delay = ivl + (j ? (int64_t)(random() % (2 * j + 1)) - j : 0);
    } else {
        unsigned k = d->fails > 5 ? 5 : d->fails;
        delay = ivl << (k ? k - 1 : 0);
        int64_t cap = ivl > 300000 ? ivl : 300000;
        if (delay > cap)
            delay = cap;
    }
    schedule(d, delay);
}

/* The poll failed: log once per state change (or when the reason changes), back off. */
static void cycle_fail(struct snmp_dev *d, enum snmp_fail_reason why, const char *fmt, ...)
{
    d->st.failures[why]++;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    d->fails++;
    if (d->up != 0 || strcmp(msg, d->last_err) != 0)
        log_error(dname(d), "SNMP device %s (%s) poll failed: %s%s", dname(d), d->cd->snmp.address,
                  msg, d->p->o.once ? "" : "; backing off");
    snprintf(d->last_err, sizeof(d->last_err), "%s", msg);
    d->up = 0;
    cycle_end(d, false);
}

static void cycle_ok(struct snmp_dev *d)
{
    if (d->up == 0)
        log_info(dname(d), "SNMP device %s reachable again after %u failed poll(s)", dname(d),
                 d->fails);
    d->up = 1;
    d->fails = 0;
    d->last_err[0] = '\0';
    double secs = (double)(tm_mono_ns() - d->cycle_start_ns) / 1e9;
    log_debug(dname(d), "polled %zu interface(s) in %.1f ms (%d varbinds per GET)", d->n_active,
              secs * 1e3, d->max_vb);
    d->st.polls_ok++;
    d->st.last_success_us = tm_now_us();
    d->st.duration_sum_s += secs;
    for (size_t b = 0; b < SNMP_N_DURATION_BUCKETS; b++)
        if (secs <= snmp_duration_buckets[b])
            d->st.duration_le[b]++;
    cycle_end(d, true);
}

static void report_error(struct snmp_dev *d, netsnmp_pdu *resp)
{
    if (resp->command == SNMP_MSG_REPORT) {
        cycle_fail(d, SNMP_FAIL_AUTH, "agent reported: %s",
                   snmp_api_errstring(snmpv3_get_report_type(resp)));
        return;
    }
    char o[128] = "?";
    netsnmp_variable_list *v = resp->variables;
    for (long i = 1; v && i < resp->errindex; i++)
        v = v->next_variable;
    if (v)
        snprint_objid(o, sizeof(o), v->name, v->name_length);
    cycle_fail(d, SNMP_FAIL_AGENT_ERROR, "agent answered %s (at %s)", snmp_errstring(resp->errstat),
               o);
}

/* A callback without a response: timeout, SNMPv3 security failure (wrong user, password or
 * protocol), send failure. RESEND is only a notice that net-snmp retried. */
static void op_fail(struct snmp_dev *d, int op, netsnmp_session *s, netsnmp_pdu *resp)
{
    int e =
        resp && resp->command == SNMP_MSG_REPORT ? snmpv3_get_report_type(resp) : s->s_snmp_errno;
    const char *why = e ? snmp_api_errstring(e) : "rejected";
    if (op == NETSNMP_CALLBACK_OP_TIMED_OUT || op == NETSNMP_CALLBACK_OP_SEND_FAILED ||
        op == NETSNMP_CALLBACK_OP_DISCONNECT)
        d->need_reopen = true; /* a restarted agent (unix: stream) needs a new connection */
    if (op == NETSNMP_CALLBACK_OP_TIMED_OUT)
        cycle_fail(d, SNMP_FAIL_TIMEOUT, "no response after %d tries of %d ms",
                   d->cd->snmp.retries + 1, d->cd->snmp.timeout_ms);
    else if (op == NETSNMP_CALLBACK_OP_SEC_ERROR)
        cycle_fail(d, SNMP_FAIL_AUTH,
                   "SNMPv3 security error for user \"%s\": %s (wrong SNMPv3 user, password or "
                   "protocol?)",
                   d->cd->snmp.user ? d->cd->snmp.user : "", why);
    else if (op == NETSNMP_CALLBACK_OP_SEND_FAILED || op == NETSNMP_CALLBACK_OP_DISCONNECT)
        cycle_fail(d, SNMP_FAIL_TRANSPORT, "send failed: %s", why);
}

static bool send_pdu(struct snmp_dev *d, netsnmp_pdu *pdu, struct req *r, netsnmp_callback cb)
{
    r->send_us = tm_now_us();
    int reqid = snmp_sess_async_send(d->sess, pdu, cb, r);
    if (!reqid) {
        int liberr = 0, snmperr = 0;
        char *errstr = NULL;
        snmp_sess_error(d->sess, &liberr, &snmperr, &errstr);
        snmp_free_pdu(pdu);
        d->need_reopen = true;
        cycle_fail(d, SNMP_FAIL_TRANSPORT, "cannot send: %s", errstr ? errstr : "unknown error");
        free(errstr);
        return false;
    }
    r->reqid = reqid;
    arm_timeout(d);
    return true;
}

/* ---- resolution: walk ifName (then ifDescr) until every configured name is found ---- */

static int walk_cb(int op, netsnmp_session *s, int reqid, netsnmp_pdu *resp, void *magic);

static void send_walk(struct snmp_dev *d)
{
    netsnmp_pdu *pdu;
    if (d->cd->snmp.version == 1) {
        pdu = snmp_pdu_create(SNMP_MSG_GETNEXT);
    } else {
        pdu = snmp_pdu_create(SNMP_MSG_GETBULK);
        pdu->non_repeaters = 0;
        pdu->max_repetitions = 50;
    }
    snmp_add_null_var(pdu, d->cursor, d->cursor_len);
    d->walk_req = (struct req){.d = d, .gen = d->gen};
    send_pdu(d, pdu, &d->walk_req, walk_cb);
}

static void walk_column(struct snmp_dev *d, bool descr)
{
    const struct snmp_colspec *c = snmp_name_col(descr);
    d->walk_descr = descr;
    memcpy(d->cursor, c->base, c->len * sizeof(oid));
    d->cursor_len = c->len;
    send_walk(d);
}

static void start_resolve(struct snmp_dev *d)
{
    d->phase = PH_RESOLVE;
    for (size_t i = 0; i < d->n_ifs; i++) {
        if (d->ifs[i].ifindex)
            d->ifs[i].prev_ifindex = d->ifs[i].ifindex;
        d->ifs[i].ifindex = 0;
        d->ifs[i].by_descr = false;
    }
    walk_column(d, false);
}

static void resolve_done(struct snmp_dev *d)
{
    d->n_active = 0;
    for (size_t i = 0; i < d->n_ifs; i++) {
        struct snmp_if *f = &d->ifs[i];
        if (f->ifindex > 0) {
            d->active[d->n_active++] = i;
            f->warned_missing = false;
            if (f->prev_ifindex && f->prev_ifindex != f->ifindex)
                log_info(dname(d),
                         "%s moved from ifIndex %ld to %ld: the interval across the move is "
                         "reported invalid",
                         f->name, f->prev_ifindex, f->ifindex);
            log_debug(dname(d), "%s is ifIndex %ld (by %s)", f->name, f->ifindex,
                      f->by_descr ? "ifDescr" : "ifName");
        } else if (!f->warned_missing) {
            log_warn(dname(d), "interface %s not found in ifName or ifDescr of %s", f->name,
                     dname(d));
            f->warned_missing = true;
        }
    }
    d->need_resolve = false;
    if (d->n_active == 0) {
        cycle_fail(d, SNMP_FAIL_NO_INTERFACE,
                   "none of its %zu configured interface(s) found in ifName or ifDescr", d->n_ifs);
        return;
    }
    start_poll(d);
}

static int walk_cb(int op, netsnmp_session *s, int reqid, netsnmp_pdu *resp, void *magic)
{
    struct req *r = magic;
    struct snmp_dev *d = r->d;
    if (r->reqid != reqid || r->gen != d->gen || d->phase != PH_RESOLVE)
        return 1;
    if (op != NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE) {
        op_fail(d, op, s, resp);
        return 1;
    }
    if (resp->command == SNMP_MSG_REPORT ||
        (resp->errstat != SNMP_ERR_NOERROR && resp->errstat != SNMP_ERR_NOSUCHNAME)) {
        report_error(d, resp);
        return 1;
    }
    const struct snmp_colspec *c = snmp_name_col(d->walk_descr);
    /* v1 end of MIB, or an empty answer: either way the column is done (never loop) */
    bool column_end = resp->errstat == SNMP_ERR_NOSUCHNAME || !resp->variables;
    for (netsnmp_variable_list *v = resp->variables; v && !column_end; v = v->next_variable) {
        if (v->type == SNMP_ENDOFMIBVIEW || v->type == SNMP_NOSUCHOBJECT ||
            v->type == SNMP_NOSUCHINSTANCE || v->name_length != c->len + 1 ||
            netsnmp_oid_is_subtree(c->base, c->len, v->name, v->name_length) != 0 ||
            snmp_oid_compare(v->name, v->name_length, d->cursor, d->cursor_len) <= 0) {
            column_end = true;
            break;
        }
        long idx = (long)v->name[c->len];
        if (v->type == ASN_OCTET_STR) {
            size_t n = v->val_len;
            for (size_t i = 0; i < d->n_ifs; i++) {
                struct snmp_if *f = &d->ifs[i];
                /* a name on several rows (snmpd keeps a deleted interface's row, oper down,
                 * counters frozen, when one of that name is created again): the newest,
                 * highest ifIndex, wins */
                bool mine = f->ifindex == 0 || (f->by_descr == d->walk_descr && idx > f->ifindex);
                if (mine && strlen(f->name) == n && memcmp(f->name, v->val.string, n) == 0) {
                    f->ifindex = idx;
                    f->by_descr = d->walk_descr;
                }
            }
        }
        memcpy(d->cursor, v->name, v->name_length * sizeof(oid));
        d->cursor_len = v->name_length;
    }
    bool all = true;
    for (size_t i = 0; i < d->n_ifs; i++)
        all = all && d->ifs[i].ifindex > 0;
    if (!column_end)
        send_walk(d); /* the whole column: a later row may carry the same name */
    else if (!d->walk_descr && !all)
        walk_column(d, true);
    else
        resolve_done(d);
    return 1;
}

/* ---- the poll: GET the columns of a few interfaces per PDU ---- */

static int get_cb(int op, netsnmp_session *s, int reqid, netsnmp_pdu *resp, void *magic);

static size_t ifs_per_pdu(const struct snmp_dev *d)
{
    int k = (d->max_vb - 1) / n_cols(d);
    return k < 1 ? 1 : (size_t)k;
}

static void send_more(struct snmp_dev *d)
{
    size_t chunk = ifs_per_pdu(d);
    int pipeline = d->p->o.pipeline;
    while (d->phase == PH_POLL && d->inflight < (size_t)pipeline && d->next < d->n_active) {
        netsnmp_pdu *pdu = snmp_pdu_create(SNMP_MSG_GET);
        snmp_add_null_var(pdu, sys_uptime_oid, OID_LENGTH(sys_uptime_oid));
        size_t from = d->next, to = d->next + chunk;
        if (to > d->n_active)
            to = d->n_active;
        for (size_t a = from; a < to; a++) {
            struct snmp_if *f = &d->ifs[d->active[a]];
            f->have = 0;
            f->name_ok = false;
            for (int c = 0; c < n_cols(d); c++) {
                const struct snmp_colspec *cs = snmp_col_spec(d->hc, c, f);
                oid name[SNMP_COL_LEN + 1];
                memcpy(name, cs->base, cs->len * sizeof(oid));
                name[cs->len] = (oid)f->ifindex;
                snmp_add_null_var(pdu, name, cs->len + 1);
            }
        }
        struct req *r = &d->reqs[from / chunk];
        *r = (struct req){.d = d, .gen = d->gen, .from = from, .to = to};
        d->next = to;
        d->inflight++;
        if (!send_pdu(d, pdu, r, get_cb))
            return;
    }
}

static void start_poll(struct snmp_dev *d)
{
    d->phase = PH_POLL;
    d->next = d->inflight = d->done = 0;
    d->rebooted = false;
    send_more(d);
}

/* 32-bit counters that can wrap twice in an interval: said once per interface (snmp_wrap.h). */
static void check_wraps(struct snmp_dev *d, struct snmp_if *f)
{
    if (d->hc || f->warned_wrap)
        return;
    char msg[400];
    int ivl = d->cd->snmp.interval_seconds > 0 ? d->cd->snmp.interval_seconds : 30;
    if (!snmp_wrap_check((f->have & (1u << C_SPEED)) ? f->v[C_SPEED] : 0, ivl, msg, sizeof(msg)))
        return;
    f->warned_wrap = true;
    d->st.wrap_ambiguous++;
    log_warn(dname(d), "%s: %s", f->name, msg);
}

static void emit(struct snmp_dev *d, struct snmp_if *f, int64_t at_us, int64_t uptime_cs)
{
    const uint32_t need = (1u << C_IN_OCT) | (1u << C_OUT_OCT);
    if ((f->have & need) != need)
        return;
    bool up = !(f->have & (1u << C_OPER)) || f->v[C_OPER] == 1;
    if (up != !f->not_up)
        log_info(dname(d), "%s (ifIndex %ld) is %s (ifOperStatus %" PRIu64 ")%s", f->name,
                 f->ifindex, up ? "up again" : "not up", f->v[C_OPER],
                 up ? "" : ": its intervals are reported invalid until it is up");
    if (!up) {
        /* the name may have moved to a new row (re-created interface): look again on each of
         * the first 5 polls it is down, then on the 8th, 16th, 32nd, ... */
        unsigned n = ++f->down_polls;
        if (n <= 5 || (n & (n - 1)) == 0)
            d->need_resolve = true;
    }
    if (up)
        f->down_polls = 0;
    f->not_up = !up;
    struct poll_sample s;
    snmp_if_sample(f, dname(d), d->hc, up, at_us, uptime_cs, &s);
    check_wraps(d, f);
    d->st.samples++;
    if (!up)
        d->st.invalid_samples++;
    poll_sink_add(d->p->sink, &s);
}

/* Restarts the current poll from scratch (after tooBig or a switch to 32-bit columns). */
static void restart_poll(struct snmp_dev *d)
{
    d->gen++;
    start_poll(d);
}

static int get_cb(int op, netsnmp_session *s, int reqid, netsnmp_pdu *resp, void *magic)
{
    int64_t recv_us = tm_now_us();
    struct req *r = magic;
    struct snmp_dev *d = r->d;
    if (r->reqid != reqid || r->gen != d->gen || d->phase != PH_POLL)
        return 1;
    if (op != NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE) {
        op_fail(d, op, s, resp);
        return 1;
    }
    if (resp->command != SNMP_MSG_REPORT && resp->errstat == SNMP_ERR_TOOBIG &&
        d->max_vb > n_cols(d) + 1) {
        d->max_vb = d->max_vb / 2 < n_cols(d) + 1 ? n_cols(d) + 1 : d->max_vb / 2;
        log_info(dname(d), "response too big; now %d varbinds per GET", d->max_vb);
        restart_poll(d);
        return 1;
    }
    if (resp->command != SNMP_MSG_REPORT && resp->errstat == SNMP_ERR_NOSUCHNAME && d->hc) {
        /* SNMPv1 agent without ifXTable HC counters */
        log_info(dname(d), "no 64-bit counters (noSuchName); using 32-bit ifTable columns");
        d->hc = false;
        restart_poll(d);
        return 1;
    }
    if (resp->command == SNMP_MSG_REPORT || resp->errstat != SNMP_ERR_NOERROR) {
        report_error(d, resp);
        return 1;
    }
    netsnmp_variable_list *v = resp->variables;
    if (!v ||
        snmp_oid_compare(v->name, v->name_length, sys_uptime_oid, OID_LENGTH(sys_uptime_oid)) !=
            0 ||
        v->type != ASN_TIMETICKS) {
        cycle_fail(d, SNMP_FAIL_AGENT_ERROR, "response without sysUpTime");
        return 1;
    }
    int64_t uptime_cs = (int64_t)snmp_var_u64(v);
    if (d->last_uptime_cs > 0 && uptime_cs < d->last_uptime_cs && !d->rebooted) {
        log_info(dname(d),
                 "device restarted (sysUpTime %" PRId64 " -> %" PRId64
                 " cs); re-resolving interface names",
                 d->last_uptime_cs, uptime_cs);
        d->rebooted = true;
        d->need_resolve = true;
    }
    d->last_uptime_cs = uptime_cs;
    /* the sample's time is when the agent read it (device clock), not when the answer came */
    int64_t at_us = snmp_clock_at(&d->clock, r->send_us, recv_us, uptime_cs);
    log_debug(dname(d), "response: sent +0, received +%.1f ms, agent read at +%.1f ms",
              (double)(recv_us - r->send_us) / 1e3, (double)(at_us - r->send_us) / 1e3);
    bool no_hc = false;
    /* varbinds come back in request order: interface by interface, column by column */
    v = v->next_variable;
    for (size_t a = r->from; a < r->to; a++) {
        struct snmp_if *f = &d->ifs[d->active[a]];
        for (int c = 0; c < n_cols(d) && v; c++, v = v->next_variable) {
            bool missing = v->type == SNMP_NOSUCHOBJECT || v->type == SNMP_NOSUCHINSTANCE ||
                           v->type == SNMP_ENDOFMIBVIEW || v->type == ASN_NULL;
            if (c == C_NAME) {
                f->name_ok = !missing && v->type == ASN_OCTET_STR &&
                             v->val_len == strlen(f->name) &&
                             memcmp(v->val.string, f->name, v->val_len) == 0;
                continue;
            }
            if (missing) {
                if (c == C_IN_OCT && d->hc && f->name_ok)
                    no_hc = true;
                continue;
            }
            f->v[c] = snmp_var_u64(v);
            f->have |= 1u << c;
        }
    }
    if (no_hc) {
        log_info(dname(d), "no ifHCInOctets; using 32-bit ifTable columns");
        d->hc = false;
        restart_poll(d);
        return 1;
    }
    for (size_t a = r->from; a < r->to; a++) {
        struct snmp_if *f = &d->ifs[d->active[a]];
        if (f->name_ok) {
            emit(d, f, at_us, uptime_cs);
        } else {
            log_info(dname(d), "ifIndex %ld is no longer %s; re-resolving interface names",
                     f->ifindex, f->name);
            d->need_resolve = true;
        }
    }
    d->inflight--;
    d->done += r->to - r->from;
    send_more(d);
    if (d->phase == PH_POLL && d->inflight == 0 && d->next == d->n_active) {
        if (d->need_resolve && !d->rebooted && d->reresolves == 0) {
            /* a name moved: find it again and poll those interfaces now */
            d->reresolves++;
            d->gen++;
            start_resolve(d);
            return 1;
        }
        cycle_ok(d);
    }
    return 1;
}

/* ---- SNMPv3 engine ID discovery, asynchronous ----
 * net-snmp probes the engine ID with a blocking exchange inside the first snmp_sess_async_send
 * of a session; a dead v3 device would stall the whole loop for timeout x tries. Sessions are
 * opened with SNMP_FLAGS_DONT_PROBE and the discovery (an unauthenticated GET by the empty user,
 * answered by a Report carrying the engine ID, RFC 3414 section 4) is sent like any request. */

static int probe_cb(int op, netsnmp_session *s, int reqid, netsnmp_pdu *resp, void *magic);

/* When the session has learnt the agent's engine ID: localize the user's keys and go on. */
static bool probe_learnt(struct snmp_dev *d)
{
    netsnmp_session *s = snmp_sess_session(d->sess);
    if (!s || s->securityEngineIDLen == 0)
        return false;
    if (create_user_from_session(s) != SNMPERR_SUCCESS) {
        cycle_fail(d, SNMP_FAIL_AUTH, "cannot set up SNMPv3 user \"%s\"", d->cd->snmp.user);
        return true;
    }
    d->engine_known = true;
    log_debug(dname(d), "SNMPv3 engine ID discovered");
    start_resolve(d);
    return true;
}

static void start_probe(struct snmp_dev *d)
{
    d->phase = PH_PROBE;
    if (!usm_get_user(NULL, 0, "")) {
        struct usmUser *u = usm_create_user();
        if (u) {
            u->name = strdup("");
            u->secName = strdup("");
            usm_add_user(u);
        }
    }
    netsnmp_pdu *pdu = snmp_pdu_create(SNMP_MSG_GET);
    pdu->version = SNMP_VERSION_3;
    pdu->securityName = strdup("");
    pdu->securityNameLen = 0;
    pdu->securityLevel = SNMP_SEC_LEVEL_NOAUTH;
    pdu->securityModel = SNMP_SEC_MODEL_USM;
    d->walk_req = (struct req){.d = d, .gen = d->gen};
    send_pdu(d, pdu, &d->walk_req, probe_cb);
}

static int probe_cb(int op, netsnmp_session *s, int reqid, netsnmp_pdu *resp, void *magic)
{
    struct req *r = magic;
    struct snmp_dev *d = r->d;
    if (r->reqid != reqid || r->gen != d->gen || d->phase != PH_PROBE)
        return 1;
    log_debug(dname(d), "discovery answer: op %d, pdu %s, engine ID %zu bytes", op,
              resp ? "yes" : "no", resp ? resp->securityEngineIDLen : 0);
    if (s->securityEngineIDLen == 0 && resp && resp->securityEngineIDLen > 0) {
        s->securityEngineID = netsnmp_memdup(resp->securityEngineID, resp->securityEngineIDLen);
        s->securityEngineIDLen = resp->securityEngineIDLen;
    }
    if (probe_learnt(d))
        return 1;
    if (op != NETSNMP_CALLBACK_OP_RECEIVED_MESSAGE)
        op_fail(d, op, s, resp);
    else
        cycle_fail(d, SNMP_FAIL_AUTH, "no SNMPv3 engine ID in the agent's answer to discovery");
    return 1;
}

/* A new session (and socket) for d: after a transport error, or the agent closed a unix:
 * stream; the old session is closed first (its callbacks see a stale generation). */
static int dev_open(struct snmp_dev *d, char *err, size_t errlen)
{
    if (d->rd_ev) {
        event_free(d->rd_ev);
        d->rd_ev = NULL;
    }
    if (d->to_ev)
        evtimer_del(d->to_ev);
    d->gen++;
    if (d->sess) {
        snmp_sess_close(d->sess);
        d->sess = NULL;
    }
    d->sess = snmp_session_open(d->cd, err, errlen);
    if (!d->sess)
        return -1;
    netsnmp_transport *t = snmp_sess_transport(d->sess);
    d->rd_ev = t ? event_new(d->p->base, t->sock, EV_READ | EV_PERSIST, on_readable, d) : NULL;
    if (!d->rd_ev) {
        snprintf(err, errlen, "device %s: out of memory", dname(d));
        return -1;
    }
    event_add(d->rd_ev, NULL);
    d->need_reopen = false;
    d->engine_known = false; /* a restarted v3 agent may have a new engine ID and boots */
    snmp_clock_reset(&d->clock);
    return 0;
}

static void dev_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct snmp_dev *d = arg;
    if (d->phase != PH_IDLE)
        return;
    if (d->need_reopen) {
        char err[512];
        d->st.reopens++;
        if (dev_open(d, err, sizeof(err)) != 0) {
            d->phase = PH_PROBE; /* cycle_fail ends a cycle */
            cycle_fail(d, SNMP_FAIL_TRANSPORT, "cannot reopen the session: %s", err);
            d->need_reopen = true;
            return;
        }
        log_debug(dname(d), "SNMP session reopened after a transport error");
    }
    d->gen++;
    d->reresolves = 0;
    d->cycle_start_ns = tm_mono_ns();
    if (d->cd->snmp.version == 3 && !d->engine_known)
        start_probe(d);
    else if (d->need_resolve)
        start_resolve(d);
    else
        start_poll(d);
}

/* ---- set-up ---- */

struct snmp_poller *snmp_poller_new(struct event_base *base, const struct cfg *cfg,
                                    struct poll_sink *sink, const struct snmp_poller_opts *o,
                                    char **only, size_t n_only, char *err, size_t errlen)
{
    snmp_session_lib_init();
    struct snmp_poller *p = calloc(1, sizeof(*p));
    if (!p)
        goto oom;
    p->base = base;
    p->cfg = cfg;
    p->sink = sink;
    p->o = *o;
    if (p->o.max_varbinds <= 0)
        p->o.max_varbinds = 100;
    if (p->o.pipeline <= 0)
        p->o.pipeline = 4;
    srandom((unsigned)(tm_now_us() ^ getpid()));
    p->devs = calloc(cfg->n_devices ? cfg->n_devices : 1, sizeof(*p->devs));
    if (!p->devs)
        goto oom;
    for (size_t i = 0; i < cfg->n_devices; i++) {
        const struct cfg_device *cd = &cfg->devices[i];
        if (!cd->has_snmp)
            continue;
        if (n_only) {
            bool want = false;
            for (size_t k = 0; k < n_only; k++)
                want = want || strcmp(only[k], cd->name) == 0;
            if (!want)
                continue;
        }
        struct snmp_dev *d = &p->devs[p->n_devs++];
        d->p = p;
        d->cd = cd;
        d->up = -1;
        d->hc = cd->snmp.version != 1;
        d->need_resolve = true;
        d->max_vb = p->o.max_varbinds;
        for (size_t l = 0; l < cfg->n_links; l++)
            if (strcmp(cfg->links[l].device, cd->name) == 0)
                d->n_ifs++;
        d->ifs = calloc(d->n_ifs ? d->n_ifs : 1, sizeof(*d->ifs));
        d->active = calloc(d->n_ifs ? d->n_ifs : 1, sizeof(*d->active));
        d->reqs = calloc(d->n_ifs ? d->n_ifs : 1, sizeof(*d->reqs));
        d->n_reqs = d->n_ifs;
        if (!d->ifs || !d->active || !d->reqs)
            goto oom;
        size_t k = 0;
        for (size_t l = 0; l < cfg->n_links; l++)
            if (strcmp(cfg->links[l].device, cd->name) == 0)
                d->ifs[k++].name = cfg->links[l].interface;
        d->to_ev = evtimer_new(base, on_timer, d);
        d->tick_ev = evtimer_new(base, dev_tick, d);
        if (!d->to_ev || !d->tick_ev)
            goto oom;
        if (dev_open(d, err, errlen) != 0)
            goto fail;
        if (d->n_ifs == 0) {
            log_warn(cd->name, "SNMP device %s has no links; not polled", cd->name);
            d->finished_once = true;
            p->n_done++;
            continue;
        }
        /* first poll: now in once mode, else at a random phase within the interval */
        int ivl = cd->snmp.interval_seconds > 0 ? cd->snmp.interval_seconds : 30;
        schedule(d, o->once ? 0 : (int64_t)(random() % (ivl * 1000)));
    }
    if (p->o.once && p->n_done == p->n_devs && p->o.done)
        p->o.done(p->o.done_arg); /* nothing to poll */
    return p;
oom:
    snprintf(err, errlen, "out of memory");
fail:
    snmp_poller_free(p);
    return NULL;
}

size_t snmp_poller_failures(const struct snmp_poller *p)
{
    return p->n_failed;
}

size_t snmp_poller_devices(const struct snmp_poller *p)
{
    return p->n_devs;
}

const char *snmp_poller_device_name(const struct snmp_poller *p, size_t i)
{
    return p->devs[i].cd->name;
}

const struct snmp_dev_stats *snmp_poller_device_stats(const struct snmp_poller *p, size_t i)
{
    return &p->devs[i].st;
}

void snmp_poller_free(struct snmp_poller *p)
{
    if (!p) {
        return;
    }
    for (size_t i = 0; i < p->n_devs; i++) {
        struct snmp_dev *d = &p->devs[i];
        if (d->rd_ev)
            event_free(d->rd_ev);
        if (d->to_ev)
            event_free(d->to_ev);
        if (d->tick_ev)
            event_free(d->tick_ev);
        d->gen++; /* callbacks run by the close below see a stale generation */
        if (d->sess)
            snmp_sess_close(d->sess);
        free(d->ifs);
        free(d->active);
        free(d->reqs);
    }
    free(p->devs);
    free(p);
    snmp_session_lib_shutdown();
}
