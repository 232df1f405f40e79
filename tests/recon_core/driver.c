/* Reads every scenario file in tests/recon_core/scenarios/ (one cmocka test each), reconciles its
 * windows with recon_run, replays the alerts the way recon_db_alerts.c does (in memory), and
 * compares with the expectations the file states. The format is in tests/recon_core/README.md. */
#include <arpa/inet.h>
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "alerts.h"
#include "config.h"
#include "hugealloc.h"
#include "recon.h"
#include "scn_kv.h"

#define T0 INT64_C(1795978380) /* 2026-11-29T18:53:00Z, a multiple of 60 s: offset 0 in files */

static const char default_config[] =
    "{\"window_seconds\": 60,\n"
    " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\", \"fd00:1::/48\"]},\n"
    "             {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},\n"
    "             {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],\n"
    " \"devices\": [{\"name\": \"nyc-border-1\", \"site\": \"nyc\", \"gnmi\": {}},\n"
    "               {\"name\": \"chi-border-1\", \"site\": \"chi\", \"gnmi\": {}}],\n"
    " \"links\": [{\"device\": \"nyc-border-1\", \"interface\": \"et-0/0/1\", \"site\": \"nyc\",\n"
    "             \"peer_site\": \"chi\", \"circuit\": \"nyc-chi-1\", \"capacity_bps\": "
    "1000000}],\n"
    " \"dedup\": {\"nfs_ports\": [2049],\n"
    "           \"services\": [{\"name\": \"dupedog\", \"ports\": [7100], \"users\": "
    "[\"dupedog\"]}]},\n"
    " \"overhead\": {\"bytes_per_packet\": 66, \"ratio_without_packets\": 0.95},\n"
    " \"thresholds\": {\"green\": 0.95, \"red\": 0.80, \"min_gap_bytes\": 1000, \"over\": 1.05,\n"
    "                \"alert_windows\": 3, \"resolve_windows\": 2, \"saturation\": 0.90}}\n";

/* ---- the scenario in memory ---- */

struct scn_flow {
    int64_t window; /* seconds offset */
    struct recon_flow f;
};

struct expect_alert {
    enum alert_kind kind;
    char src[32], dst[32];
    char state[16]; /* "open", "resolved", "none" */
    bool has_first, has_last;
    int64_t first, last;
    char summary_has[128];
};

/* An alert row kept in memory, as recon_db_alerts.c keeps it in gap_alerts. */
struct mem_alert {
    enum alert_kind kind;
    int src, dst;
    struct alert_row row;
    char summary[512];
};

/* The history of one pair's windows, per kind, as recon_db.c reads it back. */
struct hist {
    int src, dst;
    enum alert_kind kind;
    struct alert_window *w;
    size_t n;
};

struct scn {
    const char *file;
    int line;
    struct cfg *cfg;
    struct recon_sample *samples;
    size_t n_samples;
    struct scn_flow *flows;
    size_t n_flows;
    struct recon_transfer *transfers;
    size_t n_transfers;
    char **strings; /* owned copies the flows point into */
    size_t n_strings;
    /* the window being checked */
    bool in_window;
    int64_t window;
    struct recon_result res;
    bool *cell_seen, *rollup_seen;
    bool rollup_listed;
    struct mem_alert *alerts;
    size_t n_alerts;
    struct hist *hists;
    size_t n_hists;
};

static void scn_fail(const struct scn *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void scn_fail(const struct scn *s, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fail_msg("%s:%d: %s", s->file, s->line, msg);
}

static void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    assert_non_null(q);
    return q;
}

static const char *keep(struct scn *s, const char *v)
{
    s->strings = xrealloc(s->strings, (s->n_strings + 1) * sizeof *s->strings);
    s->strings[s->n_strings] = strdup(v);
    return s->strings[s->n_strings++];
}

static uint64_t num_u64(const struct scn *s, const char *v)
{
    char *end;
    unsigned long long x = strtoull(v, &end, 0);
    if (*end)
        scn_fail(s, "bad number \"%s\"", v);
    return x;
}

static double num_f(const struct scn *s, const char *v)
{
    char *end;
    double x = strtod(v, &end);
    if (*end)
        scn_fail(s, "bad number \"%s\"", v);
    return x;
}

/* seconds offset from T0 (may be fractional or negative) -> absolute microseconds */
static int64_t at_us(const struct scn *s, const char *v)
{
    return T0 * 1000000 + (int64_t)llround(num_f(s, v) * 1e6);
}

static int site(const struct scn *s, const char *name)
{
    int i = cfg_site_index(s->cfg, name);
    if (i < 0)
        scn_fail(s, "unknown site %s", name);
    return i;
}

static void parse_addr(const struct scn *s, const char *v, struct recon_addr *a, uint16_t *port)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%s", v);
    char *host = buf, *p = NULL;
    if (buf[0] == '[') {
        host = buf + 1;
        char *close = strchr(host, ']');
        if (!close)
            scn_fail(s, "bad address %s", v);
        *close = '\0';
        if (close[1] == ':')
            p = close + 2;
    } else if (strchr(buf, ':') && strchr(buf, ':') == strrchr(buf, ':')) {
        p = strchr(buf, ':');
        *p++ = '\0';
    }
    memset(a, 0, sizeof *a);
    if (inet_pton(AF_INET, host, a->addr) == 1)
        a->family = AF_INET;
    else if (inet_pton(AF_INET6, host, a->addr) == 1)
        a->family = AF_INET6;
    else
        scn_fail(s, "bad address %s", v);
    if (port)
        *port = p ? (uint16_t)num_u64(s, p) : 0;
}

static void parse_sample(struct scn *s, struct scn_kv *kv)
{
    if (kv->n_pos < 4)
        scn_fail(s, "sample DEVICE INTERFACE AT key=value…");
    int link = -1;
    for (size_t i = 0; i < s->cfg->n_links; i++)
        if (strcmp(s->cfg->links[i].device, kv->pos[1]) == 0 &&
            strcmp(s->cfg->links[i].interface, kv->pos[2]) == 0)
            link = (int)i;
    if (link < 0)
        scn_fail(s, "no link %s %s", kv->pos[1], kv->pos[2]);
    s->samples = xrealloc(s->samples, (s->n_samples + 1) * sizeof *s->samples);
    struct recon_sample *x = &s->samples[s->n_samples++];
    memset(x, 0, sizeof *x);
    x->link = link;
    x->at_us = at_us(s, kv->pos[3]);
    const char *v;
    x->uptime_cs = (v = scn_kv_get(kv, "uptime")) ? (int64_t)num_u64(s, v) : -1;
    x->discontinuity_cs = (v = scn_kv_get(kv, "disc")) ? (int64_t)num_u64(s, v) : 0;
    x->counter_bits = (v = scn_kv_get(kv, "bits")) ? (int)num_u64(s, v) : 64;
    x->speed_bps = (v = scn_kv_get(kv, "speed")) ? num_u64(s, v) : 0;
    if ((v = scn_kv_get(kv, "in")))
        x->has_in_octets = true, x->in_octets = num_u64(s, v);
    if ((v = scn_kv_get(kv, "out")))
        x->has_out_octets = true, x->out_octets = num_u64(s, v);
    if ((v = scn_kv_get(kv, "in_pkts")))
        x->has_in_pkts = true, x->in_pkts = num_u64(s, v);
    if ((v = scn_kv_get(kv, "out_pkts")))
        x->has_out_pkts = true, x->out_pkts = num_u64(s, v);
}

static const char *opt(struct scn *s, const struct scn_kv *kv, const char *key)
{
    const char *v = scn_kv_get(kv, key);
    return v ? keep(s, v) : NULL;
}

static void parse_flow(struct scn *s, struct scn_kv *kv)
{
    if (kv->n_pos < 3)
        scn_fail(s, "flow WINDOW socket|nfs key=value…");
    s->flows = xrealloc(s->flows, (s->n_flows + 1) * sizeof *s->flows);
    struct scn_flow *sf = &s->flows[s->n_flows++];
    memset(sf, 0, sizeof *sf);
    sf->window = (int64_t)num_f(s, kv->pos[1]);
    struct recon_flow *f = &sf->f;
    f->host = opt(s, kv, "host");
    f->user = opt(s, kv, "user");
    f->program = opt(s, kv, "program");
    f->workflow = opt(s, kv, "workflow");
    f->kube.ns = opt(s, kv, "namespace");
    f->kube.pod = opt(s, kv, "pod");
    f->kube.container = opt(s, kv, "container");
    const char *v;
    if (strcmp(kv->pos[2], "socket") == 0) {
        f->source = RECON_FLOW_SOCKET;
        v = scn_kv_get(kv, "proto");
        f->proto = v && strcmp(v, "udp") == 0 ? IPPROTO_UDP : IPPROTO_TCP;
        if (!scn_kv_get(kv, "local") || !scn_kv_get(kv, "remote"))
            scn_fail(s, "socket flow needs local= and remote=");
        parse_addr(s, scn_kv_get(kv, "local"), &f->local, &f->local_port);
        parse_addr(s, scn_kv_get(kv, "remote"), &f->remote, &f->remote_port);
        v = scn_kv_get(kv, "role");
        f->role = !v                         ? RECON_ROLE_UNKNOWN
                  : strcmp(v, "client") == 0 ? RECON_ROLE_CLIENT
                  : strcmp(v, "server") == 0 ? RECON_ROLE_SERVER
                                             : RECON_ROLE_UNKNOWN;
        f->tx_bytes = (v = scn_kv_get(kv, "tx")) ? num_u64(s, v) : 0;
        f->rx_bytes = (v = scn_kv_get(kv, "rx")) ? num_u64(s, v) : 0;
    } else if (strcmp(kv->pos[2], "nfs") == 0) {
        f->source = RECON_FLOW_NFS;
        if ((v = scn_kv_get(kv, "local")))
            parse_addr(s, v, &f->local, NULL);
        if (!scn_kv_get(kv, "server"))
            scn_fail(s, "nfs flow needs server=");
        parse_addr(s, scn_kv_get(kv, "server"), &f->nfs_server, &f->nfs_port);
        v = scn_kv_get(kv, "op");
        f->nfs_op = v && strcmp(v, "write") == 0 ? RECON_NFS_WRITE : RECON_NFS_READ;
        f->nfs_bytes = (v = scn_kv_get(kv, "bytes")) ? num_u64(s, v) : 0;
    } else {
        scn_fail(s, "flow source %s", kv->pos[2]);
    }
}

static void parse_transfer(struct scn *s, struct scn_kv *kv)
{
    s->transfers = xrealloc(s->transfers, (s->n_transfers + 1) * sizeof *s->transfers);
    struct recon_transfer *t = &s->transfers[s->n_transfers++];
    memset(t, 0, sizeof *t);
    t->service = opt(s, kv, "service");
    t->requester = opt(s, kv, "requester");
    t->workflow = opt(s, kv, "workflow");
    t->src = opt(s, kv, "src");
    t->dst = opt(s, kv, "dst");
    const char *b = scn_kv_get(kv, "bytes"), *st = scn_kv_get(kv, "start"),
               *en = scn_kv_get(kv, "end");
    if (!b || !st || !en)
        scn_fail(s, "transfer needs bytes= start= end=");
    t->bytes = num_u64(s, b);
    t->start_us = at_us(s, st);
    t->end_us = at_us(s, en);
}

/* ---- checking one window ---- */

static struct hist *hist_get(struct scn *s, enum alert_kind kind, int src, int dst)
{
    for (size_t i = 0; i < s->n_hists; i++)
        if (s->hists[i].kind == kind && s->hists[i].src == src && s->hists[i].dst == dst)
            return &s->hists[i];
    s->hists = xrealloc(s->hists, (s->n_hists + 1) * sizeof *s->hists);
    struct hist *h = &s->hists[s->n_hists++];
    memset(h, 0, sizeof *h);
    h->kind = kind;
    h->src = src;
    h->dst = dst;
    return h;
}

static void hist_put(struct hist *h, const struct alert_window *w)
{
    size_t i = 0;
    while (i < h->n && h->w[i].window_start_us < w->window_start_us)
        i++;
    if (i < h->n && h->w[i].window_start_us == w->window_start_us) {
        h->w[i] = *w; /* re-reconciled: replaces */
        return;
    }
    h->w = xrealloc(h->w, (h->n + 1) * sizeof *h->w);
    memmove(&h->w[i + 1], &h->w[i], (h->n - i) * sizeof *h->w);
    h->w[i] = *w;
    h->n++;
}

/* Replays one pair's history and applies the actions to the in-memory rows (as recon_db.c does
 * to gap_alerts). */
static void alerts_apply(struct scn *s, struct hist *h)
{
    struct alert_episode eps[64];
    size_t n_eps =
        alerts_replay(s->cfg->alert_windows, s->cfg->resolve_windows, h->w, h->n, NULL, eps, 64);
    assert_true(n_eps <= 64);
    struct alert_row rows[64];
    size_t row_of[64], n_rows = 0;
    for (size_t i = 0; i < s->n_alerts && n_rows < 64; i++) {
        struct mem_alert *a = &s->alerts[i];
        if (a->kind == h->kind && a->src == h->src && a->dst == h->dst) {
            row_of[n_rows] = i;
            rows[n_rows++] = a->row;
        }
    }
    struct alert_action acts[128];
    size_t n_acts = alerts_match(eps, n_eps, rows, n_rows, acts);
    for (size_t i = 0; i < n_acts; i++) {
        struct mem_alert *a;
        if (acts[i].kind == ALERT_WITHDRAW) {
            s->alerts[row_of[acts[i].row]].row.open = false;
            continue;
        }
        const struct alert_episode *e = &eps[acts[i].episode];
        if (acts[i].kind == ALERT_INSERT) {
            s->alerts = xrealloc(s->alerts, (s->n_alerts + 1) * sizeof *s->alerts);
            a = &s->alerts[s->n_alerts];
            memset(a, 0, sizeof *a);
            a->kind = h->kind;
            a->src = h->src;
            a->dst = h->dst;
            a->row.id = (int64_t)++s->n_alerts;
            a->row.first_window_us = e->first_window_us;
        } else {
            a = &s->alerts[row_of[acts[i].row]];
            if (e->first_window_us < a->row.first_window_us)
                a->row.first_window_us = e->first_window_us;
        }
        a->row.last_window_us = e->last_window_us;
        a->row.open = !e->resolved;
        const char *src = s->cfg->sites[h->src].name, *dst = s->cfg->sites[h->dst].name;
        if (h->kind == ALERT_SATURATION) {
            struct alert_workflow top[3];
            size_t n_top =
                alerts_top_workflows(s->res.rollup, s->res.n_rollup, h->src, h->dst, top, 3);
            uint64_t total = 0, cap = 0;
            const char *circuit = "";
            double best = -1;
            for (size_t k = 0; k < s->res.n_cells; k++)
                if (s->res.cells[k].src_site == h->src && s->res.cells[k].dst_site == h->dst)
                    total = s->res.cells[k].attributed_bytes;
            for (size_t k = 0; k < s->res.n_links; k++) {
                const struct recon_link_obs *o = &s->res.links[k];
                if (o->src_site == h->src && o->dst_site == h->dst && o->utilization > best) {
                    best = o->utilization;
                    circuit = o->circuit;
                    cap = o->capacity_bps;
                }
            }
            alerts_summary_saturation(a->summary, sizeof a->summary, src, dst, circuit, e, cap, top,
                                      n_top, total);
        } else {
            alerts_summary_cells(a->summary, sizeof a->summary, h->kind, src, dst, e,
                                 s->cfg->window_seconds);
        }
    }
}

static bool same_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "") == 0;
}

/* The owner's strings of rollup rows x and y compared (strcmp order, source first). */
static int owner_cmp(const struct recon_rollup *x, const struct recon_rollup *y)
{
    const char *a[] = {x->source, x->workflow, x->user,     x->program,
                       x->host,   x->kube.ns,  x->kube.pod, x->kube.container};
    const char *b[] = {y->source, y->workflow, y->user,     y->program,
                       y->host,   y->kube.ns,  y->kube.pod, y->kube.container};
    for (size_t k = 0; k < sizeof a / sizeof *a; k++) {
        int c = strcmp(a[k] ? a[k] : "", b[k] ? b[k] : "");
        if (c)
            return c;
    }
    return 0;
}

/* Whether the rollup's owner numbers (recon_rollup.owner) name its owners: below n_owners, one
 * number for the rows of one owner, and numbers rising with the owners' strings (so two owners
 * never share one). */
static bool owners_numbered(const struct recon_result *r)
{
    size_t *rep = xrealloc(NULL, (r->n_owners + 1) * sizeof *rep);
    bool ok = true;
    for (size_t k = 0; k < r->n_owners; k++)
        rep[k] = SIZE_MAX;
    for (size_t i = 0; ok && i < r->n_rollup; i++) {
        uint32_t k = r->rollup[i].owner;
        ok = k < r->n_owners;
        if (ok && rep[k] == SIZE_MAX)
            rep[k] = i;
        ok = ok && owner_cmp(&r->rollup[rep[k]], &r->rollup[i]) == 0;
    }
    for (size_t k = 0, prev = SIZE_MAX; ok && k < r->n_owners; k++) {
        if (rep[k] == SIZE_MAX)
            continue;
        ok = prev == SIZE_MAX || owner_cmp(&r->rollup[prev], &r->rollup[rep[k]]) < 0;
        prev = rep[k];
    }
    free(rep);
    return ok;
}

/* Whether two results of one window are the same in every figure and row. */
static bool same_result(const struct recon_result *a, const struct recon_result *b)
{
    const struct recon_result r = *b;
    bool same = r.n_cells == a->n_cells && r.n_rollup == a->n_rollup && r.n_deps == a->n_deps &&
                r.n_links == a->n_links && r.n_unmapped == a->n_unmapped &&
                r.n_intra_site == a->n_intra_site && r.n_dedup_flows == a->n_dedup_flows &&
                r.n_both_ends == a->n_both_ends && r.n_owners == a->n_owners;
    for (size_t i = 0; same && i < r.n_cells; i++) {
        const struct recon_cell *x = &r.cells[i], *y = &a->cells[i];
        same = x->src_site == y->src_site && x->dst_site == y->dst_site &&
               x->has_link == y->has_link && x->observed_bytes == y->observed_bytes &&
               x->observed_payload_bytes == y->observed_payload_bytes &&
               x->attributed_bytes == y->attributed_bytes && x->socket_bytes == y->socket_bytes &&
               x->nfs_bytes == y->nfs_bytes && x->service_bytes == y->service_bytes &&
               x->unattributed_bytes == y->unattributed_bytes &&
               x->has_coverage == y->has_coverage && x->coverage == y->coverage &&
               x->valid_fraction == y->valid_fraction && x->capacity_bps == y->capacity_bps &&
               x->status == y->status;
    }
    for (size_t i = 0; same && i < r.n_rollup; i++) {
        const struct recon_rollup *x = &r.rollup[i], *y = &a->rollup[i];
        same = x->src_site == y->src_site && x->dst_site == y->dst_site && x->bytes == y->bytes &&
               x->owner == y->owner && same_str(x->source, y->source) &&
               same_str(x->workflow, y->workflow) && same_str(x->user, y->user) &&
               same_str(x->program, y->program) && same_str(x->host, y->host) &&
               same_str(x->kube.ns, y->kube.ns) && same_str(x->kube.pod, y->kube.pod) &&
               same_str(x->kube.container, y->kube.container);
    }
    for (size_t i = 0; same && i < r.n_deps; i++) {
        const struct recon_dep *x = &r.deps[i], *y = &a->deps[i];
        same = x->local_site == y->local_site && x->remote_site == y->remote_site &&
               x->kind == y->kind && x->bytes_out == y->bytes_out && x->bytes_in == y->bytes_in &&
               x->connections == y->connections && same_str(x->endpoint, y->endpoint) &&
               same_str(x->workflow, y->workflow) && same_str(x->user, y->user) &&
               same_str(x->program, y->program);
    }
    return same;
}

/* The window again with its flows in reverse and their arrival order given as recon_flow_order
 * (as the ClickHouse path passes them), and split across 2 and 3 threads (recon_socket.c), in
 * order and reversed: every result must be the same as the one-thread run in order. Three
 * times more (1 thread twice, so the second reuses the first's blocks; 2 threads reversed) with
 * every array from the block cache (huge_set_above(1): a fleet window's path at this size; the
 * sanitizer build fills every block handed out with 0xa5), and after every run each block given
 * back through huge_free (huge_live_blocks back where it was). */
static void check_any_order(struct scn *s, const struct recon_input *in0)
{
    size_t n = in0->n_flows;
    struct recon_flow *rev = xrealloc(NULL, (n + 1) * sizeof *rev);
    struct recon_flow_order *ord = xrealloc(NULL, (n + 1) * sizeof *ord);
    for (size_t i = 0; i < n; i++) {
        rev[i] = in0->flows[n - 1 - i];
        /* arrival position n-1-i spelt as (seq, agent, idx): seq and idx split it, agent ties */
        ord[i] = (struct recon_flow_order){(n - 1 - i) / 3, "agent", (n - 1 - i) % 3};
    }
    static const struct {
        bool reversed;
        int threads;
        bool cached;
    } runs[] = {{true, 1, false}, {false, 2, false}, {true, 2, false}, {false, 3, false},
                {true, 3, false}, {false, 1, true},  {false, 1, true}, {true, 2, true}};
    for (size_t k = 0; k < sizeof runs / sizeof *runs; k++) {
        size_t live = huge_live_blocks(), above = 0;
        if (runs[k].cached)
            above = huge_set_above(1);
        struct recon_input in = *in0;
        if (runs[k].reversed) {
            in.flows = rev;
            in.order = ord;
        }
        in.threads = runs[k].threads;
        struct recon_result r;
        char err[256];
        if (recon_run(s->cfg, &in, &r, err, sizeof err))
            scn_fail(s, "recon_run (%s, %d threads): %s",
                     runs[k].reversed ? "reversed" : "in order", runs[k].threads, err);
        if (!owners_numbered(&r))
            scn_fail(s,
                     "window %lld: the rollup's owner numbers (%s, %d threads) do not name "
                     "its owners",
                     (long long)s->window, runs[k].reversed ? "reversed" : "in order",
                     runs[k].threads);
        if (!same_result(&s->res, &r))
            scn_fail(s, "window %lld: flows %s on %d threads%s differ from in order on 1",
                     (long long)s->window,
                     runs[k].reversed ? "in reverse with their order given" : "in order",
                     runs[k].threads, runs[k].cached ? ", every array cached," : "");
        recon_result_free(&r);
        if (runs[k].cached)
            huge_set_above(above);
        if (huge_live_blocks() != live)
            scn_fail(s, "window %lld: %zu blocks of the cache not given back (%s, %d threads)",
                     (long long)s->window, huge_live_blocks() - live,
                     runs[k].cached ? "every array cached" : "fleet sizes only", runs[k].threads);
    }
    free(rev);
    free(ord);
}

static void reconcile_window(struct scn *s)
{
    struct recon_flow *flows = xrealloc(NULL, (s->n_flows + 1) * sizeof *flows);
    size_t n = 0;
    for (size_t i = 0; i < s->n_flows; i++)
        if (s->flows[i].window == s->window)
            flows[n++] = s->flows[i].f;
    struct recon_input in = {.window_start_us = (T0 + s->window) * 1000000,
                             .threads = 1,
                             .samples = s->samples,
                             .n_samples = s->n_samples,
                             .flows = flows,
                             .n_flows = n,
                             .transfers = s->transfers,
                             .n_transfers = s->n_transfers};
    char err[256];
    if (recon_run(s->cfg, &in, &s->res, err, sizeof err))
        scn_fail(s, "recon_run: %s", err);
    check_any_order(s, &in);
    free(flows);
    s->cell_seen = xrealloc(NULL, (s->res.n_cells + 1) * sizeof(bool));
    memset(s->cell_seen, 0, (s->res.n_cells + 1) * sizeof(bool));
    s->rollup_seen = xrealloc(NULL, (s->res.n_rollup + 1) * sizeof(bool));
    memset(s->rollup_seen, 0, (s->res.n_rollup + 1) * sizeof(bool));
    s->rollup_listed = false;

    /* alerts: this window joins each pair's history; replay every pair it touches */
    for (size_t i = 0; i < s->res.n_cells; i++) {
        const struct recon_cell *c = &s->res.cells[i];
        for (int k = ALERT_GAP; k <= ALERT_OVER; k++) {
            struct alert_window w = {
                .window_start_us = in.window_start_us,
                .mark = alerts_mark_cell(s->cfg, (enum alert_kind)k, c->status, c->has_coverage,
                                         c->coverage),
                .unattributed_bytes = c->unattributed_bytes,
                .observed_payload_bytes = c->observed_payload_bytes,
                .ratio = k == ALERT_GAP ? (c->has_coverage ? 1 - c->coverage : 0) : c->coverage};
            struct hist *h = hist_get(s, (enum alert_kind)k, c->src_site, c->dst_site);
            hist_put(h, &w);
            alerts_apply(s, h);
        }
        if (!c->has_link)
            continue;
        struct recon_link_obs dirs[16];
        size_t nd = 0;
        double util = 0;
        for (size_t k = 0; k < s->res.n_links && nd < 16; k++) {
            const struct recon_link_obs *o = &s->res.links[k];
            if (o->src_site == c->src_site && o->dst_site == c->dst_site) {
                dirs[nd++] = *o;
                if (o->has_utilization && o->utilization > util)
                    util = o->utilization;
            }
        }
        struct alert_window w = {.window_start_us = in.window_start_us,
                                 .mark = alerts_mark_saturation(s->cfg, dirs, nd),
                                 .observed_payload_bytes = c->observed_payload_bytes,
                                 .ratio = util};
        struct hist *h = hist_get(s, ALERT_SATURATION, c->src_site, c->dst_site);
        hist_put(h, &w);
        alerts_apply(s, h);
    }
}

static void end_window(struct scn *s)
{
    if (!s->in_window)
        return;
    for (size_t i = 0; i < s->res.n_cells; i++)
        if (!s->cell_seen[i])
            scn_fail(s, "window %lld: cell %s->%s (status %s) was produced but not expected",
                     (long long)s->window, s->cfg->sites[s->res.cells[i].src_site].name,
                     s->cfg->sites[s->res.cells[i].dst_site].name,
                     recon_status_name(s->res.cells[i].status));
    if (s->rollup_listed)
        for (size_t i = 0; i < s->res.n_rollup; i++)
            if (!s->rollup_seen[i])
                scn_fail(s,
                         "window %lld: rollup %s->%s %s workflow=%s user=%s bytes=%llu "
                         "not expected",
                         (long long)s->window, s->cfg->sites[s->res.rollup[i].src_site].name,
                         s->cfg->sites[s->res.rollup[i].dst_site].name, s->res.rollup[i].source,
                         s->res.rollup[i].workflow, s->res.rollup[i].user,
                         (unsigned long long)s->res.rollup[i].bytes);
    recon_result_free(&s->res);
    free(s->cell_seen);
    free(s->rollup_seen);
    s->cell_seen = s->rollup_seen = NULL;
    s->in_window = false;
}

static void check_u64(const struct scn *s, const char *what, const struct scn_kv *kv,
                      const char *key, uint64_t got)
{
    const char *v = scn_kv_get(kv, key);
    if (v && num_u64(s, v) != got)
        scn_fail(s, "%s: %s expected %s, got %llu", what, key, v, (unsigned long long)got);
}

static void check_f(const struct scn *s, const char *what, const struct scn_kv *kv, const char *key,
                    double got, bool has)
{
    const char *v = scn_kv_get(kv, key);
    if (!v)
        return;
    if (strcmp(v, "null") == 0) {
        if (has)
            scn_fail(s, "%s: %s expected null, got %.9g", what, key, got);
        return;
    }
    if (!has || fabs(num_f(s, v) - got) > 1e-6)
        scn_fail(s, "%s: %s expected %s, got %s%.9g", what, key, v, has ? "" : "null/", got);
}

static void expect_cell(struct scn *s, struct scn_kv *kv)
{
    if (kv->n_pos < 3)
        scn_fail(s, "cell SRC DST key=value…");
    int src = site(s, kv->pos[1]), dst = site(s, kv->pos[2]);
    char what[96];
    snprintf(what, sizeof what, "window %lld cell %s->%s", (long long)s->window, kv->pos[1],
             kv->pos[2]);
    for (size_t i = 0; i < s->res.n_cells; i++) {
        const struct recon_cell *c = &s->res.cells[i];
        if (c->src_site != src || c->dst_site != dst)
            continue;
        s->cell_seen[i] = true;
        const char *st = scn_kv_get(kv, "status");
        if (st && strcmp(st, recon_status_name(c->status)) != 0)
            scn_fail(s, "%s: status expected %s, got %s", what, st, recon_status_name(c->status));
        check_u64(s, what, kv, "observed", c->observed_bytes);
        check_u64(s, what, kv, "payload", c->observed_payload_bytes);
        check_u64(s, what, kv, "attributed", c->attributed_bytes);
        check_u64(s, what, kv, "socket", c->socket_bytes);
        check_u64(s, what, kv, "nfs", c->nfs_bytes);
        check_u64(s, what, kv, "service", c->service_bytes);
        check_u64(s, what, kv, "unattributed", c->unattributed_bytes);
        check_u64(s, what, kv, "capacity", c->capacity_bps);
        check_f(s, what, kv, "coverage", c->coverage, c->has_coverage);
        check_f(s, what, kv, "valid", c->valid_fraction, true);
        return;
    }
    scn_fail(s, "%s: not produced", what);
}

static void expect_link(struct scn *s, struct scn_kv *kv)
{
    if (kv->n_pos < 4)
        scn_fail(s, "link CIRCUIT SRC DST key=value…");
    int src = site(s, kv->pos[2]), dst = site(s, kv->pos[3]);
    char what[128];
    snprintf(what, sizeof what, "window %lld link %s %s->%s", (long long)s->window, kv->pos[1],
             kv->pos[2], kv->pos[3]);
    for (size_t i = 0; i < s->res.n_links; i++) {
        const struct recon_link_obs *o = &s->res.links[i];
        if (strcmp(o->circuit, kv->pos[1]) != 0 || o->src_site != src || o->dst_site != dst)
            continue;
        const char *v = scn_kv_get(kv, "counter");
        if (v && strcmp(v, o->out_counter ? "out" : "in") != 0)
            scn_fail(s, "%s: counter expected %s, got %s", what, v, o->out_counter ? "out" : "in");
        if ((v = scn_kv_get(kv, "device"))) {
            const char *dev = o->link >= 0 ? s->cfg->links[o->link].device : "-";
            if (strcmp(v, dev) != 0)
                scn_fail(s, "%s: device expected %s, got %s", what, v, dev);
        }
        check_u64(s, what, kv, "observed", o->observed_bytes);
        check_u64(s, what, kv, "payload", o->observed_payload_bytes);
        check_u64(s, what, kv, "capacity", o->capacity_bps);
        check_f(s, what, kv, "valid", o->valid_fraction, true);
        check_f(s, what, kv, "util", o->utilization, o->has_utilization);
        return;
    }
    scn_fail(s, "%s: not produced", what);
}

static void expect_rollup(struct scn *s, struct scn_kv *kv)
{
    if (kv->n_pos < 3 || !scn_kv_get(kv, "source") || !scn_kv_get(kv, "bytes"))
        scn_fail(
            s,
            "rollup SRC DST source=… [workflow= user= program= host= namespace= pod= container=] "
            "bytes=N");
    int src = site(s, kv->pos[1]), dst = site(s, kv->pos[2]);
    s->rollup_listed = true;
    const char *wf = scn_kv_get(kv, "workflow"), *user = scn_kv_get(kv, "user"),
               *prog = scn_kv_get(kv, "program"), *host = scn_kv_get(kv, "host"),
               *ns = scn_kv_get(kv, "namespace"), *pod = scn_kv_get(kv, "pod"),
               *ctr = scn_kv_get(kv, "container");
    for (size_t i = 0; i < s->res.n_rollup; i++) {
        const struct recon_rollup *r = &s->res.rollup[i];
        if (r->src_site != src || r->dst_site != dst ||
            strcmp(r->source, scn_kv_get(kv, "source")) || strcmp(r->workflow, wf ? wf : "") ||
            strcmp(r->user, user ? user : "") || strcmp(r->program, prog ? prog : "") ||
            strcmp(r->host, host ? host : "") || strcmp(r->kube.ns, ns ? ns : "") ||
            strcmp(r->kube.pod, pod ? pod : "") || strcmp(r->kube.container, ctr ? ctr : ""))
            continue;
        s->rollup_seen[i] = true;
        check_u64(s, "rollup", kv, "bytes", r->bytes);
        return;
    }
    scn_fail(s, "window %lld: rollup %s->%s source=%s workflow=%s user=%s not produced",
             (long long)s->window, kv->pos[1], kv->pos[2], scn_kv_get(kv, "source"), wf ? wf : "",
             user ? user : "");
}

static void expect_alert(struct scn *s, struct scn_kv *kv)
{
    if (kv->n_pos < 4 || !scn_kv_get(kv, "state"))
        scn_fail(s, "alert KIND SRC DST state=open|resolved|none [first=T last=T summary_has=W]");
    int kind = alerts_kind_parse(kv->pos[1]);
    if (kind < 0)
        scn_fail(s, "alert kind %s", kv->pos[1]);
    int src = site(s, kv->pos[2]), dst = site(s, kv->pos[3]);
    const char *state = scn_kv_get(kv, "state");
    /* the newest row of that (kind, pair) */
    const struct mem_alert *a = NULL;
    size_t n_open = 0;
    for (size_t i = 0; i < s->n_alerts; i++)
        if ((int)s->alerts[i].kind == kind && s->alerts[i].src == src && s->alerts[i].dst == dst) {
            a = &s->alerts[i];
            n_open += a->row.open;
        }
    if (n_open > 1)
        scn_fail(s, "%zu open %s alerts for one pair", n_open, kv->pos[1]);
    if (strcmp(state, "none") == 0) {
        if (a)
            scn_fail(s, "window %lld: expected no %s alert, got one (%s)", (long long)s->window,
                     kv->pos[1], a->row.open ? "open" : "resolved");
        return;
    }
    if (!a)
        scn_fail(s, "window %lld: expected a %s %s alert, got none", (long long)s->window, state,
                 kv->pos[1]);
    if (strcmp(state, a->row.open ? "open" : "resolved") != 0)
        scn_fail(s, "window %lld: alert expected %s, got %s", (long long)s->window, state,
                 a->row.open ? "open" : "resolved");
    const char *v;
    if ((v = scn_kv_get(kv, "first")) && at_us(s, v) != a->row.first_window_us)
        scn_fail(s, "alert first window expected %s, got %lld", v,
                 (long long)(a->row.first_window_us / 1000000 - T0));
    if ((v = scn_kv_get(kv, "last")) && at_us(s, v) != a->row.last_window_us)
        scn_fail(s, "alert last window expected %s, got %lld", v,
                 (long long)(a->row.last_window_us / 1000000 - T0));
    if ((v = scn_kv_get(kv, "alerts")) && num_u64(s, v) != s->n_alerts)
        scn_fail(s, "expected %s alert rows in all, got %zu", v, s->n_alerts);
    if ((v = scn_kv_get(kv, "summary_has")) && !strstr(a->summary, v))
        scn_fail(s, "summary \"%s\" lacks \"%s\"", a->summary, v);
}

/* ---- one scenario ---- */

static void run_scenario(void **state)
{
    const char *path = *state;
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    struct scn s;
    memset(&s, 0, sizeof s);
    s.file = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char line[2048];
    char *config = NULL;
    size_t config_len = 0;
    bool in_config = false;
    while (fgets(line, sizeof line, f)) {
        s.line++;
        if (in_config) {
            if (strcmp(line, "end\n") == 0 || strcmp(line, "end") == 0) {
                in_config = false;
                continue;
            }
            size_t l = strlen(line);
            config = xrealloc(config, config_len + l + 1);
            memcpy(config + config_len, line, l + 1);
            config_len += l;
            continue;
        }
        char *p = line + strspn(line, " \t");
        if (*p == '#' || *p == '\n' || *p == '\0')
            continue;
        if (strncmp(p, "config", 6) == 0 && (p[6] == '\n' || p[6] == ' ')) {
            if (s.cfg)
                scn_fail(&s, "config must come before everything else");
            in_config = true;
            continue;
        }
        if (!s.cfg) {
            struct cfg_errors errs = {0};
            s.cfg = cfg_parse(s.file, config ? config : default_config, &errs);
            if (!s.cfg) {
                for (size_t i = 0; i < errs.n; i++)
                    print_error("%s: %s: %s\n", s.file, errs.items[i].jpath, errs.items[i].msg);
                cfg_errors_free(&errs);
                scn_fail(&s, "config does not parse");
            }
        }
        struct scn_kv kv;
        scn_kv_split(p, &kv);
        if (kv.n_pos == 0)
            scn_fail(&s, "a line must start with a word");
        const char *w = kv.pos[0];
        if (strcmp(w, "sample") == 0) {
            parse_sample(&s, &kv);
        } else if (strcmp(w, "flow") == 0) {
            parse_flow(&s, &kv);
        } else if (strcmp(w, "transfer") == 0) {
            parse_transfer(&s, &kv);
        } else if (strcmp(w, "window") == 0) {
            end_window(&s);
            if (kv.n_pos < 2)
                scn_fail(&s, "window T");
            s.window = (int64_t)num_f(&s, kv.pos[1]);
            s.in_window = true;
            reconcile_window(&s);
        } else if (!s.in_window) {
            scn_fail(&s, "%s outside a window block", w);
        } else if (strcmp(w, "cell") == 0) {
            expect_cell(&s, &kv);
        } else if (strcmp(w, "link") == 0) {
            expect_link(&s, &kv);
        } else if (strcmp(w, "rollup") == 0) {
            expect_rollup(&s, &kv);
        } else if (strcmp(w, "alert") == 0) {
            expect_alert(&s, &kv);
        } else {
            scn_fail(&s, "unknown line \"%s\"", w);
        }
    }
    end_window(&s);
    fclose(f);
    for (size_t i = 0; i < s.n_hists; i++)
        free(s.hists[i].w);
    free(s.hists);
    free(s.alerts);
    free(s.samples);
    free(s.flows);
    free(s.transfers);
    for (size_t i = 0; i < s.n_strings; i++)
        free(s.strings[i]);
    free(s.strings);
    free(config);
    cfg_free(s.cfg);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct CMUnitTest *)a)->name, ((const struct CMUnitTest *)b)->name);
}

int main(void)
{
    const char *dir = SCENARIO_DIR;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "cannot open %s\n", dir);
        return 1;
    }
    struct CMUnitTest *tests = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".scn") != 0)
            continue;
        tests = xrealloc(tests, (n + 1) * sizeof *tests);
        char *path = xrealloc(NULL, strlen(dir) + l + 2);
        sprintf(path, "%s/%s", dir, e->d_name);
        tests[n] = (struct CMUnitTest){
            .name = strdup(e->d_name), .test_func = run_scenario, .initial_state = path};
        n++;
    }
    closedir(d);
    qsort(tests, n, sizeof *tests, by_name);
    if (n == 0) {
        fprintf(stderr, "no scenarios in %s\n", dir);
        return 1;
    }
    int rc = _cmocka_run_group_tests("recon_core scenarios", tests, n, NULL, NULL);
    for (size_t i = 0; i < n; i++) {
        free((void *)tests[i].name);
        free(tests[i].initial_state);
    }
    free(tests);
    return rc;
}
