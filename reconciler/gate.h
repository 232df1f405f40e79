/* The connection gate in front of evhttp: every accepted connection gets a bufferevent filter
 * that reads the request head itself and asks the server (gate_decide_fn) before evhttp sees a
 * byte, so a request without a valid token, over its role's body limit or otherwise refused is
 * answered with the project's JSON error from the headers alone and its body is discarded, never
 * buffered. The gate also caps connections (503 + Retry-After beyond max_connections), answers
 * EMFILE at accept with a 503 from a reserved descriptor and pauses accepting with back-off (no
 * spin; one log line per state change), and puts total deadlines on the head and on the body
 * (drip-feeding one byte at a time does not reset them). With an SSL_CTX, connections are TLS. */
#ifndef WL_GATE_H
#define WL_GATE_H

#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>

struct evbuffer;

/* The request head as the gate read it. Strings point into the gate's copy of the head. */
struct gate_head {
    const char *method; /* "POST" */
    const char *path;   /* the target without its query */
    const char *authorization;
    const char *content_encoding;
    bool has_length, chunked;
    uint64_t content_length;
    bool peer_loopback;
    const char *peer; /* "127.0.0.1" */
};

struct gate_verdict {
    int status;      /* 0 = pass to evhttp; else the status to answer with */
    char msg[240];   /* the JSON error */
    char path[128];  /* the JSON error's path */
    int retry_after; /* seconds, 0 = no header */
    bool log;        /* log the refusal */
};

typedef void (*gate_decide_fn)(void *arg, const struct gate_head *h, struct gate_verdict *v);

struct gate_opts {
    int max_connections;
    int header_timeout_s; /* request line + headers within this, from the first byte */
    int body_timeout_s;   /* the whole body within this, from the end of the head */
    size_t max_header_bytes;
    SSL_CTX *ssl; /* NULL = plain HTTP */
};

struct gate;

/* Installs the gate on http (evhttp_set_bevcb). Call gate_listen after binding. */
struct gate *gate_new(struct event_base *base, struct evhttp *http, const struct gate_opts *o,
                      gate_decide_fn decide, void *arg);
/* Takes over accept errors of a bound socket (EMFILE back-off). 0 or -1. */
int gate_listen(struct gate *g, struct evhttp_bound_socket *bs);
void gate_free(struct gate *g);

/* Requests are answered in order: the server takes the request's connection before it replies
 * (gate_conn_of; NULL when the client is gone) and calls gate_answered with it after
 * evhttp_send_reply, so a refusal of a request pipelined behind it is written after the reply. */
struct gate_conn;
struct gate_conn *gate_conn_of(struct gate *g, struct evhttp_request *req);
void gate_answered(struct gate_conn *c);

/* Prometheus text of the gate's counters (open connections, refusals, deadline closes, EMFILE). */
void gate_metrics(const struct gate *g, struct evbuffer *out);

#endif
