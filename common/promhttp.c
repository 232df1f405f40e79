/* /metrics on its own thread (see promhttp.h). */
#include "promhttp.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "hostport.h"

struct promhttp {
    struct event_base *base;
    struct evhttp *http;
    struct event *stop_ev;
    pthread_t thread;
    promhttp_render_fn render;
    void *arg;
    int port;
};

static void on_metrics(struct evhttp_request *req, void *arg)
{
    struct promhttp *p = arg;
    if (evhttp_request_get_command(req) != EVHTTP_REQ_GET &&
        evhttp_request_get_command(req) != EVHTTP_REQ_HEAD) {
        evhttp_send_error(req, 405, "GET /metrics");
        return;
    }
    char *text = p->render(p->arg);
    struct evbuffer *b = evbuffer_new();
    if (!text || !b) {
        evhttp_send_error(req, 500, "out of memory");
    } else {
        evbuffer_add(b, text, strlen(text));
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                          "text/plain; version=0.0.4; charset=utf-8");
        evhttp_send_reply(req, 200, "OK", b);
    }
    if (b)
        evbuffer_free(b);
    free(text);
}

static void init_threads(void)
{
    (void)evthread_use_pthreads(); /* promhttp_stop wakes the loop from another thread */
}

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    event_base_loopbreak(arg);
}

static void *run(void *arg)
{
    struct promhttp *p = arg;
    event_base_dispatch(p->base);
    return NULL;
}

static void free_parts(struct promhttp *p)
{
    if (p->stop_ev)
        event_free(p->stop_ev);
    if (p->http)
        evhttp_free(p->http);
    if (p->base)
        event_base_free(p->base);
    free(p);
}

struct promhttp *promhttp_start(const char *listen, promhttp_render_fn render, void *arg, char *err,
                                size_t errlen)
{
    struct hostport hp;
    char why[200];
    if (!listen ||
        hostport_parse(listen, strlen(listen), HOSTPORT_ALLOW_ZERO, &hp, why, sizeof(why)) < 0) {
        snprintf(err, errlen, "metrics address: %s", listen ? why : "missing");
        return NULL;
    }
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, init_threads);
    struct promhttp *p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    p->render = render;
    p->arg = arg;
    p->base = event_base_new();
    p->http = p->base ? evhttp_new(p->base) : NULL;
    p->stop_ev = p->base ? event_new(p->base, -1, 0, on_stop, p->base) : NULL;
    if (!p->http || !p->stop_ev) {
        snprintf(err, errlen, "cannot start the metrics server");
        free_parts(p);
        return NULL;
    }
    evhttp_set_allowed_methods(p->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    evhttp_set_timeout(p->http, 10);
    evhttp_set_cb(p->http, "/metrics", on_metrics, p);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(p->http, hp.host, hp.port);
    if (!bs) {
        snprintf(err, errlen, "cannot listen on %s for /metrics", listen);
        free_parts(p);
        return NULL;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    p->port = hp.port;
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&ss, &sl) == 0)
        p->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        snprintf(err, errlen, "cannot start the metrics thread");
        free_parts(p);
        return NULL;
    }
    return p;
}

int promhttp_port(const struct promhttp *p)
{
    return p ? p->port : 0;
}

void promhttp_stop(struct promhttp *p)
{
    if (!p)
        return;
    event_active(p->stop_ev, 0, 0); /* thread-safe: evthread_use_pthreads */
    pthread_join(p->thread, NULL);
    free_parts(p);
}
