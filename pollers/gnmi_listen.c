/* gnmic tcp/udp output listener: frames JSON values out of the byte stream and hands each whole
 * message to gnmi_event. */
#include "gnmi_listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gnmi_event.h"
#include "hostport.h"
#include "log.h"
#include "timeutil.h"

#define GNMI_MAX_MSG       (16u << 20) /* a message larger than this is refused */
#define GNMI_MAX_FUTURE_US (60LL * 1000000LL)

struct gnmi_listen {
    struct event_base *base;
    struct poll_sink *sink;
    struct gnmi_map *map;
    struct evconnlistener *tcp;
    evutil_socket_t udp_fd;
    struct event *udp_ev;
    struct poll_batch batch;
    char *udp_buf;
    struct tcp_conn *conns; /* open connections, freed with the listener */
};

/* A listen address: HOST:PORT by hostport.h, the host an IP address. */
static int parse_addr(const char *addr, struct sockaddr_storage *ss, socklen_t *sl, char *why,
                      size_t whylen)
{
    struct hostport hp;
    memset(ss, 0, sizeof(*ss));
    if (hostport_parse(addr, strlen(addr), HOSTPORT_ALLOW_ZERO, &hp, why, whylen) != 0)
        return -1;
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (hp.family == AF_INET && inet_pton(AF_INET, hp.host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(hp.port);
        *sl = sizeof(*s4);
        return 0;
    }
    if (hp.family == AF_INET6 && inet_pton(AF_INET6, hp.host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(hp.port);
        *sl = sizeof(*s6);
        return 0;
    }
    snprintf(why, whylen, "\"%s\": the host must be an IP address", addr);
    return -1;
}

static void peer_name(const struct sockaddr *sa, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(buf, len, "%s:%d", host, port);
}

static void handle_message(struct gnmi_listen *g, const char *peer, const char *msg, size_t len)
{
    char err[256];
    struct gnmi_stats st;
    if (gnmi_map_message(g->map, msg, len, tm_now_us() + GNMI_MAX_FUTURE_US, &g->batch, &st, err,
                         sizeof(err)) != 0) {
        log_warn(peer, "gnmi: rejected a message of %zu bytes from %s: %s", len, peer, err);
        return;
    }
    if (st.future)
        log_warn(peer,
                 "gnmi: skipped %zu event(s) from %s stamped more than %lld s ahead of this "
                 "clock (the reconciler would refuse them)",
                 st.future, peer, GNMI_MAX_FUTURE_US / 1000000);
    log_debug(peer, "gnmi: %zu sample(s), %zu event(s) ignored", g->batch.n, st.ignored);
    for (size_t i = 0; i < g->batch.n; i++)
        poll_sink_add(g->sink, &g->batch.items[i]);
    poll_batch_clear(&g->batch);
}

/* Length of the JSON value (object or array) at the start of p, 0 if incomplete. Only brackets
 * outside strings count; the value's validity is checked by the parser afterwards. */
static size_t json_value_len(const char *p, size_t n)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth == 0)
                return i + 1;
        }
    }
    return 0;
}

/* Consumes every complete message at the start of p[0..n); returns bytes consumed. Junk that
 * cannot start a message is rejected up to the next newline. */
static size_t frame(struct gnmi_listen *g, const char *peer, const char *p, size_t n, bool eof)
{
    size_t off = 0;
    while (off < n) {
        char c = p[off];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0') {
            off++;
            continue;
        }
        if (c != '{' && c != '[') {
            const char *nl = memchr(p + off, '\n', n - off);
            if (!nl && !eof)
                break;
            size_t end = nl ? (size_t)(nl - p) : n;
            log_warn(peer, "gnmi: rejected %zu bytes from %s: not a JSON object or array: %.*s",
                     end - off, peer, (int)(end - off > 40 ? 40 : end - off), p + off);
            off = end;
            continue;
        }
        size_t len = json_value_len(p + off, n - off);
        if (len == 0) {
            if (eof && n > off)
                log_warn(peer, "gnmi: rejected %zu bytes from %s: message cut short", n - off,
                         peer);
            if (eof)
                off = n;
            break;
        }
        handle_message(g, peer, p + off, len);
        off += len;
    }
    return off;
}

struct tcp_conn {
    struct gnmi_listen *g;
    struct bufferevent *bev;
    struct tcp_conn *prev, *next;
    char peer[64];
};

static void conn_close(struct tcp_conn *tc)
{
    if (tc->prev)
        tc->prev->next = tc->next;
    else
        tc->g->conns = tc->next;
    if (tc->next)
        tc->next->prev = tc->prev;
    bufferevent_free(tc->bev);
    free(tc);
}

static void tcp_read(struct bufferevent *bev, void *arg)
{
    struct tcp_conn *tc = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);
    const char *p = (const char *)evbuffer_pullup(in, -1);
    size_t used = frame(tc->g, tc->peer, p, n, false);
    evbuffer_drain(in, used);
    if (evbuffer_get_length(in) > GNMI_MAX_MSG) {
        log_warn(tc->peer, "gnmi: message from %s exceeds %u bytes; closing the connection",
                 tc->peer, GNMI_MAX_MSG);
        conn_close(tc);
    }
}

static void tcp_event(struct bufferevent *bev, short what, void *arg)
{
    struct tcp_conn *tc = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        struct evbuffer *in = bufferevent_get_input(bev);
        size_t n = evbuffer_get_length(in);
        if (n) {
            const char *p = (const char *)evbuffer_pullup(in, -1);
            frame(tc->g, tc->peer, p, n, true);
        }
        log_debug(tc->peer, "gnmi: connection from %s closed", tc->peer);
        conn_close(tc);
    }
}

static void tcp_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int len,
                       void *arg)
{
    (void)l;
    (void)len;
    struct gnmi_listen *g = arg;
    struct tcp_conn *tc = calloc(1, sizeof(*tc));
    struct bufferevent *bev = bufferevent_socket_new(g->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!tc || !bev) {
        free(tc);
        if (bev)
            bufferevent_free(bev);
        else
            close(fd);
        return;
    }
    tc->g = g;
    tc->bev = bev;
    tc->next = g->conns;
    if (g->conns)
        g->conns->prev = tc;
    g->conns = tc;
    peer_name(sa, tc->peer, sizeof(tc->peer));
    log_debug(tc->peer, "gnmi: connection from %s", tc->peer);
    bufferevent_setcb(bev, tcp_read, NULL, tcp_event, tc);
    bufferevent_enable(bev, EV_READ);
}

static void udp_read(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    struct gnmi_listen *g = arg;
    for (int k = 0; k < 64; k++) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        ssize_t n = recvfrom(fd, g->udp_buf, 65536, 0, (struct sockaddr *)&ss, &sl);
        if (n < 0)
            return;
        char peer[64];
        peer_name((struct sockaddr *)&ss, peer, sizeof(peer));
        frame(g, peer, g->udp_buf, (size_t)n, true);
    }
}

struct gnmi_listen *gnmi_listen_new(struct event_base *base, const struct cfg *cfg,
                                    struct poll_sink *sink, const char *tcp_addr,
                                    const char *udp_addr, char *err, size_t errlen)
{
    struct gnmi_listen *g = calloc(1, sizeof(*g));
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->base = base;
    g->sink = sink;
    g->udp_fd = -1;
    g->map = gnmi_map_new(cfg);
    if (!g->map) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    struct sockaddr_storage ss;
    socklen_t sl;
    char why[300];
    if (tcp_addr) {
        if (parse_addr(tcp_addr, &ss, &sl, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "gnmi tcp listen address: expected HOST:PORT, got %s", why);
            goto fail;
        }
        g->tcp =
            evconnlistener_new_bind(base, tcp_accept, g, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
                                    16, (struct sockaddr *)&ss, (int)sl);
        if (!g->tcp) {
            snprintf(err, errlen, "gnmi tcp listen on %s: %s", tcp_addr, strerror(errno));
            goto fail;
        }
    }
    if (udp_addr) {
        if (parse_addr(udp_addr, &ss, &sl, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "gnmi udp listen address: expected HOST:PORT, got %s", why);
            goto fail;
        }
        g->udp_buf = malloc(65536);
        g->udp_fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        int rcvbuf = 4 << 20;
        if (g->udp_fd >= 0)
            setsockopt(g->udp_fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
        if (!g->udp_buf || g->udp_fd < 0 || bind(g->udp_fd, (struct sockaddr *)&ss, sl) != 0) {
            snprintf(err, errlen, "gnmi udp listen on %s: %s", udp_addr, strerror(errno));
            goto fail;
        }
        g->udp_ev = event_new(base, g->udp_fd, EV_READ | EV_PERSIST, udp_read, g);
        if (!g->udp_ev) {
            snprintf(err, errlen, "out of memory");
            goto fail;
        }
        event_add(g->udp_ev, NULL);
    }
    return g;
fail:
    gnmi_listen_free(g);
    return NULL;
}

void gnmi_listen_free(struct gnmi_listen *g)
{
    if (!g)
        return;
    while (g->conns)
        conn_close(g->conns);
    if (g->tcp)
        evconnlistener_free(g->tcp);
    if (g->udp_ev)
        event_free(g->udp_ev);
    if (g->udp_fd >= 0)
        close(g->udp_fd);
    free(g->udp_buf);
    gnmi_map_free(g->map);
    poll_batch_free(&g->batch);
    free(g);
}
