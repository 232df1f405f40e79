/* `wanledger ship`: tails data-transfer service logs (one JSON object per line) and posts them in
 * batches to the reconciler's /v1/transfers with the first `service` token.
 *
 *   wanledger [--config F] ship [--once] [--state FILE] [--batch N] [--interval-ms MS] LOG...
 *
 * Each log's position (device, inode, byte offset) is kept in a state file, written atomically
 * after every batch the reconciler accepted (2xx = committed), so a restart resends nothing and
 * loses nothing. Only complete lines are shipped: a line still being written waits for its
 * newline. A rotated log (the path now names another file) is read to its end before the new
 * file is opened from its start; a truncated log is read again from its start. A line the
 * reconciler rejects (400/413/422) is isolated by resending the batch line by line and then
 * skipped with an error naming the file and byte offset. Everything else follows the one delivery
 * policy of common/deliver_post.h: bodies compressed (zstd by default, $.delivery.compress),
 * https:// verified against $.delivery.ca_file; connection failures, 5xx, 429 and 408 are retried
 * with capped exponential backoff and jitter, at least Retry-After; other 4xx (401, 403, a 404
 * from a URL typo) hold the data and retry, logged once per state change; nothing is skipped for
 * them. The logs are ship's spool. Resending is harmless anyway: the reconciler is idempotent on
 * (service, id). */
#include "ship.h"

#include <event2/buffer.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "deliver_post.h"
#include "jsonv.h"
#include "jsonw.h"
#include "log.h"
#include "promhttp.h"
#include "timeutil.h"
#include "ship_metrics.h"

#define SHIP_DEFAULT_BATCH    1000
#define SHIP_MAX_BATCH_BYTES  (1024 * 1024)
#define SHIP_MAX_LINE         (256 * 1024)
#define SHIP_POST_TIMEOUT_MS  10000
#define SHIP_DEFAULT_INTERVAL 500

struct ship_log {
    char *path; /* absolute */
    int fd;     /* -1 while the file does not exist */
    dev_t dev;
    ino_t ino;
    uint64_t offset; /* first byte not yet shipped (always at a line start) */
    char *buf;       /* bytes read after offset, not yet shipped */
    size_t len, cap;
    bool skipping; /* inside an over-long line: drop bytes up to its newline */
};

struct ship {
    const struct cfg *cfg;
    char *url;
    const char *token;
    const char *state_path;
    size_t batch_lines;
    struct ship_log *logs;
    size_t n_logs;
    uint64_t shipped_lines, skipped_lines, posts;
    struct deliver_target target; /* the one delivery policy; its counters feed /metrics */
    int retry_after_s;            /* of the last failed post, -1 none */
    struct ship_metrics m;        /* --metrics (ship_metrics.h); logs[i] is m.logs[i] */
    uint64_t last_rejected;       /* "rejected" of the last accepted POST's answer */
};

/* The metrics of log l. */
static struct ship_log_metrics *lm(struct ship *s, const struct ship_log *l)
{
    return &s->m.logs[l - s->logs];
}

static volatile sig_atomic_t ship_stop;

static void on_signal(int sig)
{
    (void)sig;
    ship_stop = 1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (!ship_stop && nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* ---- state file: {"version":1,"logs":[{"path","dev","ino","offset"}]} ---- */

static int state_load(struct ship *s)
{
    FILE *f = fopen(s->state_path, "r");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        log_error(s->state_path, "cannot read state file: %s", strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t cap = 0, len = 0;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            char *t = realloc(text, cap);
            if (!t) {
                free(text);
                fclose(f);
                return -1;
            }
            text = t;
        }
        memcpy(text + len, chunk, n);
        len += n;
    }
    fclose(f);
    if (!text)
        return 0; /* empty file: nothing shipped yet */
    text[len] = '\0';
    struct jv *root;
    size_t n_values;
    struct jv_error je;
    struct jv_doc *doc = jv_parse(text, len, false, &root, &n_values, &je);
    free(text);
    const struct jv *logs = doc ? jv_get(root, "logs") : NULL;
    if (!logs || logs->type != JV_ARRAY) {
        log_error(s->state_path,
                  "state file is not {\"version\":1,\"logs\":[...]}%s%s%s: remove it to ship "
                  "every log from its start",
                  doc ? "" : " (", doc ? "" : je.msg, doc ? "" : ")");
        jv_doc_free(doc);
        return -1;
    }
    for (const struct jv *e = logs->child; e; e = e->next) {
        const struct jv *path = jv_get(e, "path");
        uint64_t dev, ino, off;
        if (!path || path->type != JV_STRING || !jv_u64(jv_get(e, "dev"), &dev) ||
            !jv_u64(jv_get(e, "ino"), &ino) || !jv_u64(jv_get(e, "offset"), &off))
            continue;
        for (size_t i = 0; i < s->n_logs; i++) {
            if (strcmp(s->logs[i].path, path->s) != 0)
                continue;
            s->logs[i].dev = (dev_t)dev;
            s->logs[i].ino = (ino_t)ino;
            s->logs[i].offset = off;
        }
    }
    jv_doc_free(doc);
    return 0;
}

/* Writes the whole state to a temporary file, fsyncs and renames it over the old one, so the
 * state file is always either the old or the new state. */
static int state_save(struct ship *s)
{
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return -1;
    struct jw w;
    jw_init(&w, b);
    jw_begin_object(&w);
    jw_kv_u64(&w, "version", 1);
    jw_key(&w, "logs");
    jw_begin_array(&w);
    for (size_t i = 0; i < s->n_logs; i++) {
        jw_begin_object(&w);
        jw_kv_str(&w, "path", s->logs[i].path);
        jw_kv_u64(&w, "dev", (uint64_t)s->logs[i].dev);
        jw_kv_u64(&w, "ino", (uint64_t)s->logs[i].ino);
        jw_kv_u64(&w, "offset", s->logs[i].offset);
        jw_end(&w);
    }
    jw_end(&w);
    jw_end(&w);
    char *text = jw_finish(&w) == 0 ? jw_take(b, NULL) : NULL;
    evbuffer_free(b);
    if (!text)
        return -1;
    size_t tl = strlen(s->state_path) + 8;
    char *tmp = malloc(tl);
    int rc = -1, fd = -1;
    if (!tmp)
        goto cleanup;
    snprintf(tmp, tl, "%s.tmp", s->state_path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        goto cleanup;
    size_t len = strlen(text);
    if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd) < 0)
        goto cleanup;
    if (close(fd) < 0) {
        fd = -1;
        goto cleanup;
    }
    fd = -1;
    if (rename(tmp, s->state_path) < 0)
        goto cleanup;
    rc = 0;
cleanup:
    if (rc < 0)
        log_error(s->state_path, "cannot write state file: %s", strerror(errno));
    if (fd >= 0)
        close(fd);
    free(tmp);
    free(text);
    return rc;
}

/* ---- reading logs ---- */

static void log_close(struct ship_log *l)
{
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    l->len = 0;
}

/* Opens the log when it is closed; drops a saved offset that belongs to another file. */
static void log_open(struct ship_log *l)
{
    if (l->fd >= 0)
        return;
    int fd = open(l->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return; /* not there yet: tried again next round */
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return;
    }
    if (st.st_dev != l->dev || st.st_ino != l->ino) {
        if (l->offset)
            log_info(l->path, "a new file: shipping it from its start");
        l->offset = 0;
    } else if ((uint64_t)st.st_size < l->offset) {
        log_warn(l->path,
                 "truncated to %lld bytes (shipped up to %llu): shipping it again from "
                 "its start",
                 (long long)st.st_size, (unsigned long long)l->offset);
        l->offset = 0;
    }
    l->dev = st.st_dev;
    l->ino = st.st_ino;
    l->fd = fd;
    l->len = 0;
}

/* Reads what follows offset + len into buf (up to the buffer's bound). */
static int log_fill(struct ship_log *l)
{
    if (l->fd < 0)
        return 0;
    size_t want = SHIP_MAX_BATCH_BYTES + SHIP_MAX_LINE;
    if (l->cap < want) {
        char *b = realloc(l->buf, want);
        if (!b)
            return -1;
        l->buf = b;
        l->cap = want;
    }
    while (l->len < l->cap) {
        ssize_t r = pread(l->fd, l->buf + l->len, l->cap - l->len, (off_t)(l->offset + l->len));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            log_error(l->path, "read: %s", strerror(errno));
            return -1;
        }
        if (r == 0) {
            break;
        }
        l->len += (size_t)r;
    }
    return 0;
}

/* 1 when path now names another file (rotation) or ours shrank below what we shipped
 * (truncation): the caller drains what is left and reopens. */
static int log_replaced(struct ship_log *l)
{
    struct stat st, cur;
    if (l->fd < 0 || stat(l->path, &st) < 0 || fstat(l->fd, &cur) < 0)
        return 0;
    if (st.st_dev != cur.st_dev || st.st_ino != cur.st_ino) {
        log_info(l->path, "rotated: old file shipped to its end (%llu bytes), opening the new one",
                 (unsigned long long)l->offset);
        return 1;
    }
    return (uint64_t)st.st_size < l->offset;
}

/* ---- posting ---- */

/* 0 accepted, 1 rejected as bad data (400/413/422), -1 retry later (common/deliver_post.h). */
static int post(struct ship *s, const char *body, size_t len, const char *ctx)
{
    struct deliver_result r;
    s->posts++;
    deliver_post_once(&s->target, body, len, &r);
    if (r.cls == DELIVER_OK) {
        atomic_fetch_add(&s->m.posts_ok, 1);
        atomic_store(&s->m.last_success_us, tm_now_us());
        s->last_rejected = ship_metrics_rejected_in(r.body); /* quarantined there */
        deliver_result_free(&r);
        return 0;
    }
    atomic_fetch_add(&s->m.posts_failed, 1);
    if (r.cls == DELIVER_REJECT) {
        log_debug(ctx, "POST %s: %s", s->url, r.msg);
        deliver_result_free(&r);
        return 1;
    }
    /* state changes are logged once by deliver_post_once */
    log_debug(ctx, "POST %s: %s (will retry)", s->url, r.msg);
    s->retry_after_s = r.retry_after_s;
    deliver_result_free(&r);
    return -1;
}

static bool line_blank(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
        i++;
    return i == len;
}

/* Lines that are not a JSON object are skipped here with an error (the reconciler would refuse
 * the whole batch for them). */
static bool line_ok(struct ship_log *l, const char *line, size_t len, uint64_t off)
{
    struct jv *v;
    size_t n;
    struct jv_error je;
    struct jv_doc *doc = jv_parse(line, len, false, &v, &n, &je);
    bool parsed = doc != NULL, obj = parsed && v->type == JV_OBJECT;
    jv_doc_free(doc);
    if (!obj)
        log_error(l->path,
                  "byte %llu: not a JSON object (%s at %s, byte %zu of the line), "
                  "skipped: %.*s",
                  (unsigned long long)off, parsed ? "another JSON value" : je.msg,
                  parsed ? "$" : je.path, parsed ? (size_t)0 : je.offset,
                  (int)(len > 80 ? 80 : len), line);
    return obj;
}

/* Ships one batch of complete lines from the start of l->buf. Returns the number of bytes
 * consumed (shipped or skipped), 0 when nothing complete is there, -1 to retry later. */
static long ship_batch(struct ship *s, struct ship_log *l)
{
    size_t end = 0, n_lines = 0;
    if (l->skipping) {
        char *nl = memchr(l->buf, '\n', l->len);
        if (nl)
            l->skipping = false;
        return nl ? (long)(nl - l->buf) + 1 : (long)l->len;
    }
    /* Collect up to batch_lines complete lines within the body bound. */
    while (n_lines < s->batch_lines) {
        char *nl = memchr(l->buf + end, '\n', l->len - end);
        if (!nl)
            break;
        size_t next = (size_t)(nl - l->buf) + 1;
        if (next > SHIP_MAX_BATCH_BYTES && n_lines > 0)
            break;
        end = next;
        n_lines++;
    }
    if (n_lines == 0) {
        if (l->len == l->cap) {
            /* A line longer than any record could be: skip it up to its newline. */
            log_error(l->path, "byte %llu: line longer than %zu bytes, skipped",
                      (unsigned long long)l->offset, l->cap);
            s->skipped_lines++;
            atomic_fetch_add(&lm(s, l)->rejected_here, 1);
            l->skipping = true;
            return (long)l->len;
        }
        return 0;
    }
    /* Body: the good lines, in order. */
    char *body = malloc(end + 1);
    size_t blen = 0, n_good = 0;
    if (!body)
        return -1;
    for (size_t p = 0; p < end;) {
        char *nl = memchr(l->buf + p, '\n', end - p);
        size_t ll = (size_t)(nl - (l->buf + p));
        if (line_blank(l->buf + p, ll)) {
            /* nothing to send */
        } else if (line_ok(l, l->buf + p, ll, l->offset + p)) {
            memcpy(body + blen, l->buf + p, ll + 1);
            blen += ll + 1;
            n_good++;
        } else {
            s->skipped_lines++;
            atomic_fetch_add(&lm(s, l)->rejected_here, 1);
        }
        p += ll + 1;
    }
    long rc = (long)end;
    if (n_good > 0) {
        int r = post(s, body, blen, l->path);
        if (r < 0) {
            rc = -1;
        } else if (r == 0) {
            s->shipped_lines += n_good;
            uint64_t there = s->last_rejected < n_good ? s->last_rejected : n_good;
            atomic_fetch_add(&lm(s, l)->records_sent, n_good - there);
            atomic_fetch_add(&lm(s, l)->rejected_there, there);
        } else {
            /* Rejected whole: send line by line to keep the good ones. */
            for (size_t p = 0; p < blen;) {
                char *nl = memchr(body + p, '\n', blen - p);
                size_t ll = (size_t)(nl - (body + p)) + 1;
                int r1 = post(s, body + p, ll, l->path);
                if (r1 < 0) {
                    /* Nothing is lost: the batch is resent whole later (idempotent). */
                    rc = -1;
                    break;
                }
                if (r1 == 0) {
                    s->shipped_lines++;
                    bool there = s->last_rejected > 0;
                    atomic_fetch_add(there ? &lm(s, l)->rejected_there : &lm(s, l)->records_sent,
                                     1);
                } else {
                    s->skipped_lines++;
                    atomic_fetch_add(&lm(s, l)->rejected_there, 1);
                    log_error(l->path, "the reconciler refused a record, skipped: %.*s",
                              (int)(ll - 1 > 200 ? 200 : ll - 1), body + p);
                }
                p += ll;
            }
        }
    }
    free(body);
    return rc;
}

/* Ships every complete line l has after its offset. Returns 1 if something was shipped, 0 if
 * not, -1 on a failed read, post or state write. */
static int log_drain(struct ship *s, struct ship_log *l)
{
    int result = 0;
    while (l->fd >= 0 && !ship_stop) {
        if (log_fill(l) < 0)
            return -1;
        long used = ship_batch(s, l);
        if (used < 0)
            return -1;
        if (used == 0)
            break;
        l->offset += (uint64_t)used;
        uint64_t lines = 0;
        for (long b = 0; b < used; b++)
            lines += l->buf[b] == '\n';
        atomic_fetch_add(&lm(s, l)->lines_read, lines);
        atomic_store(&lm(s, l)->offset, l->offset);
        memmove(l->buf, l->buf + used, l->len - (size_t)used);
        l->len -= (size_t)used;
        if (state_save(s) < 0)
            return -1;
        result = 1;
    }
    l->len = 0; /* re-read from offset next time: the file may have grown */
    return result;
}

/* Ships what every log has. Returns 1 if something was shipped, 0 if idle, -1 on a failure
 * (the caller backs off). */
static int ship_round(struct ship *s)
{
    int result = 0;
    for (size_t i = 0; i < s->n_logs && !ship_stop; i++) {
        struct ship_log *l = &s->logs[i];
        log_open(l);
        int r = log_drain(s, l);
        if (r == 0 && log_replaced(l)) {
            /* Lines written to the old file up to the rename are shipped before we switch. */
            r = log_drain(s, l);
            if (r >= 0) {
                struct stat st;
                bool truncated = stat(l->path, &st) == 0 && st.st_ino == l->ino;
                log_close(l);
                if (!truncated) {
                    l->offset = 0;
                    l->dev = 0;
                    l->ino = 0;
                }
                log_open(l);
                int r2 = log_drain(s, l);
                r = r2 < 0 ? r2 : (r || r2);
            }
        }
        atomic_store(&lm(s, l)->offset, l->offset);
        if (r < 0)
            return -1;
        result |= r;
    }
    return result;
}

static char *absolute_path(const char *p)
{
    if (p[0] == '/')
        return strdup(p);
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        return NULL;
    size_t n = strlen(cwd) + strlen(p) + 2;
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%s/%s", cwd, p[0] == '.' && p[1] == '/' ? p + 2 : p);
    return out;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: wanledger [--config FILE] ship [--once] [--state FILE] [--batch N]\n"
            "                 [--interval-ms MS] [--metrics ADDR:PORT] LOG...\n"
            "Tails data-transfer service logs (one JSON transfer record per line) and posts\n"
            "them to reconciler_url/v1/transfers with the first `service` token.\n"
            "  --once          ship what the logs hold now, then exit (1 if a post failed)\n"
            "  --state FILE    where the shipped offsets are kept (default: LOG.ship-state of\n"
            "                  the first LOG)\n"
            "  --batch N       records per POST (default %d)\n"
            "  --interval-ms   how often the logs are checked for new lines (default %d)\n"
            "  --metrics A:P   serve Prometheus text at http://A:P/metrics (lines read, records\n"
            "                  sent and rejected, lag)\n",
            SHIP_DEFAULT_BATCH, SHIP_DEFAULT_INTERVAL);
}

struct ship_args {
    bool once;
    const char *state, *metrics_addr;
    long batch, interval;
    int first_log; /* argv index of the first log file */
};

/* The command line and the configuration it needs: -1 to go on, else the exit code. */
static int parse_args(const struct cfg *cfg, int argc, char **argv, struct ship_args *o)
{
    *o = (struct ship_args){.batch = SHIP_DEFAULT_BATCH, .interval = SHIP_DEFAULT_INTERVAL};
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        char *end = NULL;
        if (!strcmp(a, "--once")) {
            o->once = true;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--state") && i + 1 < argc) {
            o->state = argv[++i];
        } else if (!strcmp(a, "--metrics") && i + 1 < argc) {
            o->metrics_addr = argv[++i];
        } else if (!strcmp(a, "--batch") && i + 1 < argc) {
            o->batch = strtol(argv[++i], &end, 10);
            if (*end || o->batch < 1 || o->batch > 100000) {
                fprintf(stderr, "wanledger ship: --batch: expected 1..100000, got '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--interval-ms") && i + 1 < argc) {
            o->interval = strtol(argv[++i], &end, 10);
            if (*end || o->interval < 10 || o->interval > 3600000) {
                fprintf(stderr, "wanledger ship: --interval-ms: expected 10..3600000, got '%s'\n",
                        argv[i]);
                return 2;
            }
        } else if (!strcmp(a, "--")) {
            i++;
            break;
        } else {
            fprintf(stderr, "wanledger ship: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    o->first_log = i;
    if (i >= argc) {
        fprintf(stderr, "wanledger ship: no log file given\n");
        usage(stderr);
        return 2;
    }
    if (!cfg->reconciler_url) {
        fprintf(stderr,
                "wanledger ship: %s: $.reconciler_url: expected an http[s]:// URL (or "
                "$.listen)\n",
                cfg->path ? cfg->path : "config");
        return 2;
    }
    if (cfg->tokens.n_service == 0) {
        fprintf(stderr,
                "wanledger ship: %s: $.tokens_file: expected a \"service\" token to post "
                "transfers with\n",
                cfg->path ? cfg->path : "config");
        return 2;
    }
    return -1;
}

/* The URL, the delivery target, the logs (absolute paths) and the state file's path; -1 when
 * out of memory (ship_free releases what was made). */
static int ship_setup(struct ship *s, const struct ship_args *o, char **argv, int n_logs,
                      char **state_buf)
{
    const struct cfg *cfg = s->cfg;
    size_t ul = strlen(cfg->reconciler_url) + sizeof "/v1/transfers";
    s->url = malloc(ul);
    s->n_logs = (size_t)n_logs;
    s->logs = calloc(s->n_logs, sizeof *s->logs);
    s->m.logs = calloc(s->n_logs, sizeof *s->m.logs);
    s->m.n_logs = s->n_logs;
    if (!s->url || !s->logs || !s->m.logs)
        return -1;
    snprintf(s->url, ul, "%s", cfg->reconciler_url);
    size_t k = strlen(s->url);
    while (k > 0 && s->url[k - 1] == '/')
        s->url[--k] = '\0';
    strcat(s->url, "/v1/transfers");
    s->target = (struct deliver_target){
        .name = "ship",
        .url = s->url,
        .token = s->token,
        .timeout_ms = SHIP_POST_TIMEOUT_MS,
        .compress = cfg->delivery.compress,
        .tls = {.ca_file = cfg->delivery.ca_file,
                .cert_file = cfg->delivery.client_cert,
                .key_file = cfg->delivery.client_key,
                .allow_plain_remote = cfg->delivery.allow_plain_http},
        .backoff_min_ms = (int)o->interval,
    };
    for (size_t j = 0; j < s->n_logs; j++) {
        /* Absolute paths: the state file means the same files from any working directory. */
        s->logs[j].path = absolute_path(argv[j]);
        s->logs[j].fd = -1;
        if (!s->logs[j].path)
            return -1;
        s->m.logs[j].path = s->logs[j].path;
    }
    s->state_path = o->state;
    if (!o->state) {
        size_t sl = strlen(s->logs[0].path) + sizeof ".ship-state";
        *state_buf = malloc(sl);
        if (!*state_buf)
            return -1;
        snprintf(*state_buf, sl, "%s.ship-state", s->logs[0].path);
        s->state_path = *state_buf;
    }
    return 0;
}

/* Rounds until --once's one is done or a signal comes; the exit code. */
static int ship_loop(struct ship *s, const struct ship_args *o)
{
    unsigned fails = 0;
    for (;;) {
        int r = ship_round(s);
        if (o->once)
            return r < 0 ? 1 : 0;
        if (ship_stop)
            return 0;
        if (r < 0) {
            sleep_ms(deliver_backoff_ms(&s->target, ++fails, s->retry_after_s));
            s->retry_after_s = -1;
        } else {
            fails = 0;
            if (r == 0)
                sleep_ms((int)o->interval);
        }
        if (ship_stop)
            return 0;
    }
}

static void ship_free(struct ship *s)
{
    free(s->m.logs);
    for (size_t j = 0; s->logs && j < s->n_logs; j++) {
        log_close(&s->logs[j]);
        free(s->logs[j].buf);
        free(s->logs[j].path);
    }
    free(s->logs);
    free(s->url);
}

int ship_cmd(const struct cfg *cfg, int argc, char **argv)
{
    struct ship_args o;
    int rc = parse_args(cfg, argc, argv, &o);
    if (rc >= 0)
        return rc;
    struct promhttp *metrics = NULL;
    struct ship s = {.cfg = cfg,
                     .token = cfg->tokens.service[0],
                     .batch_lines = (size_t)o.batch,
                     .retry_after_s = -1};
    char *state_buf = NULL;
    rc = 1;
    if (ship_setup(&s, &o, argv + o.first_log, argc - o.first_log, &state_buf) < 0)
        goto cleanup;
    if (state_load(&s) < 0) {
        rc = 2;
        goto cleanup;
    }

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    for (size_t j = 0; j < s.n_logs; j++)
        atomic_store(&s.m.logs[j].offset, s.logs[j].offset);
    if (o.metrics_addr) {
        char err[300];
        metrics = promhttp_start(o.metrics_addr, ship_metrics_render, &s.m, err, sizeof err);
        if (!metrics) {
            fprintf(stderr, "wanledger ship: --metrics: %s\n", err);
            rc = 2;
            goto cleanup;
        }
    }
    log_info(NULL, "shipping %zu log(s) to %s, state in %s", s.n_logs, s.url, s.state_path);
    rc = ship_loop(&s, &o);
    log_info(NULL, "shipped %llu records in %llu posts, skipped %llu",
             (unsigned long long)s.shipped_lines, (unsigned long long)s.posts,
             (unsigned long long)s.skipped_lines);
cleanup:
    promhttp_stop(metrics); /* before the counters it reads go */
    ship_free(&s);
    free(state_buf);
    return rc;
}
