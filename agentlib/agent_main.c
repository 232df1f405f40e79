/* wanledger-agent: counts socket (and NFS) bytes per process in the kernel, drains them every
 * window, joins owners, samples and reports to the reconciler (DESIGN.md "The agent"). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/buffer.h>

#include "agent_nfs_hook.h"
#include "agent_opts.h"
#include "agentmetrics.h"
#include "drainstate.h"
#include "flowset.h"
#include "hostport.h"
#include "listenroles.h"
#include "localaddr.h"
#include "log.h"
#include "nfslocal.h"
#include "nfsops.h"
#include "prisample.h"
#include "procmeta.h"
#include "report.h"
#include "sender.h"
#include "sockprobe.h"
#include "throttle_agent.h"
#include "timeutil.h"

#ifdef WL_HAVE_NFS_PROBE
#include "nfs_probe.h"
#endif

#define FLUSH_INTERVAL_S 5
#define PRUNE_WINDOWS    10
#define NFS_LOCAL_TTL_S  300 /* how long an NFS server's client address is reused */
#define LATE_MAX_REPORTS 60  /* empty reports sent for windows a late drain skipped, at most */
#define LATE_GRACE_MAX_S 5   /* a drain later than min(W/2, this) after its window's end is late */

/* The reasons a "lost" span gives (README.md "Restarts", "Late ticks"); compared by address. */
static const char LOST_RESTART[] = "restarted_without_pinned_probe";
static const char LOST_LATE[] = "late_drain";

/* Counts the agent could not place in a window: [from, to) and why; to == 0 means none. */
struct lost_span {
    int64_t from_us, to_us;
    const char *reason;
};

struct agent {
    struct agent_opts o;
    struct event_base *base;
    struct event *tick, *flush, *sigterm, *sigint;
    struct evhttp *http;
    struct sockprobe *probe;
    struct throttle_agent *throttle;
    const struct agent_nfs_hook *nfs;
    void *nfs_h;
    struct nfslocal *nfs_local;
    struct procmeta *meta;
    struct sender *sender;
    struct flowset fs;
    struct nfsops nfsops; /* the window's NFS records with latency, for /metrics */
    struct agentmetrics m;
    char agent_id[80];
    char seq_path[PATH_MAX];
    uint64_t seq;         /* last seq used */
    int64_t window_start; /* start of the window being counted now (us) */
    char pin_dir[PATH_MAX];
    bool durable;          /* drain state kept in the spool directory (drainstate.h) */
    struct drainstate ds;  /* as of the last committed drain */
    struct lost_span lost; /* a loss not reported yet: the next report carries it */
    int exit_code;
};

static int libbpf_log(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
    char line[1024];
    if (lvl == LIBBPF_DEBUG && log_get_level() < LOG_LVL_DEBUG)
        return 0;
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_debug("libbpf", "%s", line);
    return 0;
}

/* CAP_BPF (39) + CAP_PERFMON (38), or CAP_SYS_ADMIN (21), from /proc/self/status. */
static int has_bpf_caps(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    char line[256];
    unsigned long long eff = 0;
    if (!f)
        return 1; /* cannot tell: let the load say */
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "CapEff: %llx", &eff) == 1)
            break;
    fclose(f);
    int bpf = (eff >> 39) & 1, perfmon = (eff >> 38) & 1, admin = (eff >> 21) & 1;
    return admin || (bpf && perfmon);
}

/* libbpf attaches the classic tracepoints (syscalls, sock:inet_sock_set_state) through tracefs;
 * a fresh host may not have it mounted. */
static void ensure_tracefs(void)
{
    if (access("/sys/kernel/tracing/events", F_OK) == 0 ||
        access("/sys/kernel/debug/tracing/events", F_OK) == 0)
        return;
    if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0)
        log_info(NULL, "mounted tracefs on /sys/kernel/tracing");
    else
        log_warn(NULL, "tracefs is not mounted and mounting it failed: %s", strerror(errno));
}

/* agent_id and the last seq live in the spool directory so that a restart continues the
 * sequence (the reconciler deduplicates on agent_id+seq: reusing a seq would lose a report). */
static int load_identity(struct agent *a)
{
    char path[PATH_MAX];
    if (mkdir(a->o.spool_dir, 0700) != 0 && errno != EEXIST) {
        if (!a->o.to_stdout) {
            log_error(NULL, "--spool %s: %s", a->o.spool_dir, strerror(errno));
            return -1;
        }
        log_warn(NULL, "--spool %s: %s; seq starts at 1 and agent_id is new", a->o.spool_dir,
                 strerror(errno));
    }
    snprintf(path, sizeof(path), "%s/agent_id", a->o.spool_dir);
    if (a->o.agent_id) {
        snprintf(a->agent_id, sizeof(a->agent_id), "%s", a->o.agent_id);
    } else {
        FILE *f = fopen(path, "re");
        if (f) {
            if (!fgets(a->agent_id, sizeof(a->agent_id), f))
                a->agent_id[0] = '\0';
            fclose(f);
            a->agent_id[strcspn(a->agent_id, "\r\n")] = '\0';
        }
        if (!a->agent_id[0]) {
            unsigned char r[16];
            if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
                log_error(NULL, "getrandom: %s", strerror(errno));
                return -1;
            }
            for (size_t i = 0; i < sizeof(r); i++)
                snprintf(a->agent_id + 2 * i, 3, "%02x", r[i]);
            if (drainstate_write_file(path, a->agent_id, strlen(a->agent_id)) != 0)
                log_warn(NULL, "cannot keep agent_id in %s: %s", path, strerror(errno));
        }
    }
    snprintf(a->seq_path, sizeof(a->seq_path), "%s/seq", a->o.spool_dir);
    FILE *f = fopen(a->seq_path, "re");
    if (f) {
        unsigned long long s = 0;
        if (fscanf(f, "%llu", &s) == 1)
            a->seq = s;
        fclose(f);
    }
    return 0;
}

static void save_seq(struct agent *a)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)a->seq);
    if (drainstate_write_file(a->seq_path, buf, strlen(buf)) != 0)
        log_warn(NULL, "cannot record seq in %s: %s", a->seq_path, strerror(errno));
}

/* The pin directory: --pin-dir, or /sys/fs/bpf/wanledger/AGENT_ID (characters other than
 * [A-Za-z0-9._-] as '_'); empty for "none". */
static void choose_pin_dir(struct agent *a)
{
    if (a->o.pin_dir && strcmp(a->o.pin_dir, "none") == 0) {
        a->pin_dir[0] = '\0';
        return;
    }
    if (a->o.pin_dir) {
        snprintf(a->pin_dir, sizeof(a->pin_dir), "%s", a->o.pin_dir);
        return;
    }
    int n = snprintf(a->pin_dir, sizeof(a->pin_dir), "/sys/fs/bpf/wanledger/");
    for (const char *p = a->agent_id; *p && n < (int)sizeof(a->pin_dir) - 1; p++, n++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '-' || c == '_';
        a->pin_dir[n] = ok && !(c == '.' && (p == a->agent_id)) ? c : '_';
    }
    a->pin_dir[n] = '\0';
}

/* Before the probe opens: the drain state of the previous run says which pinned probe is ours. */
static void load_drain_state(struct agent *a, struct sockprobe_opts *po)
{
    char err[512];
    struct stat sb;
    a->durable =
        stat(a->o.spool_dir, &sb) == 0 && S_ISDIR(sb.st_mode) && access(a->o.spool_dir, W_OK) == 0;
    memset(&a->ds, 0, sizeof(a->ds));
    if (!a->durable)
        return;
    int r = drainstate_load(a->o.spool_dir, &a->ds, err, sizeof(err));
    if (r < 0)
        log_warn(NULL, "ignoring the drain state: %s", err);
    if (r <= 0)
        memset(&a->ds, 0, sizeof(a->ds));
    if (a->pin_dir[0]) {
        po->pin_dir = a->pin_dir;
        po->adopt_token = a->ds.token;
        po->adopt_obj_hash = a->ds.obj_hash;
    }
}

/* After the probe and the sender exist: finishes what the previous run left half done (a report
 * kept in drain_pending is submitted again, its generation zeroed; a flip without a report is
 * undone), or, when the probe is new, records what the previous run's counts lost. */
static void resume_drain(struct agent *a)
{
    char err[512], ctx[64];
    struct drainstate pst;
    char *body = NULL;
    size_t len = 0;
    bool adopted = sockprobe_adopted(a->probe);
    bool had_state = a->ds.seq > 0 || a->ds.token != 0;
    if (!a->durable)
        return;
    int r = drainstate_pending_load(a->o.spool_dir, &pst, &body, &len, err, sizeof(err));
    if (r < 0)
        log_warn(NULL, "ignoring the pending report: %s", err);
    if (r > 0 && pst.seq > a->ds.seq) {
        snprintf(ctx, sizeof(ctx), "%s seq %llu", a->o.host, (unsigned long long)pst.seq);
        log_info(ctx, "submitting the report the previous run kept before it stopped");
        if (sender_submit(a->sender, body, len, err, sizeof(err)) != 0)
            log_error(ctx, "report lost: %s", err);
        if (adopted && sockprobe_gen(a->probe) == pst.gen &&
            sockprobe_zero_gen(a->probe, pst.zero_gen, err, sizeof(err)) != 0)
            log_error("socket", "finishing the previous drain: %s", err);
        a->ds = pst;
        had_state = true;
    }
    free(body);
    if (a->ds.seq > a->seq)
        a->seq = a->ds.seq;
    if (adopted) {
        if (sockprobe_gen(a->probe) != a->ds.gen) {
            log_info("socket", "the previous run flipped without reporting: flipping back");
            sockprobe_set_gen(a->probe, a->ds.gen);
        }
        sockprobe_set_drops_seen(a->probe, a->ds.drops_seen);
    } else if (had_state && a->ds.window_end_us > 0) {
        /* a loss an earlier run recorded but never reported is extended, not forgotten */
        a->lost.from_us = a->ds.lost_to_us > 0 ? a->ds.lost_from_us : a->ds.window_end_us;
        a->lost.to_us = tm_now_us();
        a->lost.reason = LOST_RESTART;
        char f[TM_RFC3339_LEN], t[TM_RFC3339_LEN];
        log_warn("socket",
                 "counts from %s to %s are lost (the previous run's probe is gone); "
                 "the next report says so",
                 tm_format_rfc3339(a->lost.from_us, f), tm_format_rfc3339(a->lost.to_us, t));
    }
    if (adopted && a->ds.lost_to_us > 0) { /* still to report */
        a->lost.from_us = a->ds.lost_from_us;
        a->lost.to_us = a->ds.lost_to_us;
        a->lost.reason = a->ds.lost_late ? LOST_LATE : LOST_RESTART;
    }
    a->ds.lost_from_us = a->lost.from_us;
    a->ds.lost_to_us = a->lost.to_us;
    a->ds.lost_late = a->lost.reason == LOST_LATE;
    drainstate_pending_clear(a->o.spool_dir);
    a->ds.gen = sockprobe_gen(a->probe);
    a->ds.zero_gen = 0;
    a->ds.token = sockprobe_token(a->probe);
    a->ds.obj_hash = sockprobe_obj_hash();
    if (!adopted)
        a->ds.drops_seen = 0;
    if (a->ds.window_end_us == 0)
        a->ds.window_end_us = tm_now_us();
    a->ds.seq = a->seq;
    if (drainstate_save(a->o.spool_dir, &a->ds) != 0)
        log_warn(NULL, "cannot save %s/drain_state: %s", a->o.spool_dir, strerror(errno));
}

static void update_send_metrics(struct agent *a)
{
    struct sender_stats st;
    sender_stats(a->sender, &st);
    a->m.reports_sent = st.sent;
    a->m.reports_rejected = st.rejected;
    a->m.send_failures = st.failures;
    a->m.reports_spooled = st.spooled;
    a->m.spool_dropped = st.spool_dropped;
}

/* Hands one report to the sender so that neither a crash nor SIGKILL at any point loses or
 * doubles its counts: the report is first kept in drain_pending with the generation it was read
 * from, then submitted, then that generation is zeroed and the clean state saved (drainstate.h);
 * a restart finds either the clean state or the pending report and finishes the step. The report
 * carries a->lost, which is cleared. */
static void submit_report(struct agent *a, const char *ctx, const char *body, bool collected,
                          uint32_t drained_gen, int64_t window_start)
{
    char err[512] = "";
    size_t len = strlen(body);
    struct drainstate next = a->ds;
    next.seq = a->seq;
    next.gen = sockprobe_gen(a->probe);
    next.zero_gen = drained_gen;
    next.window_end_us = window_start + (int64_t)a->o.window_seconds * TM_USEC_PER_SEC;
    next.lost_from_us = next.lost_to_us = 0; /* this report carries the loss */
    next.lost_late = false;
    bool pending = a->durable && drainstate_pending_save(a->o.spool_dir, &next, body, len) == 0;
    if (a->durable && !pending)
        log_warn(ctx, "cannot keep the report in %s/drain_pending (%s): a crash now would lose it",
                 a->o.spool_dir, strerror(errno));
    if (!a->o.to_stdout)
        save_seq(a);
    if (sender_submit(a->sender, body, len, err, sizeof(err)) != 0)
        log_error(ctx, "report lost: %s", err);
    if (collected && sockprobe_commit(a->probe, err, sizeof(err)) != 0)
        log_error("socket", "drain: %s", err);
    next.drops_seen = sockprobe_drops_seen(a->probe);
    a->ds = next;
    a->lost = (struct lost_span){0};
    if (a->durable && drainstate_save(a->o.spool_dir, &a->ds) != 0)
        log_warn(ctx, "cannot save %s/drain_state: %s", a->o.spool_dir, strerror(errno));
    if (pending)
        drainstate_pending_clear(a->o.spool_dir);
}

/* What one report says besides its flows. */
struct report_args {
    int64_t window_start;
    uint64_t dropped;
    size_t seen;
    double tau;
    bool collected;
    uint32_t drained_gen;
};

/* Formats fs as the next seq's report for r->window_start, carrying a->lost, and submits it.
 * 0, or -1 when it could not be formatted (out of memory): seq is not used, nothing is sent. */
static int send_report(struct agent *a, const struct flowset *fs, const struct report_args *r)
{
    char err[512] = "", ctx[96];
    a->seq++;
    struct report_header h = {
        .host = a->o.host,
        .agent_id = a->agent_id,
        .seq = a->seq,
        .window_start_us = r->window_start,
        .window_seconds = a->o.window_seconds,
        .dropped_events = r->dropped,
        .k = a->o.k,
        .threshold = r->tau,
        .flows_seen = r->seen,
        .lost_from_us = a->lost.from_us,
        .lost_to_us = a->lost.to_us,
        .lost_reason = a->lost.reason,
        .spool_dropped_reports = a->m.spool_dropped,
        .version = a->o.report_version,
    };
    snprintf(ctx, sizeof(ctx), "%s seq %llu", a->o.host, (unsigned long long)a->seq);
    char *body = report_json(&h, fs, err, sizeof(err));
    if (!body) {
        log_error(ctx, "%s", err);
        a->seq--;
        return -1;
    }
    submit_report(a, ctx, body, r->collected, r->drained_gen, r->window_start);
    free(body);
    return 0;
}

/* A late drain's counts are already reported as lost (a->lost) but their report could not be
 * sent: they are zeroed all the same, so that they never land in a later window, and the loss
 * stays in the drain state for the next report. */
static void discard_late_drain(struct agent *a)
{
    char err[512] = "";
    if (sockprobe_commit(a->probe, err, sizeof(err)) != 0)
        log_error("socket", "drain: %s", err);
    a->ds.gen = sockprobe_gen(a->probe);
    a->ds.drops_seen = sockprobe_drops_seen(a->probe);
    a->ds.lost_from_us = a->lost.from_us;
    a->ds.lost_to_us = a->lost.to_us;
    a->ds.lost_late = a->lost.reason == LOST_LATE;
    if (a->durable && drainstate_save(a->o.spool_dir, &a->ds) != 0)
        log_warn(NULL, "cannot save %s/drain_state: %s", a->o.spool_dir, strerror(errno));
}

/* Drains everything counted since the previous drain and reports it as window_start. With
 * late_to > 0 the drain ran late (README.md "Late ticks"): what it read cannot be placed in time,
 * so the report is empty and says the span [late_from, late_to) was lost (late_drain). *carried
 * (may be NULL) is set to the loss the report carried: the skipped windows' reports repeat it. */
static void report_window(struct agent *a, int64_t window_start, int64_t late_from, int64_t late_to,
                          struct lost_span *carried)
{
    char err[512] = "";
    struct report_args r = {.window_start = window_start};
    flowset_clear(&a->fs);

    int64_t t0 = tm_mono_ns();
    r.collected =
        sockprobe_collect(a->probe, &a->fs, &r.dropped, &r.drained_gen, err, sizeof(err)) == 0;
    if (!r.collected) {
        log_error("socket", "drain: %s", err);
        a->m.drain_errors++;
    }
    agentmetrics_drain_time(&a->m, (uint64_t)(tm_mono_ns() - t0));
    if (a->nfs_h) {
        uint64_t nfs_dropped = 0;
        nfsops_clear(&a->nfsops);
        if (a->nfs->drain(a->nfs_h, &a->fs, &a->nfsops, &nfs_dropped, err, sizeof(err)) != 0) {
            log_error(a->nfs->name, "drain: %s", err);
            a->m.drain_errors++;
        }
        r.dropped += nfs_dropped;
        nfslocal_fill(a->nfs_local, &a->fs, tm_now_us());
    }
    localaddr_drop_self(&a->fs, NULL);
    uint64_t late_bytes = 0;
    for (size_t i = 0; i < a->fs.n; i++) {
        const struct flow_rec *f = &a->fs.v[i];
        bool sock = f->source == FLOW_SRC_SOCKET;
        late_bytes += sock ? f->tx_bytes + f->rx_bytes : f->bytes;
        if (!sock)
            continue;
        a->m.events += f->tx_calls + f->rx_calls;
        a->m.tx_bytes += f->tx_bytes;
        a->m.rx_bytes += f->rx_bytes;
    }
    if (late_to > 0) {
        a->m.late_bytes += late_bytes;
        flowset_clear(&a->fs); /* counted somewhere in [window_start, late_to): not placed */
        if (a->lost.to_us > 0) {
            a->lost.to_us = late_to; /* a loss not reported yet is extended */
        } else {
            a->lost = (struct lost_span){late_from, late_to, LOST_LATE};
        }
    }
    listenroles_fill(&a->fs, NULL);
    procmeta_join(a->meta, &a->fs);
    if (a->nfs_h) {
        procmeta_join_more(a->meta, &a->nfsops.recs);
        agentmetrics_nfs_window(&a->m, &a->nfsops);
    }

    r.seen = a->fs.n;
    if (prisample_flowset(&a->fs, a->o.k, (a->seq + 1) ^ (uint64_t)window_start, &r.tau) != 0)
        log_error(NULL, "sampling: out of memory; reporting all %zu flows", r.seen);
    if (carried)
        *carried = a->lost;
    if (send_report(a, &a->fs, &r) != 0 && r.collected) {
        if (late_to > 0)
            discard_late_drain(a);
        else
            sockprobe_abort(a->probe); /* the counts wait for the next window */
    }
    char ctx[96];
    snprintf(ctx, sizeof(ctx), "%s seq %llu", a->o.host, (unsigned long long)a->seq);
    if (r.dropped)
        log_warn(ctx, "%llu events dropped (flow map full: raise --map-entries)",
                 (unsigned long long)r.dropped);
    if (late_to > 0)
        log_warn(ctx, "late drain: %llu bytes counted in the span reported as lost",
                 (unsigned long long)late_bytes);
    log_debug(ctx, "%zu flows seen, %zu reported, tau %.0f", r.seen, a->fs.n, r.tau);
    a->m.windows++;
    a->m.dropped_events += r.dropped;
    a->m.flows_seen += r.seen;
    a->m.flows_reported += a->fs.n;
    update_send_metrics(a);
    procmeta_prune(a->meta, PRUNE_WINDOWS);
}

static void arm_tick(struct agent *a)
{
    int64_t now = tm_now_us();
    int64_t w = (int64_t)a->o.window_seconds * TM_USEC_PER_SEC;
    int64_t next = a->window_start + w;
    if (next <= now)
        next = tm_window_start(now, a->o.window_seconds) + w;
    struct timeval tv = {.tv_sec = (next - now) / TM_USEC_PER_SEC,
                         .tv_usec = (next - now) % TM_USEC_PER_SEC};
    evtimer_add(a->tick, &tv);
}

/* An empty report for window_start (nothing drained, no flows) carrying the span as lost: one of
 * the windows a late drain skipped (README.md "Late ticks"). */
static void report_skipped(struct agent *a, int64_t window_start, const struct lost_span *span)
{
    struct flowset empty;
    memset(&empty, 0, sizeof(empty));
    struct report_args r = {.window_start = window_start};
    struct lost_span pending = a->lost;
    a->lost = *span;
    if (send_report(a, &empty, &r) != 0) {
        a->lost = pending;
        a->m.windows_skipped_unreported++;
        return;
    }
    a->m.windows++;
}

/* Reports what was counted up to now. On time (now before the end of the window being counted
 * plus the grace, min(W/2, LATE_GRACE_MAX_S)): that window, with everything drained. Late: the
 * drain's counts are reported as lost from the window's start to now, and every window that
 * passed without its drain gets a report (the first carries the drain, the others are empty),
 * the newest LATE_MAX_REPORTS of them; the rest are counted as unreported. Returns the start of
 * the window counted next. */
static int64_t drain_due(struct agent *a, int64_t now)
{
    int64_t w = (int64_t)a->o.window_seconds * TM_USEC_PER_SEC;
    int64_t grace = w / 2 < (int64_t)LATE_GRACE_MAX_S * TM_USEC_PER_SEC
                        ? w / 2
                        : (int64_t)LATE_GRACE_MAX_S * TM_USEC_PER_SEC;
    int64_t ended = a->window_start;
    int64_t cur = tm_window_start(now, a->o.window_seconds);
    if (now < ended + w + grace) {
        report_window(a, ended, 0, 0, NULL);
        return cur > ended ? cur : ended + w;
    }
    int64_t skipped = (cur - ended) / w; /* >= 1: cur >= ended + w */
    int64_t sent = skipped < LATE_MAX_REPORTS ? skipped : LATE_MAX_REPORTS;
    int64_t first = cur - sent * w;
    char f[TM_RFC3339_LEN];
    log_warn(NULL,
             "late tick: %lld window(s) from %s passed without a drain; their counts are "
             "reported as lost (late_drain) in %lld report(s)",
             (long long)skipped, tm_format_rfc3339(ended, f), (long long)sent);
    a->m.late_ticks++;
    a->m.windows_skipped += (uint64_t)skipped;
    a->m.windows_skipped_unreported += (uint64_t)(skipped - sent);
    struct lost_span carried;
    report_window(a, first, ended, now, &carried);
    for (int64_t ws = first + w; ws < cur; ws += w)
        report_skipped(a, ws, &carried);
    update_send_metrics(a);
    return cur;
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct agent *a = arg;
    (void)fd;
    (void)what;
    /* The timer runs on the monotonic clock and may fire a little before the wall-clock
     * boundary: report the window being counted, whatever the clock says now. */
    a->window_start = drain_due(a, tm_now_us());
    if (a->o.once) {
        event_base_loopbreak(a->base);
        return;
    }
    arm_tick(a);
}

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    struct agent *a = arg;
    (void)fd;
    (void)what;
    update_send_metrics(a); /* delivery itself runs on the sender's thread (common/deliver.c) */
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct agent *a = arg;
    (void)what;
    log_info(NULL, "signal %d: reporting the partial window and exiting", (int)sig);
    drain_due(a, tm_now_us());
    event_base_loopbreak(a->base);
}

static void on_metrics(struct evhttp_request *req, void *arg)
{
    struct agent *a = arg;
    char *text = agentmetrics_render(&a->m);
    char *thr = a->throttle ? throttle_agent_metrics(a->throttle) : NULL;
    struct evbuffer *b = evbuffer_new();
    char *dtext = NULL;
    size_t dlen = 0;
    FILE *df = open_memstream(&dtext, &dlen);
    if (df) {
        sender_metrics(a->sender, df);
        fclose(df);
    }
    if (!text || !b || !dtext) {
        evhttp_send_error(req, 500, "out of memory");
    } else {
        evbuffer_add(b, text, strlen(text));
        evbuffer_add(b, dtext, dlen);
        if (thr)
            evbuffer_add(b, thr, strlen(thr));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          "text/plain; version=0.0.4");
        evhttp_send_reply(req, 200, "OK", b);
    }
    if (b)
        evbuffer_free(b);
    free(text);
    free(dtext);
    free(thr);
}

static int start_metrics(struct agent *a)
{
    struct hostport hp; /* "127.0.0.1:9465", "[::1]:9465" (checked by agent_opts.c) */
    char why[300];
    if (hostport_parse(a->o.metrics, strlen(a->o.metrics), 0, &hp, why, sizeof(why)) != 0) {
        log_error(NULL, "--metrics %s", why);
        return -1;
    }
    a->http = evhttp_new(a->base);
    if (!a->http || evhttp_bind_socket(a->http, hp.host, hp.port) != 0) {
        log_error(NULL, "--metrics %s: cannot listen there", a->o.metrics);
        return -1;
    }
    evhttp_set_cb(a->http, "/metrics", on_metrics, a);
    return 0;
}

/* Filters from --netns and --cgroup: the namespace file's inode, the cgroup directory's inode
 * (its cgroup v2 id) and depth. */
static int probe_filters(const struct agent_opts *o, struct sockprobe_opts *po)
{
    struct stat st;
    memset(po, 0, sizeof(*po));
    po->attach = o->attach;
    po->map_entries = o->map_entries;
    memcpy(po->excl_ports, o->excl_ports, sizeof(po->excl_ports));
    po->n_excl_ports = o->n_excl_ports;
    if (o->netns) {
        if (stat(o->netns, &st) != 0) {
            log_error(NULL, "--netns %s: %s", o->netns, strerror(errno));
            return -1;
        }
        po->netns_ino = (uint32_t)st.st_ino;
    }
    if (o->cgroup) {
        char real[PATH_MAX], root[PATH_MAX];
        if (procmeta_cgroup2_root(root, sizeof(root)) != 0) {
            log_error(NULL, "--cgroup %s: this host has no cgroup v2 mount", o->cgroup);
            return -1;
        }
        if (!realpath(o->cgroup, real) || stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
            log_error(NULL, "--cgroup %s: not a cgroup directory (%s)", o->cgroup, strerror(errno));
            return -1;
        }
        size_t rl = strlen(root);
        if (strncmp(real, root, rl) != 0 || (real[rl] != '/' && real[rl] != '\0')) {
            log_error(NULL, "--cgroup %s: not under the cgroup v2 mount %s", o->cgroup, root);
            return -1;
        }
        po->cgroup_id = st.st_ino;
        po->cgroup_level = 0;
        for (const char *p = real + rl; *p; p++)
            if (*p == '/' && p[1])
                po->cgroup_level++;
    }
    return 0;
}

static void agent_free(struct agent *a)
{
    if (a->nfs && a->nfs_h)
        a->nfs->close(a->nfs_h);
    throttle_agent_stop(a->throttle);
    if (a->tick)
        event_free(a->tick);
    if (a->flush)
        event_free(a->flush);
    if (a->sigterm)
        event_free(a->sigterm);
    if (a->sigint)
        event_free(a->sigint);
    if (a->http)
        evhttp_free(a->http);
    if (a->base)
        event_base_free(a->base);
    if (a->o.release_pins)
        sockprobe_release(a->probe);
    else
        sockprobe_close(a->probe);
    nfslocal_free(a->nfs_local);
    procmeta_free(a->meta);
    sender_free(a->sender);
    flowset_free(&a->fs);
    nfsops_free(&a->nfsops);
    agentmetrics_free(&a->m);
    agent_opts_free(&a->o);
}

/* The NFS probe, where the build has one: not loading it is a warning (no NFS bytes), -1 only
 * when out of memory. */
static int open_nfs(struct agent *a)
{
#ifdef WL_HAVE_NFS_PROBE
    char err[1024] = "";
    a->nfs = &nfs_probe_hook;
    a->nfs_h = a->nfs->open(&a->o, err, sizeof(err));
    if (a->nfs_h) {
        a->m.nfs = a->nfs->name;
        a->nfs_local = nfslocal_new((int64_t)NFS_LOCAL_TTL_S * TM_USEC_PER_SEC);
        if (!a->nfs_local) {
            log_error(NULL, "out of memory");
            return -1;
        }
    } else {
        log_warn(a->nfs->name, "not counting NFS: %s", err);
    }
#else
    (void)a;
#endif
    return 0;
}

/* The report sender (url: the attributions URL from --reconciler, for the start-up line). */
static int start_sender(struct agent *a, char *url, size_t urlcap)
{
    char err[1024] = "";
    url[0] = 0;
    if (a->o.reconciler) {
        size_t n = strlen(a->o.reconciler);
        const char *suffix = "/v1/attributions";
        int full = n >= strlen(suffix) && strcmp(a->o.reconciler + n - strlen(suffix), suffix) == 0;
        snprintf(url, urlcap, "%.*s%s", (int)(n && a->o.reconciler[n - 1] == '/' ? n - 1 : n),
                 a->o.reconciler, full ? "" : suffix);
    }
    struct sender_opts so = {
        .url = a->o.reconciler ? url : NULL,
        .token = a->o.token,
        .spool_dir = a->o.spool_dir,
        .spool_max_bytes = a->o.spool_max_bytes,
        .compress = a->o.compress,
        .tls = {.ca_file = a->o.ca_file,
                .cert_file = a->o.client_cert,
                .key_file = a->o.client_key,
                .allow_plain_remote = a->o.allow_plain_http},
        .out = a->o.to_stdout ? stdout : NULL,
    };
    char spool_sub[PATH_MAX];
    snprintf(spool_sub, sizeof(spool_sub), "%s/reports", a->o.spool_dir);
    so.spool_dir = spool_sub;
    a->sender = sender_new(&so, err, sizeof(err));
    if (!a->sender) {
        log_error(NULL, "%s", err);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct agent a;
    char err[1024] = "";
    memset(&a, 0, sizeof(a));
    log_set_program("wanledger-agent");
    int r = agent_opts_parse(&a.o, argc, argv, err, sizeof(err));
    if (r != 0) {
        if (r < 0)
            log_error(NULL, "%s", err);
        agent_opts_free(&a.o);
        return r < 0 ? 2 : 0;
    }
    if (a.o.verbose)
        log_set_level(LOG_LVL_DEBUG);
    a.exit_code = 1;
    libbpf_set_print(libbpf_log);
    if (!has_bpf_caps()) {
        log_error(NULL, "needs root or CAP_BPF+CAP_PERFMON to load its eBPF probes "
                        "(run as root, or: setcap cap_bpf,cap_perfmon+ep wanledger-agent)");
        goto cleanup;
    }
    if (load_identity(&a) != 0)
        goto cleanup;
    ensure_tracefs();

    struct sockprobe_opts po;
    if (probe_filters(&a.o, &po) != 0) {
        a.exit_code = 2;
        goto cleanup;
    }
    choose_pin_dir(&a);
    load_drain_state(&a, &po);
    a.probe = sockprobe_open(&po, err, sizeof(err));
    if (!a.probe) {
        log_error("socket", "cannot load the socket probe: %s", err);
        goto cleanup;
    }
    a.m.attach_mode = sockprobe_mode_name(sockprobe_mode(a.probe));
    log_info("socket", "attach mode %s%s", a.m.attach_mode,
             a.o.attach == SOCKPROBE_AUTO ? " (probed)" : " (--attach)");
    if (open_nfs(&a) != 0)
        goto cleanup;
    a.meta = procmeta_new((const char *const *)a.o.workflow_env, a.o.n_workflow_env, NULL, NULL,
                          err, sizeof(err));
    if (!a.meta || (a.o.kube_logs && procmeta_set_kube_logs(a.meta, a.o.kube_logs) != 0)) {
        log_error(NULL, "%s", a.meta ? "out of memory" : err);
        goto cleanup;
    }
    char url[1024];
    if (start_sender(&a, url, sizeof(url)) != 0)
        goto cleanup;
    resume_drain(&a);

    a.base = event_base_new();
    if (!a.base) {
        log_error(NULL, "cannot create the event loop");
        goto cleanup;
    }
    a.tick = evtimer_new(a.base, on_tick, &a);
    a.flush = event_new(a.base, -1, EV_PERSIST, on_flush, &a);
    a.sigterm = evsignal_new(a.base, SIGTERM, on_signal, &a);
    a.sigint = evsignal_new(a.base, SIGINT, on_signal, &a);
    if (!a.tick || !a.flush || !a.sigterm || !a.sigint) {
        log_error(NULL, "cannot create events");
        goto cleanup;
    }
    struct timeval fl = {.tv_sec = FLUSH_INTERVAL_S};
    event_add(a.flush, &fl);
    event_add(a.sigterm, NULL);
    event_add(a.sigint, NULL);
    if (a.o.metrics && start_metrics(&a) != 0)
        goto cleanup;
    a.throttle = throttle_agent_from_opts(a.base, &a.o, a.agent_id, po.netns_ino);
    a.window_start = tm_window_start(tm_now_us(), a.o.window_seconds);
    arm_tick(&a);
    log_info(NULL, "agent %s on %s: %ds windows, k=%zu, reporting to %s", a.agent_id, a.o.host,
             a.o.window_seconds, a.o.k, a.o.to_stdout ? "stdout" : url);
    event_base_dispatch(a.base);
    a.exit_code = 0;
cleanup:
    r = a.exit_code;
    agent_free(&a);
    return r;
}
