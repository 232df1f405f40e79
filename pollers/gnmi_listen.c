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
#define GNMI_MAX_DELIM     64

struct gnmi_listen {
    struct event_base *base;
    const struct cfg *cfg;
    uint64_t *device_samples; /* per cfg device: samples emitted */
    struct poll_sink *sink;
    struct gnmi_map *map;
    struct evconnlistener *tcp;
    evutil_socket_t udp_fd;
    struct event *udp_ev;
    struct event *quiet_ev; /* emits samples whose link has been quiet for quiet_us */
    int64_t quiet_us;
    char delim[GNMI_MAX_DELIM + 1]; /* gnmic's `delimiter` (tcp output), "" when none */
    size_t delim_len;
    bool udp_json_logged; /* `format: json` refusal logged for the UDP socket */
    struct poll_batch batch;
    char *udp_buf;
    struct tcp_conn *conns; /* open connections, freed with the listener */
    struct gnmi_listen_stats stats;
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

static int64_t mono_us(void)
{
    return tm_mono_ns() / 1000;
}

static void deliver(struct gnmi_listen *g)
{
    g->stats.samples += g->batch.n;
    for (size_t i = 0; i < g->batch.n; i++) {
        int d = cfg_device_index(g->cfg, g->batch.items[i].device);
        if (d >= 0)
            g->device_samples[d]++;
        poll_sink_add(g->sink, &g->batch.items[i]);
    }
    poll_batch_clear(&g->batch);
}

static void count(struct gnmi_listen *g, const struct gnmi_stats *st)
{
    g->stats.ignored += st->ignored;
    g->stats.stale += st->stale;
    g->stats.subinterface += st->subif;
    g->stats.future += st->future;
    g->stats.partial += st->partial;
}

static void arm_quiet(struct gnmi_listen *g)
{
    int64_t due = gnmi_map_next_due(g->map, g->quiet_us);
    if (due < 0)
        return;
    int64_t wait = due - mono_us();
    if (wait < 1000)
        wait = 1000;
    struct timeval tv = {(time_t)(wait / 1000000), (suseconds_t)(wait % 1000000)};
    evtimer_add(g->quiet_ev, &tv);
}

static void on_quiet(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct gnmi_listen *g = arg;
    struct gnmi_stats st = {0};
    gnmi_map_flush(g->map, mono_us(), g->quiet_us, &g->batch, &st);
    count(g, &st);
    deliver(g);
    arm_quiet(g);
}

/* *json_logged: the `format: json` refusal is logged once per connection (per UDP socket). */
static void handle_message(struct gnmi_listen *g, const char *peer, bool *json_logged,
                           const char *msg, size_t len)
{
    char err[256];
    struct gnmi_stats st;
    g->stats.messages++;
    enum gnmi_rc rc =
        gnmi_map_message(g->map, msg, len, mono_us(), tm_now_us() + GNMI_MAX_FUTURE_US, &g->batch,
                         &st, err, sizeof(err));
    if (rc == GNMI_FORMAT_JSON) {
        g->stats.format_json++;
        if (!*json_logged)
            log_warn(peer,
                     "gnmi: %s sends gnmic's plain JSON format, which carries no tags: set "
                     "`format: event` on that gnmic output (outputs.NAME.format); its messages "
                     "are refused (logged once per connection)",
                     peer);
        *json_logged = true;
        return;
    }
    if (rc != GNMI_OK) {
        g->stats.rejected++;
        log_warn(peer, "gnmi: rejected a message of %zu bytes from %s: %s", len, peer, err);
        return;
    }
    count(g, &st);
    if (st.future)
        log_warn(peer,
                 "gnmi: skipped %zu event(s) from %s stamped more than %lld s ahead of this "
                 "clock (the reconciler would refuse them)",
                 st.future, peer, GNMI_MAX_FUTURE_US / 1000000);
    log_debug(peer, "gnmi: %zu sample(s), %zu event(s) ignored, %zu subinterface, %zu stale",
              g->batch.n, st.ignored, st.subif, st.stale);
    deliver(g);
    arm_quiet(g);
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

/* Consumes every complete message at the start of p[0..n); returns bytes consumed. Between
 * messages: whitespace and the configured delimiter. Junk that cannot start a message is
 * rejected up to the next newline (or delimiter). */
static size_t frame(struct gnmi_listen *g, const char *peer, bool *json_logged, const char *p,
                    size_t n, bool eof)
{
    size_t off = 0;
    while (off < n) {
        if (g->delim_len) {
            size_t left = n - off < g->delim_len ? n - off : g->delim_len;
            if (memcmp(p + off, g->delim, left) == 0) {
                if (left < g->delim_len && !eof)
                    break; /* maybe a delimiter cut by the read */
                if (left == g->delim_len) {
                    off += left;
                    continue;
                }
            }
        }
        char c = p[off];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0') {
            off++;
            continue;
        }
        if (c != '{' && c != '[') {
            const char *nl = memchr(p + off, '\n', n - off);
            const char *dl = g->delim_len ? memmem(p + off, n - off, g->delim, g->delim_len) : NULL;
            if (dl && (!nl || dl < nl))
                nl = dl;
            if (!nl && !eof)
                break;
            size_t end = nl ? (size_t)(nl - p) : n;
            if (end == off)
                end = off + 1;
            g->stats.rejected++;
            log_warn(peer, "gnmi: rejected %zu bytes from %s: not a JSON object or array%s: %.*s",
                     end - off, peer,
                     g->delim_len ? "" : " (is gnmic's `delimiter` set here as gnmi_delimiter?)",
                     (int)(end - off > 40 ? 40 : end - off), p + off);
            off = end;
            continue;
        }
        size_t len = json_value_len(p + off, n - off);
        if (len == 0) {
            if (eof && n > off) {
                g->stats.rejected++;
                log_warn(peer, "gnmi: rejected %zu bytes from %s: message cut short", n - off,
                         peer);
            }
            if (eof)
                off = n;
            break;
        }
        handle_message(g, peer, json_logged, p + off, len);
        off += len;
    }
    return off;
}

struct tcp_conn {
    struct gnmi_listen *g;
    struct bufferevent *bev;
    struct tcp_conn *prev, *next;
    bool json_logged;
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
    size_t used = frame(tc->g, tc->peer, &tc->json_logged, p, n, false);
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
            frame(tc->g, tc->peer, &tc->json_logged, p, n, true);
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
    g->stats.connections++;
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
        frame(g, peer, &g->udp_json_logged, g->udp_buf, (size_t)n, true);
    }
}

struct gnmi_listen *gnmi_listen_new(struct event_base *base, const struct cfg *cfg,
                                    struct poll_sink *sink, const struct gnmi_listen_opts *o,
                                    char *err, size_t errlen)
{
    const char *tcp_addr = o->tcp_addr, *udp_addr = o->udp_addr;
    struct gnmi_listen *g = calloc(1, sizeof(*g));
    if (!g) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    g->base = base;
    g->cfg = cfg;
    g->sink = sink;
    g->udp_fd = -1;
    g->quiet_us = (int64_t)(o->quiet_ms > 0 ? o->quiet_ms : GNMI_QUIET_MS_DEFAULT) * 1000;
    if (o->delimiter) {
        size_t dl = strlen(o->delimiter);
        if (dl > GNMI_MAX_DELIM || strpbrk(o->delimiter, "{}[]\"")) {
            snprintf(err, errlen,
                     "gnmi delimiter: at most %d bytes, none of { } [ ] \" (got %zu bytes)",
                     GNMI_MAX_DELIM, dl);
            goto fail;
        }
        memcpy(g->delim, o->delimiter, dl + 1);
        g->delim_len = dl;
    }
    g->map = gnmi_map_new(cfg);
    g->quiet_ev = evtimer_new(base, on_quiet, g);
    g->device_samples = calloc(cfg->n_devices ? cfg->n_devices : 1, sizeof(uint64_t));
    if (!g->map || !g->quiet_ev || !g->device_samples) {
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
    if (g->map && g->sink) {
        struct gnmi_stats st = {0};
        gnmi_map_flush(g->map, 0, -1, &g->batch, &st); /* what is pending goes out now */
        count(g, &st);
        deliver(g);
    }
    if (g->quiet_ev)
        event_free(g->quiet_ev);
    if (g->tcp)
        evconnlistener_free(g->tcp);
    if (g->udp_ev)
        event_free(g->udp_ev);
    if (g->udp_fd >= 0)
        close(g->udp_fd);
    free(g->udp_buf);
    gnmi_map_free(g->map);
    poll_batch_free(&g->batch);
    free(g->device_samples);
    free(g);
}

uint64_t gnmi_listen_device_samples(const struct gnmi_listen *g, size_t device_idx)
{
    return device_idx < g->cfg->n_devices ? g->device_samples[device_idx] : 0;
}

const struct gnmi_listen_stats *gnmi_listen_stats(const struct gnmi_listen *g)
{
    return &g->stats;
}
