/* The reconciler service tests' fixture (see fixture.h). */
#include "fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "timeutil.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fixture: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(text, fp) < 0 || fclose(fp) != 0)
        die("cannot write %s", path);
    chmod(path, 0600); /* the tokens file is a secret: group/others may not read it */
}

void fx_setup(struct fx *f, const char *tag, const char *extra_json)
{
    memset(f, 0, sizeof(*f));
    f->conninfo = th_pg_default();
    f->dir = th_tmpdir(tag);
    if (!f->dir)
        die("no tmpdir");
    f->port = th_free_port();
    char path[600];
    snprintf(path, sizeof(path), "%s/tokens.json", f->dir);
    write_file(path, "{\"agent\": [\"" FX_TOKEN_AGENT "\"], \"poller\": [\"" FX_TOKEN_POLLER
                     "\"], \"service\": [\"" FX_TOKEN_SERVICE "\"], \"reader\": [\"" FX_TOKEN_READER
                     "\"]}\n");
    snprintf(f->cfg_path, sizeof(f->cfg_path), "%s/config.json", f->dir);
    snprintf(f->log_path, sizeof(f->log_path), "%s/reconcile.log", f->dir);
    char *cfg = NULL;
    if (asprintf(&cfg,
                 "{%s\n"
                 " \"database\": \"%s\",\n"
                 " \"listen\": \"127.0.0.1:%d\",\n"
                 " \"tokens_file\": \"tokens.json\",\n"
                 " \"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},\n"
                 "           {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\"]},\n"
                 "           {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],\n"
                 " \"devices\": [{\"name\": \"nyc-border-1\", \"site\": \"nyc\", \"gnmi\": {}}],\n"
                 " \"links\": [{\"device\": \"nyc-border-1\", \"interface\": \"et-0/0/1\","
                 " \"site\": \"nyc\", \"peer_site\": \"chi\", \"circuit\": \"nyc-chi-1\","
                 " \"capacity_bps\": 10000000000}],\n"
                 " \"dedup\": {\"nfs_ports\": [2049], \"services\": [{\"name\": \"dupedog\","
                 " \"ports\": [7100], \"users\": [\"dupedog\"]}]}\n"
                 "}\n",
                 extra_json ? extra_json : "", f->conninfo, f->port) < 0)
        die("asprintf");
    write_file(f->cfg_path, cfg);
    free(cfg);
    f->db = PQconnectdb(f->conninfo);
    if (PQstatus(f->db) != CONNECTION_OK)
        die("connect: %s", PQerrorMessage(f->db));
    PGresult *r = PQexec(f->db, "SET TIME ZONE 'UTC'");
    PQclear(r);
}

void fx_start(struct fx *f)
{
    char *argv[] = {(char *)th_bin("wanledger"), "--config", f->cfg_path, "reconcile", NULL};
    f->pid = th_spawn(argv, f->log_path);
    if (f->pid < 0 || th_wait_port(f->port, 20000) != 0) {
        th_sh("cat '%s' >&2", f->log_path);
        die("wanledger reconcile did not start listening on %d", f->port);
    }
}

int fx_run(struct fx *f, const char *args, char **out)
{
    char outp[700], *cmd = NULL;
    snprintf(outp, sizeof(outp), "%s/run.out", f->dir);
    if (asprintf(&cmd, "'%s' --config '%s' %s >'%s' 2>&1", th_bin("wanledger"), f->cfg_path, args,
                 outp) < 0)
        die("asprintf");
    int rc = th_sh("%s", cmd);
    free(cmd);
    if (out) {
        FILE *fp = fopen(outp, "r");
        size_t cap = 1 << 16, n = 0;
        *out = calloc(1, cap + 1);
        if (fp && *out) {
            n = fread(*out, 1, cap, fp);
            (*out)[n] = 0;
        }
        if (fp)
            fclose(fp);
    }
    return rc;
}

void fx_stop(struct fx *f)
{
    if (f->pid > 0) {
        int st = th_stop(f->pid, 10000);
        if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
            th_sh("tail -50 '%s' >&2", f->log_path);
            die("wanledger reconcile did not exit cleanly (status %d)", st);
        }
        f->pid = 0;
    }
    if (f->db) {
        PQfinish(f->db);
        f->db = NULL;
    }
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static __thread char g_last_headers[4096];

const char *fx_last_headers(void)
{
    return g_last_headers;
}

int fx_http(struct fx *f, const char *method, const char *path, const char *token,
            const char *extra_headers, const char *body, size_t len, char **resp)
{
    if (resp)
        *resp = NULL;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)f->port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    char head[2048];
    int hn = snprintf(head, sizeof(head),
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n"
                      "%s%s%s%s%s",
                      method, path, f->port,
                      /* JSON unless the test sends its own Content-Type */
                      extra_headers && strcasestr(extra_headers, "Content-Type:")
                          ? ""
                          : "Content-Type: application/json\r\n",
                      token ? "Authorization: Bearer " : "", token ? token : "",
                      token ? "\r\n" : "", extra_headers ? extra_headers : "");
    if (body || strcmp(method, "POST") == 0)
        hn += snprintf(head + hn, sizeof(head) - (size_t)hn, "Content-Length: %zu\r\n", len);
    hn += snprintf(head + hn, sizeof(head) - (size_t)hn, "\r\n");
    /* the server may answer (413) and close before reading a large body: ignore send errors */
    if (write_all(fd, head, (size_t)hn) == 0 && body)
        (void)write_all(fd, body, len);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    int status = -1;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
        status = -1;
    char *hend = strstr(buf, "\r\n\r\n");
    snprintf(g_last_headers, sizeof(g_last_headers), "%.*s", hend ? (int)(hend - buf) : (int)n,
             buf);
    if (resp)
        *resp = strdup(hend ? hend + 4 : "");
    free(buf);
    return status;
}

long long fx_num(struct fx *f, const char *sql)
{
    PGresult *r = PQexec(f->db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1)
        die("%s: %s", sql, PQresultErrorMessage(r));
    long long v = PQgetisnull(r, 0, 0) ? -1 : atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

const char *fx_row(struct fx *f, const char *sql)
{
    static char out[4096];
    PGresult *r = PQexec(f->db, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        die("%s: %s", sql, PQresultErrorMessage(r));
    out[0] = 0;
    if (PQntuples(r) > 0) {
        size_t n = 0;
        for (int c = 0; c < PQnfields(r); c++)
            n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", c ? "|" : "",
                                  PQgetisnull(r, 0, c) ? "NULL" : PQgetvalue(r, 0, c));
    } else {
        snprintf(out, sizeof(out), "(no row)");
    }
    PQclear(r);
    return out;
}

const char *fx_row_within(struct fx *f, const char *sql, const char *want, int timeout_ms)
{
    const char *got = fx_row(f, sql);
    for (int waited = 0; strcmp(got, want) != 0 && waited < timeout_ms; waited += 50) {
        usleep(50000);
        got = fx_row(f, sql);
    }
    return got;
}

int64_t fx_window_ago(int n, int window_seconds)
{
    return tm_window_start(tm_now_us(), window_seconds) -
           (int64_t)n * window_seconds * TM_USEC_PER_SEC;
}

const char *fx_ts(int64_t us)
{
    static char buf[8][TM_RFC3339_LEN];
    static int k;
    char *b = buf[k++ % 8];
    return tm_format_rfc3339(us, b);
}

char *fx_fmt(const char *f, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, f);
    if (vasprintf(&s, f, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

/* One placeholder (key, without its @s) into rep; false when key is none of fx_expand's. */
static bool expand_key(const char *key, int64_t base_us, char *rep, size_t cap)
{
    static const struct {
        const char *key, *value;
    } fixed[] = {{"AGENT", FX_TOKEN_AGENT},
                 {"POLLER", FX_TOKEN_POLLER},
                 {"SERVICE", FX_TOKEN_SERVICE},
                 {"READER", FX_TOKEN_READER},
                 {"CTL", "\x01"}};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (strcmp(key, fixed[i].key) == 0) {
            snprintf(rep, cap, "%s", fixed[i].value);
            return true;
        }
    char *end = NULL;
    if (key[0] == 'T' || key[0] == 'E') {
        long long off = strtoll(key + 1, &end, 10);
        if (end == key + 1 || *end)
            return false;
        int64_t t = base_us + (int64_t)off * TM_USEC_PER_SEC;
        if (key[0] == 'T')
            snprintf(rep, cap, "%s", fx_ts(t));
        else
            snprintf(rep, cap, "%lld", (long long)(t / TM_USEC_PER_SEC));
        return true;
    }
    if (key[0] == 'X' && strlen(key) == 3) {
        unsigned long b = strtoul(key + 1, &end, 16);
        if (*end || b == 0)
            return false;
        rep[0] = (char)b;
        rep[1] = 0;
        return true;
    }
    if (strncmp(key, "SP", 2) == 0) {
        unsigned long n = strtoul(key + 2, &end, 10);
        if (end == key + 2 || *end || n >= cap)
            return false;
        memset(rep, ' ', n);
        rep[n] = 0;
        return true;
    }
    return false;
}

char *fx_expand(const char *in, int64_t base_us)
{
    size_t cap = strlen(in) * 2 + 256, n = 0;
    char *out = malloc(cap);
    char rep[8192];
    for (const char *p = in; *p;) {
        const char *end = NULL;
        if (*p == '@' && (end = strchr(p + 1, '@')) != NULL) {
            char key[64];
            size_t kl = (size_t)(end - p - 1);
            if (kl < sizeof(key)) {
                memcpy(key, p + 1, kl);
                key[kl] = 0;
                if (!expand_key(key, base_us, rep, sizeof(rep)))
                    end = NULL;
            } else {
                end = NULL;
            }
        }
        size_t rl = end ? strlen(rep) : 1;
        if (n + rl + 1 > cap) {
            cap = (n + rl + 1) * 2;
            out = realloc(out, cap);
        }
        if (end) {
            memcpy(out + n, rep, rl);
            p = end + 1;
        } else {
            out[n] = *p++;
        }
        n += rl;
    }
    out[n] = 0;
    return out;
}

void fx_post_ok(struct fx *f, const char *path, const char *token, char *body)
{
    char *resp = NULL;
    int st = fx_http(f, "POST", path, token, NULL, body, strlen(body), &resp);
    if (st != 200)
        die("POST %s -> %d %s", path, st, resp ? resp : "");
    free(resp);
    free(body);
}

void fx_gap_samples(struct fx *f, const int64_t *w, int first, int last)
{
    for (int i = first; i <= last; i++)
        fx_post_ok(f, "/v1/counters", FX_TOKEN_POLLER,
                   fx_fmt("{\"version\":1,\"poller\":\"p1\",\"samples\":[{\"device\":"
                          "\"nyc-border-1\",\"interface\":\"et-0/0/1\",\"at\":\"%s\","
                          "\"uptime_cs\":%d,\"in_octets\":0,\"out_octets\":%lld,\"in_pkts\":0,"
                          "\"out_pkts\":%lld}]}",
                          fx_ts(w[i]), 100000 + i * 6000, (long long)(i - 1) * 1000000000LL,
                          (long long)(i - 1) * 1000000LL));
}

void fx_gap_report(struct fx *f, const int64_t *w, int i, long long tx)
{
    fx_post_ok(f, "/v1/attributions", FX_TOKEN_AGENT,
               fx_fmt("{\"version\":1,\"host\":\"nyc-gpu-17\",\"agent_id\":\"agent-nyc\","
                      "\"seq\":%d,\"window_start\":\"%s\",\"flows\":[{\"source\":\"socket\","
                      "\"proto\":\"tcp\",\"local\":\"10.1.0.2:41522\",\"remote\":"
                      "\"10.2.0.2:5201\",\"role\":\"client\",\"tx_bytes\":%lld,\"rx_bytes\":0,"
                      "\"user\":\"alice\",\"workflow\":\"train-42\"}]}",
                      i, fx_ts(w[i]), tx));
}

char *fx_socket_report_body(const char *agent, int64_t ws, int s, int flows, size_t *len)
{
    size_t cap = 300 + (size_t)flows * 220, n = 0;
    char *b = malloc(cap);
    if (!b)
        die("out of memory");
    n += (size_t)snprintf(b + n, cap - n,
                          "{\"version\":1,\"host\":\"nyc-gpu-1\",\"agent_id\":\"%s\","
                          "\"seq\":%d,\"window_start\":\"%s\",\"flows\":[",
                          agent, s, fx_ts(ws));
    for (int k = 0; k < flows; k++)
        n +=
            (size_t)snprintf(b + n, cap - n,
                             "%s{\"source\":\"socket\",\"proto\":\"tcp\",\"local\":\"10.1.0.2:%d\","
                             "\"remote\":\"10.2.0.2:5201\",\"role\":\"client\",\"tx_bytes\":%d,"
                             "\"rx_bytes\":0,\"user\":\"alice\",\"program\":\"python3\"}",
                             k ? "," : "", 20000 + k, 1000 * s + k);
    n += (size_t)snprintf(b + n, cap - n, "]}");
    if (len)
        *len = n;
    return b;
}

void fx_socket_report(struct fx *f, const char *agent, int64_t ws, int s, int flows)
{
    fx_post_ok(f, "/v1/attributions", FX_TOKEN_AGENT,
               fx_socket_report_body(agent, ws, s, flows, NULL));
}
