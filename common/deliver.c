/* Spool-first delivery with a sender thread (common/deliver.h).
 * Threads: the caller's thread only appends to the memory queue (and enforces its bound); the
 * sender thread alone touches the spool and the target. Order is kept by one rule: a body moves
 * from memory to the spool only from the memory queue's head, so everything in the spool is older
 * than everything in memory, and the spool is always sent first. */
#include "deliver.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "spool.h"

#define SPOOL_REOPEN_MS 5000 /* retry opening a spool that could not be opened */
#define SPOOL_RETRY_MS  1000 /* retry writing a spool that failed */

struct ment {
    char *body;
    size_t len;
    int64_t at; /* seconds since the epoch */
    struct ment *next;
};

struct deliver {
    struct deliver_opts o;
    char *strs[7]; /* owned copies of the option strings */
    char *rejdir, *dropfile;
    pthread_t th;
    bool th_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* sender thread only */
    struct spool *sp;
    int64_t sp_retry_at;
    bool unremoved_logged;
    uint64_t sp_drop_seen, sp_drop_bytes_seen;
    /* under mu */
    struct ment *head, *tail, *busy;
    bool stop;
    int drain_ms;
    uint64_t unrep_entries, unrep_bytes; /* dropped, not yet told to the reconciler */
    bool drops_dirty;                    /* unrep_* changed: the sender thread saves them */
    int64_t spool_oldest;
    struct deliver_stats st;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static char *dup_opt(struct deliver *d, int i, const char *s)
{
    if (!s)
        return NULL;
    d->strs[i] = strdup(s);
    return d->strs[i];
}

/* Under mu: mirror the thread-owned spool into the stats. */
static void sync_spool(struct deliver *d)
{
    d->st.spool_entries = d->sp ? spool_count(d->sp) : 0;
    d->st.spool_bytes = d->sp ? spool_bytes(d->sp) : 0;
    d->spool_oldest = d->sp ? spool_oldest_time(d->sp) : 0;
    d->st.c = d->o.target.c;
}

static void load_drops(struct deliver *d)
{
    FILE *f = fopen(d->dropfile, "re");
    unsigned long long n = 0, b = 0;
    if (!f)
        return;
    if (fscanf(f, "%llu %llu", &n, &b) == 2) {
        d->unrep_entries = n;
        d->unrep_bytes = b;
    }
    fclose(f);
}

/* Best effort: the drop counts not yet reported survive a restart when the spool is writable. */
static void save_drops(struct deliver *d, uint64_t n, uint64_t b)
{
    if (n == 0 && b == 0) {
        unlink(d->dropfile);
        return;
    }
    char tmp[4200];
    snprintf(tmp, sizeof(tmp), "%s.tmp", d->dropfile);
    FILE *f = fopen(tmp, "we");
    if (!f)
        return;
    int ok = fprintf(f, "%llu %llu\n", (unsigned long long)n, (unsigned long long)b) > 0;
    if (fclose(f) != 0 || !ok || rename(tmp, d->dropfile) != 0)
        unlink(tmp);
}

/* Under mu. */
static void count_drop(struct deliver *d, uint64_t n, uint64_t bytes)
{
    d->st.dropped_entries += n;
    d->st.dropped_bytes += bytes;
    d->unrep_entries += n;
    d->unrep_bytes += bytes;
    d->drops_dirty = true;
}

/* Sender thread: persists the unreported drop counts when they changed. */
static void flush_drops(struct deliver *d)
{
    pthread_mutex_lock(&d->mu);
    bool dirty = d->drops_dirty;
    uint64_t n = d->unrep_entries, b = d->unrep_bytes;
    d->drops_dirty = false;
    pthread_mutex_unlock(&d->mu);
    if (dirty)
        save_drops(d, n, b);
}

static void ment_free(struct ment *m)
{
    free(m->body);
    free(m);
}

/* Under mu: unlinks the memory head. */
static void pop_head(struct deliver *d)
{
    struct ment *m = d->head;
    d->head = m->next;
    if (!d->head)
        d->tail = NULL;
    d->st.mem_entries--;
    d->st.mem_bytes -= m->len;
    ment_free(m);
}

static void open_spool(struct deliver *d)
{
    char err[512];
    d->sp = spool_open(d->o.spool_dir, d->o.spool_max_bytes, err, sizeof(err));
    d->sp_retry_at = mono_ms() + SPOOL_REOPEN_MS;
    if (!d->sp) {
        if (d->st.spool_ok)
            log_error(d->o.target.name, "%s; sending directly from memory (bound %llu bytes)", err,
                      (unsigned long long)d->o.mem_max_bytes);
        d->st.spool_ok = false;
        return;
    }
    d->sp_drop_seen = spool_dropped(d->sp);
    d->sp_drop_bytes_seen = spool_dropped_bytes(d->sp);
    if (spool_count(d->sp))
        log_info(d->o.target.name, "spool %s holds %zu body(ies) from before; sending them first",
                 d->o.spool_dir, spool_count(d->sp));
}

/* Sender thread: moves memory bodies to the spool, oldest first, until one cannot be written. */
static void move_to_spool(struct deliver *d)
{
    for (;;) {
        pthread_mutex_lock(&d->mu);
        struct ment *m = d->head;
        bool was_ok = d->st.spool_ok;
        if (m)
            d->busy = m; /* deliver_submit's bound never drops it under our feet */
        pthread_mutex_unlock(&d->mu);
        if (!m)
            return;
        int64_t now = mono_ms();
        if (!d->sp && now >= d->sp_retry_at)
            open_spool(d);
        char err[512] = "";
        int rc = -1;
        if (d->sp && (was_ok || now >= d->sp_retry_at)) {
            rc = spool_push(d->sp, m->body, m->len, err, sizeof(err));
            if (rc != 0)
                d->sp_retry_at = now + SPOOL_RETRY_MS;
        }
        pthread_mutex_lock(&d->mu);
        d->busy = NULL;
        if (rc == 0) {
            pop_head(d);
            uint64_t dn = spool_dropped(d->sp) - d->sp_drop_seen;
            uint64_t db = spool_dropped_bytes(d->sp) - d->sp_drop_bytes_seen;
            d->sp_drop_seen += dn;
            d->sp_drop_bytes_seen += db;
            if (dn) {
                count_drop(d, dn, db);
                log_error(d->o.target.name,
                          "spool %s is at its bound of %llu bytes: dropped the %llu oldest "
                          "body(ies), %llu bytes (reported in the next delivered body)",
                          d->o.spool_dir, (unsigned long long)d->o.spool_max_bytes,
                          (unsigned long long)dn, (unsigned long long)db);
            }
            if (!d->st.spool_ok)
                log_info(d->o.target.name, "spool %s can be written again", d->o.spool_dir);
            d->st.spool_ok = true;
        } else if (err[0]) {
            d->st.spool_write_failures++;
            if (d->st.spool_ok)
                log_error(d->o.target.name,
                          "%s; sending directly from memory (bound %llu bytes) until the spool "
                          "can be written",
                          err, (unsigned long long)d->o.mem_max_bytes);
            d->st.spool_ok = false;
        }
        sync_spool(d);
        pthread_mutex_unlock(&d->mu);
        if (rc != 0)
            return;
    }
}

/* The body with "spool_dropped" as its first member (a JSON object body), or NULL. */
static char *splice_drops(const char *body, size_t len, uint64_t n, uint64_t b, size_t *out_len)
{
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
        i++;
    if (i == len || body[i] != '{')
        return NULL;
    size_t j = i + 1;
    while (j < len && (body[j] == ' ' || body[j] == '\n' || body[j] == '\r' || body[j] == '\t'))
        j++;
    char mem[128];
    int ml = snprintf(mem, sizeof(mem), "\"spool_dropped\":{\"entries\":%llu,\"bytes\":%llu}%s",
                      (unsigned long long)n, (unsigned long long)b,
                      j < len && body[j] == '}' ? "" : ",");
    char *out = malloc(len + (size_t)ml + 1);
    if (!out)
        return NULL;
    memcpy(out, body, i + 1);
    memcpy(out + i + 1, mem, (size_t)ml);
    memcpy(out + i + 1 + ml, body + i + 1, len - i - 1);
    *out_len = len + (size_t)ml;
    out[*out_len] = '\0';
    return out;
}

/* Keeps a refused body in SPOOL/rejected/ (or logs its start when that fails). */
static void quarantine(struct deliver *d, const char *body, size_t len, const char *why)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%lld-%llu.json", d->rejdir, (long long)time(NULL),
             (unsigned long long)d->st.rejected);
    mkdir(d->rejdir, 0700);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, body, len) == (ssize_t)len && fsync(fd) == 0;
    if (fd >= 0)
        close(fd);
    if (ok)
        log_error(d->o.target.name, "%s %s: a body of %zu bytes is kept in %s", d->o.target.url,
                  why, len, path);
    else
        log_error(d->o.target.name, "%s %s: a body of %zu bytes could not be kept in %s: %.200s",
                  d->o.target.url, why, len, d->rejdir, body);
}

/* Sends the oldest waiting body once. Returns its class (DELIVER_OK when nothing waits). */
static enum deliver_class send_next(struct deliver *d, int *retry_after_s)
{
    char *body = NULL;
    size_t len = 0;
    bool from_spool = d->sp && spool_count(d->sp) > 0;
    *retry_after_s = -1;
    if (from_spool) {
        if (spool_peek(d->sp, &body, &len) != 1) {
            log_error(d->o.target.name, "spool %s: cannot read the oldest body; skipping it",
                      d->o.spool_dir);
            spool_pop(d->sp);
            pthread_mutex_lock(&d->mu);
            count_drop(d, 1, 0);
            sync_spool(d);
            pthread_mutex_unlock(&d->mu);
            return DELIVER_OK;
        }
    } else {
        pthread_mutex_lock(&d->mu);
        struct ment *m = d->head;
        d->busy = m;
        pthread_mutex_unlock(&d->mu);
        if (!m)
            return DELIVER_OK;
        body = m->body;
        len = m->len;
    }
    pthread_mutex_lock(&d->mu);
    uint64_t ue = d->unrep_entries, ub = d->unrep_bytes;
    pthread_mutex_unlock(&d->mu);
    size_t slen = 0;
    char *spliced = d->o.report_drops && (ue || ub) ? splice_drops(body, len, ue, ub, &slen) : NULL;
    struct deliver_result r;
    deliver_post_once(&d->o.target, spliced ? spliced : body, spliced ? slen : len, &r);
    free(spliced);
    deliver_result_free(&r);
    *retry_after_s = r.retry_after_s;
    if (r.cls == DELIVER_REJECT)
        quarantine(d, body, len, r.msg);
    bool done = r.cls == DELIVER_OK || r.cls == DELIVER_REJECT;
    if (done && from_spool && spool_pop(d->sp) != 0 && !d->unremoved_logged) {
        d->unremoved_logged = true; /* once per run */
        log_error(d->o.target.name,
                  "spool %s: cannot remove a delivered body (read-only?); it stays on disk "
                  "and is resent after a restart (the reconciler ignores the duplicate)",
                  d->o.spool_dir);
    }
    pthread_mutex_lock(&d->mu);
    d->busy = NULL;
    if (done && !from_spool) {
        pop_head(d);
        d->st.direct_sends += r.cls == DELIVER_OK;
    }
    if (r.cls == DELIVER_REJECT)
        d->st.rejected++;
    if (r.cls == DELIVER_OK && spliced) {
        d->unrep_entries -= ue;
        d->unrep_bytes -= ub;
        d->drops_dirty = true;
    }
    sync_spool(d);
    pthread_mutex_unlock(&d->mu);
    if (from_spool)
        free(body);
    return r.cls;
}

static bool queue_empty(struct deliver *d)
{
    return !(d->sp && spool_count(d->sp)) && !d->head; /* head: caller holds mu */
}

static void drain_at_stop(struct deliver *d, int drain_ms)
{
    move_to_spool(d);
    int64_t deadline = mono_ms() + drain_ms;
    while (mono_ms() < deadline) {
        pthread_mutex_lock(&d->mu);
        bool empty = queue_empty(d);
        pthread_mutex_unlock(&d->mu);
        int ra;
        if (empty)
            break;
        enum deliver_class c = send_next(d, &ra);
        if (c == DELIVER_RETRY || c == DELIVER_HOLD)
            break;
    }
}

static void *sender_main(void *arg)
{
    struct deliver *d = arg;
    unsigned fails = 0;
    int64_t next_try = 0;
    open_spool(d);
    pthread_mutex_lock(&d->mu);
    sync_spool(d);
    for (;;) {
        pthread_mutex_unlock(&d->mu);
        move_to_spool(d);
        flush_drops(d);
        pthread_mutex_lock(&d->mu);
        if (d->stop)
            break;
        int64_t now = mono_ms();
        if (now < next_try) {
            int64_t until = next_try;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            int64_t ns = ts.tv_nsec + (until - now) % 1000 * 1000000L;
            ts.tv_sec += (until - now) / 1000 + ns / 1000000000L;
            ts.tv_nsec = ns % 1000000000L;
            pthread_cond_timedwait(&d->cv, &d->mu, &ts);
            continue;
        }
        if (queue_empty(d)) {
            pthread_cond_wait(&d->cv, &d->mu);
            continue;
        }
        pthread_mutex_unlock(&d->mu);
        int ra;
        enum deliver_class c = send_next(d, &ra);
        pthread_mutex_lock(&d->mu);
        if (c == DELIVER_OK || c == DELIVER_REJECT) {
            fails = 0;
            next_try = 0;
        } else {
            fails++;
            next_try = mono_ms() + deliver_backoff_ms(&d->o.target, fails, ra);
        }
    }
    int drain_ms = d->drain_ms;
    pthread_mutex_unlock(&d->mu);
    drain_at_stop(d, drain_ms);
    flush_drops(d);
    return NULL;
}

static void free_all(struct deliver *d)
{
    while (d->head)
        pop_head(d);
    spool_close(d->sp);
    for (size_t i = 0; i < sizeof(d->strs) / sizeof(d->strs[0]); i++)
        free(d->strs[i]);
    free(d->rejdir);
    free(d->dropfile);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
}

struct deliver *deliver_new(const struct deliver_opts *o, char *err, size_t errlen)
{
    if (!o->spool_dir || !o->target.url) {
        snprintf(err, errlen, "a reconciler URL and a spool directory are needed");
        return NULL;
    }
    struct deliver *d = calloc(1, sizeof(*d));
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    d->o = *o;
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    struct deliver_target *t = &d->o.target;
    t->name = dup_opt(d, 0, o->target.name ? o->target.name : "delivery");
    t->url = dup_opt(d, 1, o->target.url);
    t->token = dup_opt(d, 2, o->target.token);
    t->tls.ca_file = dup_opt(d, 3, o->target.tls.ca_file);
    t->tls.cert_file = dup_opt(d, 4, o->target.tls.cert_file);
    t->tls.key_file = dup_opt(d, 5, o->target.tls.key_file);
    d->o.spool_dir = dup_opt(d, 6, o->spool_dir);
    memset(&t->c, 0, sizeof(t->c));
    if (!d->o.spool_max_bytes)
        d->o.spool_max_bytes = 64ull << 20;
    if (!d->o.mem_max_bytes)
        d->o.mem_max_bytes = 16ull << 20;
    size_t dl = strlen(o->spool_dir) + 32;
    d->rejdir = malloc(dl);
    d->dropfile = malloc(dl);
    if (!t->name || !t->url || (o->target.token && !t->token) || !d->o.spool_dir || !d->rejdir ||
        !d->dropfile) {
        snprintf(err, errlen, "out of memory");
        free_all(d);
        return NULL;
    }
    snprintf(d->rejdir, dl, "%s/rejected", o->spool_dir);
    snprintf(d->dropfile, dl, "%s/spool_dropped", o->spool_dir);
    d->st.spool_ok = true;
    load_drops(d);
    if (pthread_create(&d->th, NULL, sender_main, d) != 0) {
        snprintf(err, errlen, "cannot start the sender thread");
        free_all(d);
        return NULL;
    }
    d->th_started = true;
    return d;
}

int deliver_submit(struct deliver *d, const char *body, size_t len)
{
    struct ment *m = malloc(sizeof(*m));
    char *copy = malloc(len + 1);
    if (!m || !copy) {
        free(m);
        free(copy);
        log_error(d->o.target.name, "out of memory: a body of %zu bytes is lost", len);
        return -1;
    }
    memcpy(copy, body, len);
    copy[len] = '\0';
    *m = (struct ment){.body = copy, .len = len, .at = (int64_t)time(NULL)};
    pthread_mutex_lock(&d->mu);
    /* the memory bound: drop the oldest (never the one the sender is working on) */
    uint64_t dn = 0, db = 0;
    while (d->head && d->st.mem_bytes + len > d->o.mem_max_bytes) {
        struct ment **pp = d->head == d->busy ? &d->head->next : &d->head;
        struct ment *victim = *pp;
        if (!victim)
            break;
        *pp = victim->next;
        if (d->tail == victim)
            d->tail = pp == &d->head ? NULL : d->head;
        d->st.mem_entries--;
        d->st.mem_bytes -= victim->len;
        dn++;
        db += victim->len;
        ment_free(victim);
    }
    if (dn) {
        count_drop(d, dn, db);
        log_error(d->o.target.name,
                  "memory queue at its bound of %llu bytes (spool unwritable, reconciler "
                  "unreachable): dropped the %llu oldest body(ies), %llu bytes (reported in the "
                  "next delivered body)",
                  (unsigned long long)d->o.mem_max_bytes, (unsigned long long)dn,
                  (unsigned long long)db);
    }
    if (d->tail)
        d->tail->next = m;
    else
        d->head = m;
    d->tail = m;
    d->st.mem_entries++;
    d->st.mem_bytes += len;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return 0;
}

void deliver_get_stats(struct deliver *d, struct deliver_stats *st)
{
    pthread_mutex_lock(&d->mu);
    *st = d->st;
    int64_t oldest = d->spool_oldest ? d->spool_oldest : d->head ? d->head->at : 0;
    pthread_mutex_unlock(&d->mu);
    int64_t now = (int64_t)time(NULL);
    st->oldest_age_s = oldest && now > oldest ? (double)(now - oldest) : 0;
}

void deliver_metrics_render(struct deliver *d, FILE *f)
{
    struct deliver_stats s;
    deliver_get_stats(d, &s);
    deliver_counters_render(f, &s.c);
    fprintf(f,
            "# HELP wanledger_delivery_queue_entries Bodies waiting for the reconciler, on disk "
            "(spool) or in memory.\n"
            "# TYPE wanledger_delivery_queue_entries gauge\n"
            "wanledger_delivery_queue_entries{where=\"spool\"} %llu\n"
            "wanledger_delivery_queue_entries{where=\"memory\"} %llu\n"
            "# HELP wanledger_delivery_queue_bytes Bytes of the waiting bodies.\n"
            "# TYPE wanledger_delivery_queue_bytes gauge\n"
            "wanledger_delivery_queue_bytes{where=\"spool\"} %llu\n"
            "wanledger_delivery_queue_bytes{where=\"memory\"} %llu\n"
            "# HELP wanledger_delivery_oldest_age_seconds Age of the oldest waiting body.\n"
            "# TYPE wanledger_delivery_oldest_age_seconds gauge\n"
            "wanledger_delivery_oldest_age_seconds %.0f\n"
            "# HELP wanledger_delivery_dropped_entries_total Bodies dropped by the spool's or the "
            "memory queue's bound.\n"
            "# TYPE wanledger_delivery_dropped_entries_total counter\n"
            "wanledger_delivery_dropped_entries_total %llu\n"
            "# HELP wanledger_delivery_dropped_bytes_total Bytes of the dropped bodies.\n"
            "# TYPE wanledger_delivery_dropped_bytes_total counter\n"
            "wanledger_delivery_dropped_bytes_total %llu\n"
            "# HELP wanledger_delivery_rejected_total Bodies the reconciler refused (400/413/422), "
            "kept in the spool's rejected/ directory.\n"
            "# TYPE wanledger_delivery_rejected_total counter\n"
            "wanledger_delivery_rejected_total %llu\n"
            "# HELP wanledger_delivery_spool_write_failures_total Failed spool writes.\n"
            "# TYPE wanledger_delivery_spool_write_failures_total counter\n"
            "wanledger_delivery_spool_write_failures_total %llu\n"
            "# HELP wanledger_delivery_spool_writable 0 while the spool cannot be written.\n"
            "# TYPE wanledger_delivery_spool_writable gauge\n"
            "wanledger_delivery_spool_writable %d\n"
            "# HELP wanledger_delivery_direct_sends_total Bodies delivered from memory because "
            "the spool could not be written.\n"
            "# TYPE wanledger_delivery_direct_sends_total counter\n"
            "wanledger_delivery_direct_sends_total %llu\n",
            (unsigned long long)s.spool_entries, (unsigned long long)s.mem_entries,
            (unsigned long long)s.spool_bytes, (unsigned long long)s.mem_bytes, s.oldest_age_s,
            (unsigned long long)s.dropped_entries, (unsigned long long)s.dropped_bytes,
            (unsigned long long)s.rejected, (unsigned long long)s.spool_write_failures,
            s.spool_ok ? 1 : 0, (unsigned long long)s.direct_sends);
}

size_t deliver_close(struct deliver *d, int drain_ms)
{
    if (!d)
        return 0;
    if (d->th_started) {
        pthread_mutex_lock(&d->mu);
        d->stop = true;
        d->drain_ms = drain_ms;
        pthread_cond_signal(&d->cv);
        pthread_mutex_unlock(&d->mu);
        pthread_join(d->th, NULL);
    }
    size_t in_spool = d->sp ? spool_count(d->sp) : 0;
    size_t in_mem = (size_t)d->st.mem_entries;
    if (in_spool)
        log_info(d->o.target.name, "%zu body(ies) stay in the spool %s for the next run", in_spool,
                 d->o.spool_dir);
    if (in_mem)
        log_error(d->o.target.name,
                  "%zu body(ies), %llu bytes, could be neither delivered nor spooled: lost", in_mem,
                  (unsigned long long)d->st.mem_bytes);
    free_all(d);
    return in_spool + in_mem;
}
