/* The connection gate in front of evhttp (see gate.h).
 *
 * evhttp (libevent 2.1) reads a whole body before its request callback runs and has no hook
 * between the headers and the body for incoming requests (evhttp_set_newreqcb arrived in 2.2).
 * So every connection's bufferevent is a filter (evhttp_set_bevcb) whose input filter sees the
 * bytes first: it reads the request head, asks the server, and only then passes head and body on
 * (or answers itself and discards the body). Requests are answered in order: a refusal of a
 * request pipelined behind one evhttp still works on waits until the server has answered that
 * one (gate_answered). */
#include "gate.h"
#include "http_reason.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/listener.h>

#include "jsonw.h"
#include "log.h"
#include "timeutil.h"

#define LINGER_MS   1000 /* after a refusal: keep reading (and discarding) this long */
#define BACKOFF_MIN 50   /* ms: accept pause after EMFILE, doubled up to BACKOFF_MAX */
#define BACKOFF_MAX 1000
#define LOG_PER_SEC 10           /* refusal log lines per second; the rest are counted */
#define READ_MAX    (256u << 10) /* bytes per read of a body (read_body) */
#define N_CODES     12

static const int CODES[N_CODES] = {400, 401, 403, 404, 405, 408, 411, 413, 415, 431, 503, 505};

enum cst {
    C_HEAD,    /* reading a request head */
    C_BODY,    /* passing body_left bytes to evhttp */
    C_PENDING, /* refused behind an unanswered request: discarding, answer once it is answered */
    C_REJECT,  /* refusal written: discarding input until the connection closes */
};

struct conn {
    struct gate *g;
    struct bufferevent *under, *top;
    int fd;
    enum cst st;
    uint64_t body_left;
    size_t scanned;  /* bytes of the pending head already searched for its end */
    int outstanding; /* requests passed to evhttp and not yet answered */
    bool first_done; /* the first request's head arrived (its deadline runs from accept) */
    bool closing, counted, overcap;
    bool close_after; /* the client asked to close after the request evhttp is working on */
    struct event *deadline, *kick;
    struct evbuffer_cb_entry *drain_cb;
    struct gate_verdict pend; /* the refusal waiting in C_PENDING */
};

struct gate {
    struct event_base *base;
    struct evhttp *http;
    struct gate_opts o;
    gate_decide_fn decide;
    void *arg;
    struct evconnlistener *lev;
    struct event *resume_ev;
    int reserve_fd;
    int backoff_ms;
    bool starved;
    struct conn **by_fd; /* gate_answered finds a request's connection by its descriptor */
    int n_by_fd;
    size_t n_live; /* connections not yet freed: the gate outlives the last of them */
    bool released; /* gate_free was called; the last free_conn frees the rest */
    uint64_t n_open, refused_cap, refused_emfile, emfile_pauses, deadline_head, deadline_body;
    uint64_t buffered_bytes, direct_bytes; /* body bytes read by the socket bufferevent, and
                                            * straight off the socket by read_body */
    uint64_t refused[N_CODES];
    int64_t log_sec;
    int log_n;
    uint64_t log_suppressed;
};

/* ---- logging and replies ------------------------------------------------------------------- */

static bool may_log(struct gate *g)
{
    int64_t sec = tm_mono_ns() / 1000000000LL;
    if (sec != g->log_sec) {
        if (g->log_suppressed)
            log_info("gate", "%llu refusal log line(s) suppressed in the last second",
                     (unsigned long long)g->log_suppressed);
        g->log_sec = sec;
        g->log_n = 0;
        g->log_suppressed = 0;
    }
    if (g->log_n++ < LOG_PER_SEC)
        return true;
    g->log_suppressed++;
    return false;
}

static void count_refusal(struct gate *g, int status)
{
    for (int i = 0; i < N_CODES; i++)
        if (CODES[i] == status)
            g->refused[i]++;
}

/* The project's JSON error as a complete HTTP/1.1 response that closes the connection. */
static void format_reply(struct evbuffer *o, const struct gate_verdict *v)
{
    struct evbuffer *body = evbuffer_new();
    if (!body)
        return;
    jw_error(body, v->msg, v->path);
    evbuffer_add_printf(o,
                        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                        "Cache-Control: no-store\r\nConnection: close\r\nContent-Length: %zu\r\n",
                        v->status, http_reason(v->status), evbuffer_get_length(body));
    if (v->status == 401)
        evbuffer_add_printf(o, "WWW-Authenticate: Bearer realm=\"wanledger\"\r\n");
    if (v->retry_after > 0)
        evbuffer_add_printf(o, "Retry-After: %d\r\n", v->retry_after);
    evbuffer_add(o, "\r\n", 2);
    evbuffer_add_buffer(o, body);
    evbuffer_free(body);
}

/* ---- connection life ----------------------------------------------------------------------- */

/* evhttp sets the descriptor after make_bev: learn it on first use. */
static void bind_fd(struct conn *c)
{
    if (c->fd >= 0)
        return;
    c->fd = bufferevent_getfd(c->under);
    if (c->fd >= 0 && c->fd < c->g->n_by_fd)
        c->g->by_fd[c->fd] = c;
}

static void set_deadline(struct conn *c, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(c->deadline, &tv);
}

/* Makes evhttp drop the connection as if the peer had failed (frees c through free_conn). */
static void kill_conn(struct conn *c)
{
    bufferevent_trigger_event(c->top, BEV_EVENT_ERROR | BEV_EVENT_READING, 0);
}

static void on_kill(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    kill_conn(arg);
}

/* From inside a filter call the connection must not be freed: drop it from the loop. */
static void kill_conn_later(struct conn *c)
{
    struct timeval now = {0, 0};
    event_del(c->deadline);
    event_assign(c->deadline, c->g->base, -1, 0, on_kill, c);
    event_add(c->deadline, &now);
}

static void on_drained(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    (void)info;
    struct conn *c = arg;
    if (c->closing || evbuffer_get_length(buf) > 0)
        return;
    c->closing = true;
    if (c->fd >= 0)
        shutdown(c->fd, SHUT_WR); /* the answer is out; what the client still sends is dropped */
    set_deadline(c, LINGER_MS);
}

/* Answers v on the connection itself and closes it once the answer is out. */
static void refuse_now(struct conn *c, const struct gate_verdict *v)
{
    struct gate *g = c->g;
    count_refusal(g, v->status);
    c->st = C_REJECT;
    format_reply(bufferevent_get_output(c->under), v);
    c->drain_cb = evbuffer_add_cb(bufferevent_get_output(c->under), on_drained, c);
    set_deadline(c, LINGER_MS + 10000); /* a client that never reads the answer */
    bufferevent_enable(c->under, EV_WRITE);
}

static void refuse(struct conn *c, const struct gate_verdict *v)
{
    if (c->outstanding > 0) {
        c->pend = *v; /* answered in order, after the request evhttp is working on */
        c->st = C_PENDING;
        set_deadline(c, c->g->o.body_timeout_s * 1000);
        return;
    }
    refuse_now(c, v);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct conn *c = arg;
    struct gate *g = c->g;
    bind_fd(c);
    if (c->st == C_HEAD && !c->closing && c->outstanding == 0) {
        g->deadline_head++;
        struct gate_verdict v = {.status = 408};
        snprintf(v.msg, sizeof(v.msg), "the request head did not arrive within %d s",
                 g->o.header_timeout_s);
        snprintf(v.path, sizeof(v.path), "$");
        refuse_now(c, &v);
        return;
    }
    if (c->st == C_BODY)
        g->deadline_body++;
    kill_conn(c); /* a body too slow, a refusal never read, or the linger is over */
}

static void gate_destroy(struct gate *g)
{
    free(g->by_fd);
    free(g);
}

static void free_conn(void *arg)
{
    struct conn *c = arg;
    struct gate *g = c->g;
    if (c->deadline)
        event_free(c->deadline);
    if (c->kick)
        event_free(c->kick);
    if (c->drain_cb)
        evbuffer_remove_cb_entry(bufferevent_get_output(c->under), c->drain_cb);
    if (c->counted)
        g->n_open--;
    if (c->fd >= 0 && c->fd < g->n_by_fd && g->by_fd[c->fd] == c)
        g->by_fd[c->fd] = NULL;
    free(c);
    /* evhttp_free leaves bufferevents to finalize later (as late as event_base_free) */
    if (--g->n_live == 0 && g->released)
        gate_destroy(g);
}

/* ---- the request head ---------------------------------------------------------------------- */

static bool is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           strchr("!#$%&'*+-.^_`|~", ch) != NULL;
}

static int bad_head(struct gate_verdict *v, int status, const char *path, const char *msg)
{
    v->status = status;
    v->log = true;
    snprintf(v->msg, sizeof(v->msg), "%s", msg);
    snprintf(v->path, sizeof(v->path), "%s", path);
    return -1;
}

/* Strict digits into a uint64 (no sign, no spaces inside, no overflow). */
static int parse_length(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
            return -1;
    }
    *out = v;
    return 0;
}

/* Parses the head (NUL-terminated, lines ending in LF or CRLF, ending with an empty line) in
 * place into h. -1 with v filled when it is malformed. */
static int parse_head(char *head, struct gate_head *h, struct gate_verdict *v)
{
    char *save = NULL, *line = strtok_r(head, "\n", &save);
    if (!line)
        return bad_head(v, 400, "$", "empty request line");
    size_t ll = strlen(line);
    if (ll && line[ll - 1] == '\r')
        line[--ll] = 0;
    char *sp1 = strchr(line, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || strchr(sp2 + 1, ' '))
        return bad_head(v, 400, "$", "malformed request line");
    *sp1 = *sp2 = 0;
    h->method = line;
    for (const char *p = line; *p; p++)
        if (!is_tchar((unsigned char)*p))
            return bad_head(v, 400, "$", "malformed request method");
    if (strcmp(sp2 + 1, "HTTP/1.1") != 0 && strcmp(sp2 + 1, "HTTP/1.0") != 0)
        return bad_head(v, 505, "$", "only HTTP/1.0 and HTTP/1.1 are served");
    char *target = sp1 + 1;
    if (strncasecmp(target, "http://", 7) == 0 || strncasecmp(target, "https://", 8) == 0) {
        char *slash = strchr(strstr(target, "://") + 3, '/');
        target = slash ? slash : (char *)"/";
    }
    if (target[0] != '/')
        return bad_head(v, 400, "$", "malformed request target");
    char *q = strchr(target, '?');
    if (q)
        *q = 0;
    h->path = target;
    const char *cl = NULL;
    while ((line = strtok_r(NULL, "\n", &save)) != NULL) {
        ll = strlen(line);
        if (ll && line[ll - 1] == '\r')
            line[--ll] = 0;
        if (ll == 0)
            break;
        if (line[0] == ' ' || line[0] == '\t')
            return bad_head(v, 400, "$", "folded header lines are not accepted");
        char *colon = strchr(line, ':');
        if (!colon || colon == line)
            return bad_head(v, 400, "$", "malformed header line");
        *colon = 0;
        for (const char *p = line; *p; p++)
            if (!is_tchar((unsigned char)*p))
                return bad_head(v, 400, "$", "malformed header name");
        char *val = colon + 1;
        while (*val == ' ' || *val == '\t')
            val++;
        size_t vl = strlen(val);
        while (vl && (val[vl - 1] == ' ' || val[vl - 1] == '\t'))
            val[--vl] = 0;
        for (const char *p = val; *p; p++)
            if ((unsigned char)*p < 0x20 && *p != '\t')
                return bad_head(v, 400, line, "control character in a header value");
        if (strcasecmp(line, "Content-Length") == 0) {
            uint64_t n;
            if (parse_length(val, &n) < 0)
                return bad_head(v, 400, "Content-Length", "Content-Length is not a number");
            if (cl && (!h->has_length || n != h->content_length))
                return bad_head(v, 400, "Content-Length", "two different Content-Length headers");
            cl = val;
            h->has_length = true;
            h->content_length = n;
        } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
            h->chunked = true;
        } else if (strcasecmp(line, "Authorization") == 0) {
            if (h->authorization)
                return bad_head(v, 400, "Authorization", "two Authorization headers");
            h->authorization = val;
        } else if (strcasecmp(line, "Content-Encoding") == 0) {
            h->content_encoding = val;
        }
    }
    if (h->chunked && h->has_length)
        return bad_head(v, 400, "Transfer-Encoding",
                        "both Transfer-Encoding and Content-Length: send one");
    if (h->chunked)
        return bad_head(v, 411, "Transfer-Encoding",
                        "chunked bodies are not accepted: send Content-Length");
    return 0;
}

static void peer_of(int fd, char *buf, size_t n, bool *loopback)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    *loopback = false;
    snprintf(buf, n, "?");
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
        return;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        inet_ntop(AF_INET, &a->sin_addr, buf, (socklen_t)n);
        *loopback = (ntohl(a->sin_addr.s_addr) >> 24) == 127;
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        inet_ntop(AF_INET6, &a->sin6_addr, buf, (socklen_t)n);
        *loopback = IN6_IS_ADDR_LOOPBACK(&a->sin6_addr) ||
                    (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127);
    }
}

/* A complete head of hl bytes sits at the front of src: decide and pass or refuse. */
static void on_head(struct conn *c, struct evbuffer *src, struct evbuffer *dst, size_t hl)
{
    struct gate *g = c->g;
    char *head = malloc(hl + 1);
    struct gate_head h = {0};
    struct gate_verdict v = {0};
    char peer[64];
    peer_of(c->fd, peer, sizeof(peer), &h.peer_loopback);
    h.peer = peer;
    if (!head) {
        v.status = 503;
        v.retry_after = 1;
        snprintf(v.msg, sizeof(v.msg), "out of memory");
    } else if (evbuffer_copyout(src, head, hl) != (ev_ssize_t)hl || (head[hl] = 0, false)) {
        bad_head(&v, 400, "$", "unreadable request head");
    } else if (memchr(head, 0, hl))
        bad_head(&v, 400, "$", "NUL byte in the request head");
    else if (parse_head(head, &h, &v) == 0)
        g->decide(g->arg, &h, &v);
    if (v.status && v.log && may_log(g)) /* log.c escapes what the client sent */
        log_info(peer, "%s %s refused (%d): %s at %s", h.method ? h.method : "?",
                 h.path ? h.path : "?", v.status, v.msg, v.path);
    free(head);
    if (v.status) {
        evbuffer_drain(src, hl);
        c->body_left = 0;
        refuse(c, &v);
        return;
    }
    /* evhttp gets the head without Connection headers, as HTTP/1.1: it never closes a
     * connection itself (behind a filter it would close before the answer left the socket);
     * the gate closes once the answer is out (close_after) */
    char *copy = malloc(hl + 1);
    if (!copy) {
        kill_conn_later(c);
        evbuffer_drain(src, evbuffer_get_length(src));
        c->st = C_REJECT;
        return;
    }
    evbuffer_remove(src, copy, hl);
    copy[hl] = 0;
    bool http10 = false, close = false;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        size_t ll = strlen(line);
        if (ll && line[ll - 1] == '\r')
            line[--ll] = 0;
        if (line == copy) {
            if (ll >= 8 && strcmp(line + ll - 8, "HTTP/1.0") == 0) {
                http10 = true;
                line[ll - 1] = '1';
            }
        } else if (ll == 0) {
            break;
        } else if (strncasecmp(line, "Connection:", 11) == 0) {
            if (strcasestr(line + 11, "close"))
                close = true;
            continue;
        }
        evbuffer_add(dst, line, ll);
        evbuffer_add(dst, "\r\n", 2);
    }
    evbuffer_add(dst, "\r\n", 2);
    free(copy);
    c->close_after = close || http10;
    c->outstanding++;
    c->body_left = h.has_length ? h.content_length : 0;
    c->scanned = 0;
    if (c->body_left) {
        c->st = C_BODY;
        set_deadline(c, g->o.body_timeout_s * 1000);
    } else {
        event_del(c->deadline); /* the next request's deadline starts at its first byte */
    }
}

/* Length of the head at the front of src (up to and including the empty line), 0 if it is not
 * complete yet. Resumes the search where the last call stopped. */
static size_t head_length(struct conn *c, struct evbuffer *src)
{
    size_t len = evbuffer_get_length(src);
    size_t cap = c->g->o.max_header_bytes + 4;
    size_t n = len < cap ? len : cap;
    const unsigned char *p = evbuffer_pullup(src, (ev_ssize_t)n);
    if (!p)
        return 0;
    size_t i = c->scanned > 3 ? c->scanned - 3 : 0;
    for (; i < n; i++) {
        if (p[i] != '\n')
            continue;
        if (i + 1 < n && p[i + 1] == '\n')
            return i + 2;
        if (i + 2 < n && p[i + 1] == '\r' && p[i + 2] == '\n')
            return i + 3;
    }
    c->scanned = n;
    return 0;
}

/* The rest of a body on a plain connection, straight off the socket into evhttp's input, in
 * reads of up to READ_MAX bytes (never past the body: the next request's head stays in the socket
 * for the socket bufferevent). libevent 2.1's socket bufferevent reads at most 4 KiB per event
 * loop turn (evbuffer_read's cap; evbuffer_set_max_read is 2.2), which cost a 1,000-flow report
 * ~75 turns through the loop and this filter. A short read, EOF or an error stops here: the
 * socket bufferevent's own read then sees what the socket holds (more data, EOF, the error). */
static void read_body(struct conn *c, struct evbuffer *dst)
{
    while (c->fd >= 0 && c->body_left > 0) {
        size_t want = c->body_left < READ_MAX ? (size_t)c->body_left : READ_MAX;
        struct evbuffer_iovec v[2];
        int nv = evbuffer_reserve_space(dst, (ev_ssize_t)want, v, 2);
        if (nv <= 0)
            return;
        struct iovec io[2];
        size_t room = 0;
        for (int i = 0; i < nv; i++) {
            size_t l = v[i].iov_len < want - room ? v[i].iov_len : want - room;
            io[i] = (struct iovec){.iov_base = v[i].iov_base, .iov_len = l};
            room += l;
        }
        ssize_t got = readv(c->fd, io, nv);
        if (got <= 0) {
            evbuffer_commit_space(dst, v, 0);
            return;
        }
        size_t left = (size_t)got;
        for (int i = 0; i < nv; i++) {
            v[i].iov_len = left < io[i].iov_len ? left : io[i].iov_len;
            left -= v[i].iov_len;
        }
        evbuffer_commit_space(dst, v, nv);
        c->body_left -= (uint64_t)got;
        c->g->direct_bytes += (uint64_t)got;
        if ((size_t)got < room)
            return; /* the socket is empty for now */
    }
}

static enum bufferevent_filter_result in_filter(struct evbuffer *src, struct evbuffer *dst,
                                                ev_ssize_t limit, enum bufferevent_flush_mode mode,
                                                void *arg)
{
    (void)limit, (void)mode;
    struct conn *c = arg;
    struct gate *g = c->g;
    bool moved = false;
    bind_fd(c);
    while (evbuffer_get_length(src) > 0) {
        if (c->st == C_REJECT || c->st == C_PENDING) {
            evbuffer_drain(src, evbuffer_get_length(src));
            break;
        }
        if (c->st == C_BODY) {
            size_t n = evbuffer_get_length(src);
            if (n > c->body_left)
                n = (size_t)c->body_left;
            evbuffer_remove_buffer(src, dst, n);
            c->body_left -= n;
            g->buffered_bytes += n;
            moved = true;
            if (c->body_left > 0 && !g->o.ssl)
                read_body(c, dst);
            if (c->body_left == 0) {
                c->st = C_HEAD;
                event_del(c->deadline);
            }
            continue;
        }
        /* C_HEAD: the deadline runs from accept for the first request, from its first byte
         * for later ones */
        if (c->first_done && !event_pending(c->deadline, EV_TIMEOUT, NULL))
            set_deadline(c, g->o.header_timeout_s * 1000);
        size_t hl = head_length(c, src);
        if (hl == 0) {
            if (evbuffer_get_length(src) > g->o.max_header_bytes) {
                struct gate_verdict v = {.status = 431, .log = true};
                snprintf(v.msg, sizeof(v.msg), "the request head is larger than %zu bytes",
                         g->o.max_header_bytes);
                snprintf(v.path, sizeof(v.path), "$");
                if (may_log(g))
                    log_info("gate", "%s", v.msg);
                evbuffer_drain(src, evbuffer_get_length(src));
                refuse(c, &v);
            }
            break;
        }
        c->first_done = true;
        size_t before = evbuffer_get_length(dst);
        on_head(c, src, dst, hl);
        moved = moved || evbuffer_get_length(dst) > before;
    }
    return moved ? BEV_OK : BEV_NEED_MORE;
}

/* ---- accepting ----------------------------------------------------------------------------- */

static void on_overcap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct conn *c = arg;
    struct gate_verdict v = {.status = 503, .retry_after = 1};
    snprintf(v.msg, sizeof(v.msg), "busy: more than %d connections open, retry",
             c->g->o.max_connections);
    snprintf(v.path, sizeof(v.path), "$");
    bind_fd(c);
    refuse_now(c, &v);
}

static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
    struct gate *g = arg;
    struct conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->g = g;
    c->fd = -1;
    g->n_live++;
    if (g->o.ssl) {
        SSL *ssl = SSL_new(g->o.ssl);
        c->under = ssl ? bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                        BEV_OPT_CLOSE_ON_FREE)
                       : NULL;
        if (!c->under && ssl)
            SSL_free(ssl);
        if (c->under)
            bufferevent_openssl_set_allow_dirty_shutdown(c->under, 1);
    } else {
        c->under = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    }
    if (c->under)
        c->top =
            bufferevent_filter_new(c->under, in_filter, NULL, BEV_OPT_CLOSE_ON_FREE, free_conn, c);
    if (!c->top) {
        if (c->under)
            bufferevent_free(c->under);
        free(c);
        g->n_live--;
        return NULL; /* evhttp then makes a plain socket bufferevent; rare (out of memory) */
    }
    if (g->starved) {
        g->starved = false;
        log_info("gate", "accepting connections again (%llu refused while out of descriptors)",
                 (unsigned long long)g->refused_emfile);
    }
    c->deadline = event_new(base, -1, 0, on_deadline, c);
    if (!c->deadline) {
        bufferevent_free(c->top); /* frees c */
        return NULL;
    }
    c->overcap = g->n_open >= (uint64_t)g->o.max_connections;
    if (c->overcap) {
        g->refused_cap++;
        c->st = C_REJECT; /* nothing of it reaches evhttp */
        /* the descriptor is set after this returns: answer from the loop's next turn */
        c->kick = event_new(base, -1, 0, on_overcap, c);
        struct timeval now = {0, 0};
        if (c->kick)
            event_add(c->kick, &now);
        set_deadline(c, LINGER_MS + 10000);
        return c->top;
    }
    c->counted = true;
    g->n_open++;
    set_deadline(c, g->o.header_timeout_s * 1000); /* the first head, from accept */
    return c->top;
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct gate *g = arg;
    evconnlistener_enable(g->lev);
}

/* accept() failed. Out of descriptors: answer one waiting client with a 503 from the reserved
 * descriptor (so the backlog does not keep the listener readable for ever) and pause accepting
 * with back-off. Anything else: libevent already ignores EAGAIN/EINTR; pause briefly. */
/* The listener's callback argument is evhttp's (evhttp_bind_listener sets it): the error
 * callback finds its gate here. Written on the event loop thread only. */
#define MAX_LISTENERS 8
static struct {
    struct evconnlistener *lev;
    struct gate *g;
} g_listeners[MAX_LISTENERS];

static struct gate *gate_of_listener(struct evconnlistener *lev)
{
    for (int i = 0; i < MAX_LISTENERS; i++)
        if (g_listeners[i].lev == lev)
            return g_listeners[i].g;
    return NULL;
}

static void on_accept_error(struct evconnlistener *lev, void *arg)
{
    (void)arg; /* evhttp's */
    struct gate *g = gate_of_listener(lev);
    int err = EVUTIL_SOCKET_ERROR();
    if (!g)
        return;
    if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        if (!g->starved) {
            g->starved = true;
            g->backoff_ms = BACKOFF_MIN;
            log_error("gate",
                      "accept: %s: refusing new connections with 503 and pausing accepts "
                      "(%llu open)",
                      strerror(err), (unsigned long long)g->n_open);
        } else if (g->backoff_ms < BACKOFF_MAX) {
            g->backoff_ms *= 2;
        }
        if (g->reserve_fd >= 0) {
            close(g->reserve_fd);
            g->reserve_fd = -1;
            int fd = accept4(evconnlistener_get_fd(lev), NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd >= 0) {
                static const char resp[] =
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    "Retry-After: 1\r\nConnection: close\r\nContent-Length: 62\r\n\r\n"
                    "{\"error\":\"busy: out of file descriptors, retry\",\"path\":\"$\"}\n";
                ssize_t w = send(fd, resp, sizeof(resp) - 1, MSG_NOSIGNAL);
                (void)w;
                close(fd);
                g->refused_emfile++;
            }
            g->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        }
        g->emfile_pauses++;
    } else {
        g->backoff_ms = BACKOFF_MIN;
    }
    evconnlistener_disable(lev);
    struct timeval tv = {g->backoff_ms / 1000, (g->backoff_ms % 1000) * 1000};
    event_add(g->resume_ev, &tv);
}

struct gate *gate_new(struct event_base *base, struct evhttp *http, const struct gate_opts *o,
                      gate_decide_fn decide, void *arg)
{
    struct gate *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    g->base = base;
    g->http = http;
    g->o = *o;
    g->decide = decide;
    g->arg = arg;
    g->backoff_ms = BACKOFF_MIN;
    /* keep clear of the descriptor limit: database connections, files, the reserve */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        int room = (int)rl.rlim_cur - 64;
        if (room < 8)
            room = 8;
        if (g->o.max_connections > room)
            g->o.max_connections = room;
        g->n_by_fd = (int)rl.rlim_cur;
    } else {
        g->n_by_fd = 65536;
    }
    g->by_fd = calloc((size_t)g->n_by_fd, sizeof(*g->by_fd));
    g->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    g->resume_ev = event_new(base, -1, 0, on_resume, g);
    if (!g->by_fd || !g->resume_ev) {
        gate_free(g);
        return NULL;
    }
    evhttp_set_bevcb(http, make_bev, g);
    return g;
}

int gate_listen(struct gate *g, struct evhttp_bound_socket *bs)
{
    g->lev = evhttp_bound_socket_get_listener(bs);
    if (!g->lev)
        return -1;
    for (int i = 0; i < MAX_LISTENERS; i++)
        if (!g_listeners[i].lev) {
            g_listeners[i].lev = g->lev;
            g_listeners[i].g = g;
            evconnlistener_set_error_cb(g->lev, on_accept_error);
            return 0;
        }
    return -1;
}

void gate_free(struct gate *g)
{
    if (!g)
        return;
    for (int i = 0; i < MAX_LISTENERS; i++)
        if (g_listeners[i].g == g)
            g_listeners[i].lev = NULL, g_listeners[i].g = NULL;
    if (g->resume_ev)
        event_free(g->resume_ev);
    if (g->reserve_fd >= 0)
        close(g->reserve_fd);
    g->resume_ev = NULL;
    g->reserve_fd = -1;
    g->released = true;
    if (g->n_live == 0)
        gate_destroy(g);
}

struct gate_conn *gate_conn_of(struct gate *g, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    int fd = bev ? bufferevent_getfd(bev) : -1;
    if (!g || fd < 0 || fd >= g->n_by_fd || !g->by_fd[fd] || g->by_fd[fd]->top != bev)
        return NULL;
    return (struct gate_conn *)g->by_fd[fd];
}

void gate_answered(struct gate_conn *gc)
{
    struct conn *c = (struct conn *)gc;
    if (!c)
        return;
    /* evhttp queued the answer while the filter's writing was disabled, and enabling it does
     * not move queued data: push it to the socket's buffer now (evhttp keeps the connection:
     * it never sees Connection: close, see on_head) */
    bufferevent_flush(c->top, EV_WRITE, BEV_NORMAL);
    if (c->outstanding > 0)
        c->outstanding--;
    if (c->outstanding > 0)
        return;
    if (c->st == C_PENDING) {
        refuse_now(c, &c->pend);
    } else if (c->close_after && !c->closing) {
        c->st = C_REJECT; /* anything after is not read */
        struct evbuffer *o = bufferevent_get_output(c->under);
        c->drain_cb = evbuffer_add_cb(o, on_drained, c);
        if (evbuffer_get_length(o) == 0)
            on_drained(o, NULL, c);
    }
}

void gate_metrics(const struct gate *g, struct evbuffer *out)
{
    evbuffer_add_printf(
        out,
        "# HELP wanledger_http_connections_open Connections open now.\n"
        "# TYPE wanledger_http_connections_open gauge\n"
        "wanledger_http_connections_open %llu\n"
        "# HELP wanledger_http_connections_refused_total Connections answered 503 "
        "at accept.\n"
        "# TYPE wanledger_http_connections_refused_total counter\n"
        "wanledger_http_connections_refused_total{reason=\"max_connections\"} %llu\n"
        "wanledger_http_connections_refused_total{reason=\"out_of_fds\"} %llu\n"
        "# HELP wanledger_http_accept_pauses_total Accept pauses after EMFILE.\n"
        "# TYPE wanledger_http_accept_pauses_total counter\n"
        "wanledger_http_accept_pauses_total %llu\n"
        "# HELP wanledger_http_deadline_closes_total Requests cut at their "
        "deadline.\n"
        "# TYPE wanledger_http_deadline_closes_total counter\n"
        "wanledger_http_deadline_closes_total{phase=\"head\"} %llu\n"
        "wanledger_http_deadline_closes_total{phase=\"body\"} %llu\n"
        "# HELP wanledger_http_refused_before_body_total Requests refused from "
        "their head, body discarded.\n"
        "# TYPE wanledger_http_refused_before_body_total counter\n",
        (unsigned long long)g->n_open, (unsigned long long)g->refused_cap,
        (unsigned long long)g->refused_emfile, (unsigned long long)g->emfile_pauses,
        (unsigned long long)g->deadline_head, (unsigned long long)g->deadline_body);
    for (int i = 0; i < N_CODES; i++)
        evbuffer_add_printf(out, "wanledger_http_refused_before_body_total{code=\"%d\"} %llu\n",
                            CODES[i], (unsigned long long)g->refused[i]);
    evbuffer_add_printf(out,
                        "# HELP wanledger_http_body_bytes_total Request body bytes passed to "
                        "evhttp, by who read them off the socket.\n"
                        "# TYPE wanledger_http_body_bytes_total counter\n"
                        "wanledger_http_body_bytes_total{read=\"bufferevent\"} %llu\n"
                        "wanledger_http_body_bytes_total{read=\"direct\"} %llu\n",
                        (unsigned long long)g->buffered_bytes, (unsigned long long)g->direct_bytes);
}
