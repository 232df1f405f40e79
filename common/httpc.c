/* Blocking HTTP/1.1 client over one connection per request ("Connection: close"), with a
 * deadline covering resolve, connect, TLS handshake, send and receive (common/httpc_tls.c does
 * the TLS part). Enough for posting reports, batches and transfer records. */
#include "httpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hostport.h"
#include "httpc_conn.h"

#define HTTPC_MAX_RESPONSE (16u << 20) /* a reconciler answer is a few hundred bytes */
#define HTTPC_TIMEOUT_MS   10000       /* when httpc_req.timeout_ms is not set */

int64_t httpc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int httpc_wait_fd(int fd, short ev, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - httpc_now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = ev};
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return 0;
        if (r == 0 || errno != EINTR)
            return -1;
    }
}

struct url_parts {
    int tls;
    char host[320], port[16], path[8192]; /* ClickHouse INSERTs carry their statement */
};

/* "http[s]://HOST[:PORT]/PATH" (HOST:PORT by hostport.h; port 80 / 443 by default). */
static int parse_url(const char *url, struct url_parts *u, char *why, size_t whylen)
{
    const char *h;
    if (strncmp(url, "http://", 7) == 0) {
        u->tls = 0;
        h = url + 7;
    } else if (strncmp(url, "https://", 8) == 0) {
        u->tls = 1;
        h = url + 8;
    } else {
        snprintf(why, whylen, "does not start with http:// or https://");
        return -1;
    }
    const char *slash = strchr(h, '/');
    size_t authority = slash ? (size_t)(slash - h) : strlen(h);
    struct hostport hp;
    if (hostport_parse(h, authority, HOSTPORT_PORT_OPTIONAL, &hp, why, whylen) != 0)
        return -1;
    unsigned port = hp.has_port ? hp.port : u->tls ? 443u : 80u;
    if (snprintf(u->path, sizeof(u->path), "%s", slash ? slash : "/") >= (int)sizeof(u->path) ||
        snprintf(u->host, sizeof(u->host), "%s", hp.host) >= (int)sizeof(u->host) ||
        snprintf(u->port, sizeof(u->port), "%u", port) >= (int)sizeof(u->port)) {
        snprintf(why, whylen, "too long");
        return -1;
    }
    return 0;
}

static int is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return 1;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return 0;
}

static int connect_any(struct addrinfo *ai, struct httpc_conn *c, const char *url, char *err,
                       size_t errlen)
{
    for (struct addrinfo *p = ai; p; p = p->ai_next) {
        int fd = socket(p->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            snprintf(err, errlen, "%s: socket: %s", url, strerror(errno));
            continue;
        }
        int soerr = 0;
        if (connect(fd, p->ai_addr, p->ai_addrlen) != 0 && errno != EINPROGRESS) {
            soerr = errno;
        } else if (httpc_wait_fd(fd, POLLOUT, c->deadline_ms) != 0) {
            snprintf(err, errlen, "%s: connect timed out", url);
            close(fd);
            return -1;
        } else {
            socklen_t sl = sizeof(soerr);
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
        }
        if (soerr == 0) {
            c->fd = fd;
            return 0;
        }
        snprintf(err, errlen, "%s: connect: %s", url, strerror(soerr));
        close(fd);
    }
    return -1;
}

int httpc_parse_retry_after(const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    if (*v >= '0' && *v <= '9') {
        char *end;
        long long s = strtoll(v, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r')
            end++;
        if (*end && *end != '\n')
            return -1;
        return s > 86400 ? 86400 : (int)s;
    }
    struct tm tm = {0};
    const char *e = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!e)
        return -1;
    time_t at = timegm(&tm), now = time(NULL);
    if (at <= now)
        return 0;
    return at - now > 86400 ? 86400 : (int)(at - now);
}

/* Status line and the headers read here of a response head in buf (NUL-terminated, its blank
 * line included): the body's start, or NULL when buf is not an HTTP response head. */
static char *parse_head(char *buf, struct httpc_response *resp, int *chunked, long long *clen)
{
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 || status < 100 || status > 999)
        return NULL;
    resp->status = status;
    char *bstart = strstr(buf, "\r\n\r\n");
    if (!bstart)
        return NULL;
    bstart += 4;
    *chunked = 0;
    *clen = -1;
    for (char *l = strstr(buf, "\r\n") + 2; l < bstart - 2;) {
        char *eol = strstr(l, "\r\n");
        *eol = '\0';
        if (strncasecmp(l, "Transfer-Encoding:", 18) == 0 && strcasestr(l + 18, "chunked"))
            *chunked = 1;
        else if (strncasecmp(l, "Content-Length:", 15) == 0)
            *clen = strtoll(l + 15, NULL, 10);
        else if (strncasecmp(l, "Retry-After:", 12) == 0)
            resp->retry_after_s = httpc_parse_retry_after(l + 12);
        *eol = '\r';
        l = eol + 2;
    }
    return bstart;
}

/* Status line, Retry-After, de-chunked body of a whole response in buf[0..n) (resp zeroed). */
static int parse_response(char *buf, size_t n, struct httpc_response *resp)
{
    int chunked = 0;
    long long clen;
    char *bstart = parse_head(buf, resp, &chunked, &clen);
    if (!bstart) /* no status line: not a response; no blank line: a head without a body */
        return resp->status ? 0 : -1;
    size_t avail = n - (size_t)(bstart - buf);
    char *out = malloc(avail + 1);
    if (!out)
        return -1;
    if (!chunked) {
        memcpy(out, bstart, avail);
        resp->body_len = avail;
    } else {
        size_t on = 0;
        char *p = bstart, *end = buf + n;
        while (p < end) {
            char *q;
            unsigned long sz = strtoul(p, &q, 16);
            q = strstr(q, "\r\n");
            if (!q || sz == 0)
                break;
            q += 2;
            if (sz > (size_t)(end - q))
                break;
            memcpy(out + on, q, sz);
            on += sz;
            p = q + sz + 2;
        }
        resp->body_len = on;
    }
    out[resp->body_len] = '\0';
    resp->body = out;
    return 0;
}

static int send_request(struct httpc_conn *c, const struct httpc_req *rq, const struct url_parts *u,
                        char *err, size_t errlen)
{
    const char *tok = rq->token, *scheme = "Bearer ";
    if (!tok && rq->authorization)
        tok = rq->authorization, scheme = "";
    size_t hcap = 1024 + strlen(u->path) + strlen(u->host) + (tok ? strlen(tok) : 0);
    char *hdr = malloc(hcap);
    if (!hdr) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    char authority[HOSTPORT_HOST_MAX + 16];
    hostport_format(u->host, (unsigned)atoi(u->port), authority, sizeof(authority));
    int hn = snprintf(hdr, hcap,
                      "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: wanledger\r\n"
                      "Connection: close\r\n%s%s%s%s%s%s%s"
                      "Content-Type: %s\r\nContent-Length: %zu\r\n\r\n",
                      rq->method ? rq->method : "POST", u->path, authority,
                      tok ? "Authorization: " : "", tok ? scheme : "", tok ? tok : "",
                      tok ? "\r\n" : "", rq->content_encoding ? "Content-Encoding: " : "",
                      rq->content_encoding ? rq->content_encoding : "",
                      rq->content_encoding ? "\r\n" : "",
                      rq->content_type ? rq->content_type : "application/json", rq->len);
    char e[200] = "";
    int rc = httpc_conn_write(c, hdr, (size_t)hn, e, sizeof(e));
    if (rc == 0 && rq->len)
        rc = httpc_conn_write(c, rq->body, rq->len, e, sizeof(e));
    if (rc != 0)
        snprintf(err, errlen, "%s: %s", rq->url, e);
    free(hdr);
    return rc;
}

/* 1 when buf[0..n) holds the whole response by its Content-Length (a server that keeps the
 * connection open despite "Connection: close" must not cost the whole timeout). */
static int response_complete(char *buf, size_t n)
{
    buf[n] = '\0';
    char *end = strstr(buf, "\r\n\r\n");
    if (!end)
        return 0;
    long long clen = -1;
    for (char *l = strstr(buf, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n"))
        if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
            clen = strtoll(l + 17, NULL, 10);
    return clen >= 0 && (long long)(n - (size_t)(end + 4 - buf)) >= clen;
}

/* The whole response, its first pre_n bytes already read into pre (NULL, 0: none). */
static int read_response(struct httpc_conn *c, const char *url, size_t max, const char *pre,
                         size_t pre_n, struct httpc_response *resp, char *err, size_t errlen)
{
    size_t cap = 8192, n = pre_n;
    while (cap < n + 4096 + 1)
        cap *= 2;
    char *buf = malloc(cap);
    int rc = -1;
    if (!buf)
        return -1;
    if (pre_n)
        memcpy(buf, pre, pre_n);
    for (;;) {
        if (n && response_complete(buf, n))
            break;
        if (n + 4096 + 1 > cap) {
            if (cap >= max) {
                snprintf(err, errlen, "%s: response over %zu bytes", url, max);
                goto out;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb)
                goto out;
            buf = nb;
            cap *= 2;
        }
        char e[200] = "";
        ssize_t r = httpc_conn_read(c, buf + n, cap - n - 1, e, sizeof(e));
        if (r < 0) {
            snprintf(err, errlen, "%s: %s", url, e);
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    if (parse_response(buf, n, resp) != 0) {
        snprintf(err, errlen, "%s: not an HTTP response", url);
        goto out;
    }
    rc = 0;
out:
    free(buf);
    return rc;
}

/* ---- a body handed to rq->sink as it arrives ---- */

/* De-chunking state: in a chunk's size line, its data, the CRLF after its data, the trailer
 * after the last chunk, done. */
enum { CH_SIZE, CH_DATA, CH_DATA_END, CH_TRAILER, CH_DONE };

struct stream {
    const struct httpc_req *rq;
    int chunked, state, sink_failed;
    long long clen; /* -1: to the end of the connection */
    unsigned long long left, seen;
    char line[64]; /* the size line or trailer line so far */
    size_t line_n;
    int bad; /* a malformed chunk framing */
};

static int feed(struct stream *s, const char *p, size_t n)
{
    if (!s->chunked) {
        if (s->clen >= 0 && s->seen + n > (unsigned long long)s->clen)
            n = (size_t)((unsigned long long)s->clen - s->seen);
        s->seen += n;
        if (n && s->rq->sink(s->rq->sink_ctx, p, n)) {
            s->sink_failed = 1;
            return -1;
        }
        if (s->clen >= 0 && s->seen == (unsigned long long)s->clen)
            s->state = CH_DONE;
        return 0;
    }
    while (n && s->state != CH_DONE) {
        if (s->state == CH_DATA) {
            size_t k = n < s->left ? n : (size_t)s->left;
            if (s->rq->sink(s->rq->sink_ctx, p, k)) {
                s->sink_failed = 1;
                return -1;
            }
            p += k, n -= k, s->left -= k, s->seen += k;
            if (!s->left)
                s->state = CH_DATA_END, s->line_n = 0;
            continue;
        }
        char c = *p++;
        n--;
        if (c != '\n') {
            if (s->line_n + 1 >= sizeof s->line && s->state != CH_TRAILER) {
                s->bad = 1;
                return -1;
            }
            if (s->line_n + 1 < sizeof s->line)
                s->line[s->line_n++] = c;
            continue;
        }
        if (s->line_n && s->line[s->line_n - 1] == '\r')
            s->line_n--;
        s->line[s->line_n] = '\0';
        size_t len = s->line_n;
        s->line_n = 0;
        if (s->state == CH_DATA_END) { /* the CRLF after a chunk's data */
            if (len) {
                s->bad = 1;
                return -1;
            }
            s->state = CH_SIZE;
        } else if (s->state == CH_TRAILER) {
            if (!len)
                s->state = CH_DONE;
        } else { /* CH_SIZE: hex digits, then maybe ";extension" */
            char *end;
            unsigned long long sz = strtoull(s->line, &end, 16);
            if (end == s->line || (*end && *end != ';' && *end != ' ')) {
                s->bad = 1;
                return -1;
            }
            s->left = sz;
            s->state = sz ? CH_DATA : CH_TRAILER;
        }
    }
    return 0;
}

/* Reads the head (kept in resp as usual) and, for a 200, streams the body to rq->sink; any other
 * status's body is read whole as read_response does. */
static int read_streamed(struct httpc_conn *c, const struct httpc_req *rq, size_t max,
                         struct httpc_response *resp, char *err, size_t errlen)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    int rc = -1;
    if (!buf)
        return -1;
    char *body = NULL;
    for (;;) { /* the head: up to its blank line, at most cap bytes */
        char e[200] = "";
        ssize_t r = n < cap ? httpc_conn_read(c, buf + n, cap - n, e, sizeof(e)) : -1;
        if (r < 0) {
            snprintf(err, errlen, "%s: %s", rq->url, n < cap ? e : "response head too long");
            goto out;
        }
        n += (size_t)r;
        buf[n] = '\0';
        if ((body = strstr(buf, "\r\n\r\n")) || r == 0)
            break;
    }
    struct stream s = {.rq = rq};
    if (!body || !(body = parse_head(buf, resp, &s.chunked, &s.clen))) {
        snprintf(err, errlen, "%s: not an HTTP response", rq->url);
        goto out;
    }
    if (resp->status != 200) { /* an error's text: read whole from its head, as without a sink */
        memset(resp, 0, sizeof *resp);
        resp->retry_after_s = -1;
        rc = read_response(c, rq->url, max, buf, n, resp, err, errlen);
        goto out;
    }
    s.state = CH_SIZE;
    size_t off = (size_t)(body - buf);
    for (;;) {
        if (off < n && feed(&s, buf + off, n - off) < 0)
            break;
        if (s.state == CH_DONE)
            break;
        char e[200] = "";
        ssize_t r = httpc_conn_read(c, buf, cap, e, sizeof(e));
        if (r < 0) {
            snprintf(err, errlen, "%s: %s", rq->url, e);
            goto out;
        }
        if (r == 0)
            break;
        off = 0;
        n = (size_t)r;
        /* a long answer that keeps flowing is not cut: the deadline is per piece from here */
        c->deadline_ms = httpc_now_ms() + (rq->timeout_ms > 0 ? rq->timeout_ms : HTTPC_TIMEOUT_MS);
    }
    if (s.sink_failed)
        snprintf(err, errlen, "%s: the receiver stopped the transfer", rq->url);
    else if (s.bad)
        snprintf(err, errlen, "%s: malformed chunk framing after %llu body bytes", rq->url, s.seen);
    else if (s.state != CH_DONE && (s.chunked || s.clen >= 0))
        snprintf(err, errlen, "%s: response truncated after %llu body bytes", rq->url, s.seen);
    else
        rc = 0;
out:
    free(buf);
    return rc;
}

static int request(const struct httpc_req *rq, struct httpc_response *resp, char *err,
                   size_t errlen);

/* TLS writes go through write(2), which raises SIGPIPE when the server has closed: blocked in
 * this thread for the request and a pending one discarded, so no program (the agent does not
 * ignore SIGPIPE) dies of a reconciler that went away. */
int httpc_do(const struct httpc_req *rq, struct httpc_response *resp, char *err, size_t errlen)
{
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    int rc = request(rq, resp, err, errlen);
    sigset_t pending;
    if (!sigismember(&old, SIGPIPE) && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGPIPE)) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

static int request(const struct httpc_req *rq, struct httpc_response *resp, char *err,
                   size_t errlen)
{
    memset(resp, 0, sizeof(*resp));
    resp->retry_after_s = -1;
    struct url_parts u;
    char why[300];
    if (parse_url(rq->url, &u, why, sizeof(why)) != 0) {
        snprintf(err, errlen, "bad URL \"%s\": expected http[s]://HOST[:PORT]/PATH: %s", rq->url,
                 why);
        return -1;
    }
    int timeout = rq->timeout_ms > 0 ? rq->timeout_ms : HTTPC_TIMEOUT_MS;
    struct httpc_conn c = {.fd = -1, .deadline_ms = httpc_now_ms() + timeout};
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int gr = getaddrinfo(u.host, u.port, &hints, &ai);
    if (gr != 0) {
        snprintf(err, errlen, "%s: cannot resolve %s: %s", rq->url, u.host, gai_strerror(gr));
        return -1;
    }
    int rc = -1;
    if (!u.tls && !(rq->tls && rq->tls->allow_plain_remote)) {
        for (struct addrinfo *p = ai; p; p = p->ai_next)
            if (!is_loopback(p->ai_addr)) {
                snprintf(err, errlen,
                         "%s: plain http:// to a non-loopback host would send the token in clear "
                         "text: use https:// (with ca_file) or allow_plain_http",
                         rq->url);
                goto cleanup;
            }
    }
    if (connect_any(ai, &c, rq->url, err, errlen) != 0)
        goto cleanup;
    if (u.tls) {
        char e[512];
        if (httpc_tls_start(&c, u.host, rq->tls, e, sizeof(e)) != 0) {
            snprintf(err, errlen, "%s: %s", rq->url, e);
            goto cleanup;
        }
    }
    size_t max = rq->max_response ? rq->max_response : HTTPC_MAX_RESPONSE;
    if (send_request(&c, rq, &u, err, errlen) != 0 ||
        (rq->sink ? read_streamed(&c, rq, max, resp, err, errlen)
                  : read_response(&c, rq->url, max, NULL, 0, resp, err, errlen)) != 0)
        goto cleanup;
    rc = 0;
cleanup:
    httpc_conn_close(&c);
    freeaddrinfo(ai);
    if (rc != 0)
        httpc_response_free(resp);
    return rc;
}

int httpc_post(const char *url, const char *token, const char *body, size_t len, int timeout_ms,
               struct httpc_response *resp, char *err, size_t errlen)
{
    struct httpc_req rq = {
        .url = url, .token = token, .body = body, .len = len, .timeout_ms = timeout_ms};
    return httpc_do(&rq, resp, err, errlen);
}

int httpc_get(const char *url, const char *token, int timeout_ms, struct httpc_response *resp,
              char *err, size_t errlen)
{
    struct httpc_req rq = {.method = "GET", .url = url, .token = token, .timeout_ms = timeout_ms};
    return httpc_do(&rq, resp, err, errlen);
}

void httpc_response_free(struct httpc_response *resp)
{
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}
