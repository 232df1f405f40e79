/* The hostile cases as data: every file in tests/reconciler/hostile/ is one case (format in that
 * folder's README.md), run against the real `wanledger reconcile` (the sanitizer build in CI: a
 * signed overflow or a buffer overrun aborts the server and fails the case) and a throwaway
 * PostgreSQL. After each case the server must still answer /healthz and, unless the case says
 * otherwise, no row count and no partition count may have changed. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fixture.h"
#include "harness.h"
#include "timeutil.h"

#ifndef HOSTILE_DIR
#error HOSTILE_DIR must name tests/reconciler/hostile
#endif

static struct fx F;

/* What a case printed: kept, and shown only if the case fails (the teardown prints it), so a
 * failure's lines are not lost among 40 passing cases' details in a CI log's excerpt. A passing
 * case prints one line. */
static char g_notes[16384];
static size_t g_nn;
static char g_case[600]; /* the case running; empty once it passed */

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
    if (g_nn >= sizeof(g_notes) - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_notes + g_nn, sizeof(g_notes) - g_nn, fmt, ap);
    va_end(ap);
    if (n > 0)
        g_nn += (size_t)n < sizeof(g_notes) - g_nn ? (size_t)n : sizeof(g_notes) - 1 - g_nn;
}

/* ---- one case file ------------------------------------------------------------------------ */

#define MAX_HEADERS 16

struct hcase {
    char name[256];
    char kind[32]; /* request (default), bodies, drip, connections */
    char request[512];
    char *headers[MAX_HEADERS];
    int n_headers;
    char *body;
    bool auto_length;
    uint64_t body_bytes; /* bodies: generated body length */
    int parallel;        /* bodies: connections at once; connections: how many */
    int status;          /* expected status (0 = connection closed without answer is accepted) */
    char path[256];      /* expected error path */
    char contains[256];  /* expected text in the answer */
    char log_absent[256];
    bool rows_unchanged;
    long partitions_max_added; /* -1 = unchanged */
    long max_rss_growth_mb;
    int drip_ms, within_s;
    bool drip_body_only; /* drip: send the head at once */
    char check[512];     /* "SQL => expected first row" after the case */
    double max_cpu;
};

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = 0;
}

/* A case's text with its @…@ placeholders replaced (fixture.h), times from two windows ago. */
static char *expand(const char *in)
{
    return fx_expand(in, fx_window_ago(2, 60));
}

static void load_case(const char *file, struct hcase *c)
{
    memset(c, 0, sizeof(*c));
    snprintf(c->kind, sizeof(c->kind), "request");
    c->auto_length = true;
    c->rows_unchanged = true;
    c->partitions_max_added = -1;
    FILE *f = fopen(file, "r");
    assert_non_null(f);
    char line[65536];
    while (fgets(line, sizeof(line), f)) {
        trim(line);
        if (line[0] == '#' || line[0] == 0)
            continue;
        char *colon = strchr(line, ':');
        assert_non_null(colon);
        *colon = 0;
        char *v = colon + 1;
        while (*v == ' ')
            v++;
        const char *k = line;
        if (strcmp(k, "name") == 0)
            snprintf(c->name, sizeof(c->name), "%s", v);
        else if (strcmp(k, "kind") == 0)
            snprintf(c->kind, sizeof(c->kind), "%s", v);
        else if (strcmp(k, "request") == 0)
            snprintf(c->request, sizeof(c->request), "%s", v);
        else if (strcmp(k, "header") == 0 && c->n_headers < MAX_HEADERS)
            c->headers[c->n_headers++] = expand(v);
        else if (strcmp(k, "body") == 0)
            c->body = expand(v);
        else if (strcmp(k, "auto_length") == 0)
            c->auto_length = strcmp(v, "no") != 0;
        else if (strcmp(k, "body_bytes") == 0)
            c->body_bytes = strtoull(v, NULL, 10);
        else if (strcmp(k, "parallel") == 0)
            c->parallel = atoi(v);
        else if (strcmp(k, "status") == 0)
            c->status = atoi(v);
        else if (strcmp(k, "path") == 0)
            snprintf(c->path, sizeof(c->path), "%s", v);
        else if (strcmp(k, "contains") == 0)
            snprintf(c->contains, sizeof(c->contains), "%s", v);
        else if (strcmp(k, "log_absent") == 0)
            snprintf(c->log_absent, sizeof(c->log_absent), "%s", v);
        else if (strcmp(k, "rows") == 0)
            c->rows_unchanged = strcmp(v, "unchanged") == 0;
        else if (strcmp(k, "partitions_added_max") == 0)
            c->partitions_max_added = atol(v);
        else if (strcmp(k, "max_rss_growth_mb") == 0)
            c->max_rss_growth_mb = atol(v);
        else if (strcmp(k, "drip_ms") == 0)
            c->drip_ms = atoi(v);
        else if (strcmp(k, "check") == 0)
            snprintf(c->check, sizeof(c->check), "%s", v);
        else if (strcmp(k, "drip_body_only") == 0)
            c->drip_body_only = strcmp(v, "yes") == 0;
        else if (strcmp(k, "closed_within_s") == 0)
            c->within_s = atoi(v);
        else if (strcmp(k, "max_cpu") == 0)
            c->max_cpu = atof(v);
        else
            fail_msg("%s: unknown key %s", file, k);
    }
    fclose(f);
    if (!c->name[0])
        snprintf(c->name, sizeof(c->name), "%s", file);
}

static void free_case(struct hcase *c)
{
    for (int i = 0; i < c->n_headers; i++)
        free(c->headers[i]);
    free(c->body);
}

/* ---- the server side -------------------------------------------------------------------- */

static const char COUNTS[] =
    "SELECT (SELECT count(*) FROM flow_reports) || ',' || (SELECT count(*) FROM flow_records)"
    " || ',' || (SELECT count(*) FROM counter_samples) || ',' || (SELECT count(*) FROM transfers)"
    " || ',' || (SELECT count(*) FROM window_state)";
static const char PARTITIONS[] =
    "SELECT count(*) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
    " WHERE c.relkind = 'r'";

/* utime + stime of the server in clock ticks */
static long long cpu_ticks(pid_t pid)
{
    char p[64], buf[2048];
    snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(p, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    char *q = strrchr(buf, ')');
    unsigned long long ut = 0, st = 0;
    if (!q || sscanf(q + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    return (long long)(ut + st);
}

static int connect_server(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)F.port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static char *build_head(const struct hcase *c, uint64_t body_len)
{
    size_t cap = 8192, n = 0;
    char *h = malloc(cap);
    n += (size_t)snprintf(h + n, cap - n, "%s\r\nHost: 127.0.0.1:%d\r\n", c->request, F.port);
    for (int i = 0; i < c->n_headers; i++)
        n += (size_t)snprintf(h + n, cap - n, "%s\r\n", c->headers[i]);
    if (c->auto_length)
        n += (size_t)snprintf(h + n, cap - n, "Content-Length: %llu\r\n",
                              (unsigned long long)body_len);
    snprintf(h + n, cap - n, "\r\n");
    return h;
}

/* Sends head and body_len bytes of body (body, or generated filler), reading at the same time;
 * stops sending once a whole answer is in. Returns the status (-1 none) and the answer body. */
static int exchange(int fd, const char *head, const char *body, uint64_t body_len, char **answer,
                    uint64_t *sent_body, int timeout_s)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    size_t hl = strlen(head), hsent = 0;
    uint64_t bsent = 0;
    static char filler[65536];
    if (!filler[0])
        memset(filler, 'x', sizeof(filler));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    int64_t deadline = tm_mono_ns() + (int64_t)timeout_s * 1000000000LL;
    bool done = false, eof = false, write_dead = false;
    while (!done && !eof && tm_mono_ns() < deadline) {
        bool want_out = !write_dead && (hsent < hl || bsent < body_len);
        struct pollfd p = {fd, (short)(POLLIN | (want_out ? POLLOUT : 0)), 0};
        if (poll(&p, 1, 200) <= 0)
            continue;
        if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
            if (n == cap) {
                cap *= 2;
                buf = realloc(buf, cap + 1);
            }
            ssize_t r = recv(fd, buf + n, cap - n, 0);
            if (r > 0) {
                n += (size_t)r;
                buf[n] = 0;
                char *e = strstr(buf, "\r\n\r\n");
                char *cl = strcasestr(buf, "\r\nContent-Length:");
                if (e && cl && cl < e && n >= (size_t)(e + 4 - buf) + (size_t)atol(cl + 17))
                    done = true;
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                eof = true;
            }
        }
        if (want_out && (p.revents & POLLOUT)) {
            ssize_t w;
            if (hsent < hl)
                w = send(fd, head + hsent, hl - hsent, MSG_NOSIGNAL);
            else {
                uint64_t left = body_len - bsent;
                const char *src = body ? body + bsent : filler;
                size_t k = left < sizeof(filler) ? (size_t)left : sizeof(filler);
                w = send(fd, src, k, MSG_NOSIGNAL);
            }
            if (w > 0) {
                if (hsent < hl)
                    hsent += (size_t)w;
                else
                    bsent += (uint64_t)w;
            } else if (w < 0 && errno != EAGAIN && errno != EINTR) {
                write_dead = true;
            }
        }
    }
    buf[n] = 0;
    int status = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = -1;
    char *b = strstr(buf, "\r\n\r\n");
    if (answer)
        *answer = strdup(b ? b + 4 : buf);
    if (sent_body)
        *sent_body = bsent;
    free(buf);
    return status;
}

static void check_answer(const struct hcase *c, int status, const char *answer)
{
    note("#   -> %d %.300s\n", status, answer);
    assert_int_equal(status, c->status);
    if (c->path[0]) {
        char want[300];
        snprintf(want, sizeof(want), "\"path\":\"%s\"", c->path);
        assert_non_null(strstr(answer, want));
    }
    if (c->contains[0])
        assert_non_null(strstr(answer, c->contains));
}

/* ---- the kinds ---------------------------------------------------------------------------- */

static void run_request(const struct hcase *c)
{
    uint64_t bl = c->body ? strlen(c->body) : 0;
    char *head = build_head(c, bl), *answer = NULL;
    int fd = connect_server();
    assert_true(fd >= 0);
    int status = exchange(fd, head, c->body, bl, &answer, NULL, 20);
    close(fd);
    check_answer(c, status, answer);
    free(answer);
    free(head);
}

struct body_job {
    const struct hcase *c;
    int status;
    char *answer;
    uint64_t sent;
};

static void *body_thread(void *arg)
{
    struct body_job *j = arg;
    char *head = build_head(j->c, j->c->body_bytes);
    int fd = connect_server();
    j->status = fd < 0 ? -1 : exchange(fd, head, NULL, j->c->body_bytes, &j->answer, &j->sent, 60);
    if (fd >= 0)
        close(fd);
    free(head);
    return NULL;
}

static volatile bool g_sampling;
static long g_rss_peak;

static void *rss_thread(void *arg)
{
    (void)arg;
    while (g_sampling) {
        long kb = th_rss_kb(F.pid);
        if (kb > g_rss_peak)
            g_rss_peak = kb;
        usleep(20000);
    }
    return NULL;
}

/* parallel connections each sending a body_bytes body; the server's RSS is sampled throughout */
static void run_bodies(const struct hcase *c)
{
    int n = c->parallel > 0 ? c->parallel : 1;
    struct body_job jobs[64] = {0};
    pthread_t th[64], rs;
    assert_true(n <= 64);
    long before = th_rss_kb(F.pid);
    g_rss_peak = before;
    g_sampling = true;
    pthread_create(&rs, NULL, rss_thread, NULL);
    for (int i = 0; i < n; i++) {
        jobs[i].c = c;
        pthread_create(&th[i], NULL, body_thread, &jobs[i]);
    }
    uint64_t sent = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        sent += jobs[i].sent;
    }
    g_sampling = false;
    pthread_join(rs, NULL);
    long after = th_rss_kb(F.pid);
    note("# %d x %llu-byte bodies: server RSS %ld kB before, peak %ld kB, %ld kB after; "
         "%llu body bytes sent before the answers\n",
         n, (unsigned long long)c->body_bytes, before, g_rss_peak, after, (unsigned long long)sent);
    for (int i = 0; i < n; i++) {
        check_answer(c, jobs[i].status, jobs[i].answer ? jobs[i].answer : "");
        free(jobs[i].answer);
    }
    if (c->max_rss_growth_mb)
        assert_true(g_rss_peak - before <= c->max_rss_growth_mb * 1024);
}

/* The request's bytes one at a time, drip_ms apart: the server must cut the connection (408 or a
 * close) within closed_within_s although every byte came well inside any idle timeout. */
static void run_drip(const struct hcase *c)
{
    uint64_t bl = c->body ? strlen(c->body) : 0;
    char *head = build_head(c, bl);
    size_t total = strlen(head) + bl;
    char *all = malloc(total + 1);
    memcpy(all, head, strlen(head));
    if (bl)
        memcpy(all + strlen(head), c->body, bl);
    int fd = connect_server();
    assert_true(fd >= 0);
    int64_t t0 = tm_mono_ns();
    size_t i = 0;
    if (c->drip_body_only) {
        i = strlen(head);
        assert_int_equal(send(fd, all, i, MSG_NOSIGNAL), (ssize_t)i);
    }
    bool closed = false;
    char buf[4096];
    size_t n = 0;
    while (!closed && tm_mono_ns() - t0 < (int64_t)(c->within_s + 5) * 1000000000LL) {
        if (i < total && send(fd, all + i, 1, MSG_NOSIGNAL) == 1)
            i++;
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, c->drip_ms) > 0) {
            ssize_t r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
            if (r <= 0)
                closed = true;
            else
                n += (size_t)r;
        }
    }
    double took = (double)(tm_mono_ns() - t0) / 1e9;
    buf[n] = 0;
    int status = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = -1;
    note("# drip: %zu of %zu bytes sent, closed after %.1f s, answer %d\n", i, total, took, status);
    assert_true(closed);
    assert_true(took <= c->within_s);
    assert_true(i < total); /* the request never completed */
    if (c->status)
        assert_int_equal(status, c->status);
    close(fd);
    free(all);
    free(head);
}

/* parallel connections opened and held (no request): the excess over max_connections gets 503 +
 * Retry-After, the server does not spin (its CPU share while they are held stays under max_cpu),
 * and at its descriptor limit it answers 503 from its reserve and pauses accepting.
 *
 * The descriptor limit is reached for certain: while the case runs the server's soft
 * RLIMIT_NOFILE is lowered (prlimit) to what it has open + max_connections + FD_SPARE, so a few
 * refusals still lingering (1 s each) are enough. With the start-up limit of 128 alone, reaching it
 * took ~60 refusals inside one second, which a loaded machine (slow accepts, SYN retries past
 * the listen backlog) did not always give. The gate sized max_connections from the start-up
 * limit, so it does not see the lower one coming. */
#define FD_SPARE        6
#define MAX_CONNECTIONS 40 /* the server's max_connections (main) */
#define STR_(x)         #x
#define STR(x)          STR_(x)
static void run_connections(const struct hcase *c)
{
    int n = c->parallel;
    int *fds = calloc((size_t)n, sizeof(int));
    struct rlimit old, low;
    assert_int_equal(prlimit(F.pid, RLIMIT_NOFILE, NULL, &old), 0);
    int base = th_open_fds(F.pid);
    low = old;
    low.rlim_cur = (rlim_t)(base + MAX_CONNECTIONS + FD_SPARE);
    assert_true(low.rlim_cur < old.rlim_cur);
    assert_int_equal(prlimit(F.pid, RLIMIT_NOFILE, &low, NULL), 0);
    long long cpu0 = cpu_ticks(F.pid);
    int64_t t0 = tm_mono_ns();
    for (int i = 0; i < n; i++)
        fds[i] = connect_server();
    sleep(3);
    long long cpu1 = cpu_ticks(F.pid);
    double secs = (double)(tm_mono_ns() - t0) / 1e9;
    double share = (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK) / secs;
    int refused = 0, retry_after = 0, silent = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        if (fds[i] < 0) {
            failed++;
            continue;
        }
        char buf[1024];
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
        ssize_t r = recv(fds[i], buf, sizeof(buf) - 1, 0);
        if (r > 0) {
            buf[r] = 0;
            if (strncmp(buf, "HTTP/1.1 503", 12) == 0)
                refused++;
            if (strstr(buf, "Retry-After: 1"))
                retry_after++;
        } else if (r < 0) {
            silent++; /* held open, waiting for a request */
        }
        close(fds[i]);
    }
    free(fds);
    assert_int_equal(prlimit(F.pid, RLIMIT_NOFILE, &old, NULL), 0);
    note("# %d connections held 3 s (server limit %d descriptors, %d open before): %d answered "
         "503 (%d with Retry-After), %d held open, %d not connected; server CPU %.1f%% of one "
         "core\n",
         n, (int)low.rlim_cur, base, refused, retry_after, silent, failed, share * 100);
    /* connections still in the listen backlog (closed by now) are accepted as the server's
     * back-off ends and count until it reads their end: /metrics may be refused with 503 +
     * Retry-After: 1 for a moment, as any client would be; it retries as told */
    char *m = NULL;
    int st = 0;
    for (int k = 0; k < 10 && (st = fx_http(&F, "GET", "/metrics", NULL, NULL, NULL, 0, &m)) == 503;
         k++) {
        free(m);
        m = NULL;
        sleep(1);
    }
    assert_int_equal(st, 200);
    long out_of_fds = -1;
    for (char *line = strtok(m, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "wanledger_http_connections_refused_total", 40) == 0 ||
            strncmp(line, "wanledger_http_accept_pauses_total", 34) == 0)
            note("#   %s\n", line);
        if (strstr(line, "reason=\"out_of_fds\"} "))
            out_of_fds = atol(strrchr(line, ' ') + 1);
    }
    free(m);
    /* the server ran out of descriptors and answered from its reserve; the log has one line per
     * change of state, not one per failed accept */
    assert_true(out_of_fds > 0);
    FILE *lf = fopen(F.log_path, "r");
    char l[4096];
    int accept_lines = 0;
    while (lf && fgets(l, sizeof(l), lf))
        accept_lines += strstr(l, "[gate] accept:") != NULL;
    if (lf)
        fclose(lf);
    note("#   %d accept log line(s)\n", accept_lines);
    assert_true(accept_lines >= 1 && accept_lines <= 20);
    assert_true(refused > 0);
    assert_int_equal(retry_after, refused);
    assert_true(share <= c->max_cpu);
}

static bool log_has(const char *needle)
{
    FILE *f = fopen(F.log_path, "r");
    char line[8192];
    bool found = false;
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, needle, strlen(needle)) == 0)
            found = true;
    if (f)
        fclose(f);
    return found;
}

static bool alive(void)
{
    int st;
    if (waitpid(F.pid, &st, WNOHANG) == F.pid)
        return false;
    char *r = NULL;
    int s = fx_http(&F, "GET", "/healthz", NULL, NULL, NULL, 0, &r);
    free(r);
    return s == 200;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One line for a passed case: its name and its first answer (or measurement), cut short. */
static void print_passed(void)
{
    const char *a = strstr(g_notes, "#   -> ");
    a = a ? a + 7 : g_notes + (g_notes[0] == '#' ? 2 : 0);
    int len = (int)strcspn(a, "\n"), cut = 60;
    fprintf(stderr, "# ok %.*s: %.*s%s\n", (int)strcspn(g_case, " "), g_case, len < cut ? len : cut,
            a, len > cut ? "..." : "");
    g_case[0] = 0;
}

/* After a failure: which case, and everything it printed. */
static int show_failed_case(void **state)
{
    (void)state;
    if (g_case[0])
        fprintf(stderr, "# FAILED case %s; what it printed:\n%s", g_case, g_notes);
    return 0;
}

static void test_hostile_cases(void **state)
{
    (void)state;
    DIR *d = opendir(HOSTILE_DIR);
    assert_non_null(d);
    char *files[256];
    size_t nf = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nf < 256)
        if (strstr(e->d_name, ".case"))
            files[nf++] = fx_fmt("%s/%s", HOSTILE_DIR, e->d_name);
    closedir(d);
    qsort(files, nf, sizeof(files[0]), cmp_str);
    assert_true(nf >= 20);
    for (size_t i = 0; i < nf; i++) {
        struct hcase c;
        load_case(files[i], &c);
        snprintf(g_case, sizeof(g_case), "%s (%s)", strrchr(files[i], '/') + 1, c.name);
        g_nn = 0;
        g_notes[0] = 0;
        char before[256];
        snprintf(before, sizeof(before), "%s", fx_row(&F, COUNTS));
        long long parts = fx_num(&F, PARTITIONS);
        if (strcmp(c.kind, "request") == 0)
            run_request(&c);
        else if (strcmp(c.kind, "bodies") == 0)
            run_bodies(&c);
        else if (strcmp(c.kind, "drip") == 0)
            run_drip(&c);
        else if (strcmp(c.kind, "connections") == 0)
            run_connections(&c);
        else
            fail_msg("%s: unknown kind %s", files[i], c.kind);
        usleep(200000); /* refusals' lingering closes */
        assert_true(alive());
        if (c.rows_unchanged)
            assert_string_equal(fx_row(&F, COUNTS), before);
        long long added = fx_num(&F, PARTITIONS) - parts;
        note("#   rows %s -> %s, partitions +%lld\n", before, fx_row(&F, COUNTS), added);
        if (c.partitions_max_added < 0)
            assert_int_equal(added, 0);
        else
            assert_true(added <= c.partitions_max_added);
        if (c.check[0]) {
            char *sep = strstr(c.check, " => ");
            assert_non_null(sep);
            *sep = 0;
            assert_string_equal(fx_row(&F, c.check), sep + 4);
        }
        if (c.log_absent[0])
            assert_false(log_has(c.log_absent));
        print_passed();
        free_case(&c);
        free(files[i]);
    }
}

int main(void)
{
    fx_setup(&F, "recon-hostile",
             " \"tick_seconds\": 3600,"
             " \"limits\": {\"max_past_days\": 30, \"max_body_agent\": 1048576,"
             " \"max_body_poller\": 1048576, \"max_body_service\": 1048576},"
             " \"server\": {\"max_connections\": " STR(
                 MAX_CONNECTIONS) ", \"header_timeout_seconds\": 3,"
                                  " \"body_timeout_seconds\": 4},");
    /* a small descriptor limit for the server only, so a connection flood reaches EMFILE */
    struct rlimit old, low;
    getrlimit(RLIMIT_NOFILE, &old);
    low = old;
    low.rlim_cur = 128;
    setrlimit(RLIMIT_NOFILE, &low);
    fx_start(&F);
    setrlimit(RLIMIT_NOFILE, &old);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_hostile_cases, show_failed_case)};
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fx_stop(&F);
    return rc;
}
