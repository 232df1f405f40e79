/* wl-http-sink: a small real HTTP server (libevent evhttp) that records every request it gets,
 * for tests and the demo: the webhook receiver of the alerts and the stand-in reconciler of the
 * shipper's test.
 *
 *   wl-http-sink --listen 127.0.0.1:PORT --out FILE [--status-file F] [--reject TEXT]
 *                [--seconds T] [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM]]
 *                [--refuse-encoding]
 *
 * With --tls-cert/--tls-key it serves HTTPS (libevent's OpenSSL bufferevents); with
 * --tls-client-ca it also requires a client certificate signed by that CA (mutual TLS).
 * --refuse-encoding answers 415 to any Content-Encoding (a reconciler without decompression).
 *
 * Appends one JSON line per request to FILE: {"method","path","authorization","body"} (body as a
 * string), flushed before the response is sent. Answers 200 {"ok":true}, or, while F exists, the
 * status code written in F (a test switches failures on and off at run time; "503 3" also sends
 * Retry-After: 3), or 400 when the body contains TEXT (a record the "reconciler" refuses). A body
 * with Content-Encoding zstd or gzip is decoded first (tests/harness/th_decode.h) and the line
 * also has "encoding" and "wire_bytes"; one that does not decode gets 400. Exits after T
 * seconds (default 3600) or on SIGTERM/SIGINT. */
#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "th_decode.h"

static FILE *out;
static const char *status_file;
static const char *reject_text;
static int refuse_encoding;

static int current_status(int *retry_after)
{
    *retry_after = -1;
    if (!status_file)
        return 200;
    FILE *f = fopen(status_file, "r");
    if (!f)
        return 200;
    int code = 200;
    int n = fscanf(f, "%d %d", &code, retry_after);
    if (n < 1 || code < 100 || code > 599)
        code = 500;
    if (n < 2)
        *retry_after = -1;
    fclose(f);
    return code;
}

static void on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *body = malloc(len + 1);
    if (!body) {
        evhttp_send_error(req, 500, NULL);
        return;
    }
    evbuffer_copyout(in, body, len);
    body[len] = '\0';
    const char *enc = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Encoding");
    size_t dlen = 0;
    char *decoded = th_decode_body(enc, body, len, &dlen);
    int bad_encoding = !decoded;
    if (decoded) {
        free(body);
        body = decoded;
    }
    const char *method = "OTHER";
    switch (evhttp_request_get_command(req)) {
    case EVHTTP_REQ_GET:
        method = "GET";
        break;
    case EVHTTP_REQ_POST:
        method = "POST";
        break;
    case EVHTTP_REQ_PUT:
        method = "PUT";
        break;
    default:
        break;
    }
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    cJSON *rec = cJSON_CreateObject();
    cJSON_AddStringToObject(rec, "method", method);
    cJSON_AddStringToObject(rec, "path", evhttp_request_get_uri(req));
    cJSON_AddStringToObject(rec, "authorization", auth ? auth : "");
    cJSON_AddStringToObject(rec, "body", bad_encoding ? "" : body);
    cJSON_AddStringToObject(rec, "encoding", enc ? enc : "");
    cJSON_AddNumberToObject(rec, "wire_bytes", (double)len);
    int retry_after = -1;
    int status = enc && refuse_encoding                     ? 415
                 : bad_encoding                             ? 400
                 : reject_text && strstr(body, reject_text) ? 400
                                                            : current_status(&retry_after);
    cJSON_AddNumberToObject(rec, "status", status);
    char *line = cJSON_PrintUnformatted(rec);
    cJSON_Delete(rec);
    free(body);
    if (line) {
        fprintf(out, "%s\n", line);
        fflush(out);
        free(line);
    }
    struct evbuffer *reply = evbuffer_new();
    evbuffer_add_printf(reply,
                        status < 300 ? "{\"ok\":true}" : "{\"error\":\"test\",\"path\":\"$\"}");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    if (retry_after >= 0 && status >= 300) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", retry_after);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", ra);
    }
    evhttp_send_reply(req, status, status < 300 ? "OK" : "Test failure", reply);
    evbuffer_free(reply);
}

static void on_stop(evutil_socket_t fd, short ev, void *arg)
{
    (void)fd;
    (void)ev;
    event_base_loopbreak(arg);
}

static struct bufferevent *tls_bev(struct event_base *base, void *ctx)
{
    return bufferevent_openssl_socket_new(base, -1, SSL_new(ctx), BUFFEREVENT_SSL_ACCEPTING,
                                          BEV_OPT_CLOSE_ON_FREE);
}

int main(int argc, char **argv)
{
    const char *listen = NULL, *out_path = NULL, *tls_cert = NULL, *tls_key = NULL,
               *tls_client_ca = NULL;
    double seconds = 3600;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--refuse-encoding")) {
            refuse_encoding = 1;
            i--;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "wl-http-sink: '%s' needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "--listen"))
            listen = argv[i + 1];
        else if (!strcmp(argv[i], "--out"))
            out_path = argv[i + 1];
        else if (!strcmp(argv[i], "--status-file"))
            status_file = argv[i + 1];
        else if (!strcmp(argv[i], "--reject"))
            reject_text = argv[i + 1];
        else if (!strcmp(argv[i], "--seconds"))
            seconds = strtod(argv[i + 1], NULL);
        else if (!strcmp(argv[i], "--tls-cert"))
            tls_cert = argv[i + 1];
        else if (!strcmp(argv[i], "--tls-key"))
            tls_key = argv[i + 1];
        else if (!strcmp(argv[i], "--tls-client-ca"))
            tls_client_ca = argv[i + 1];
        else {
            fprintf(stderr, "wl-http-sink: unknown option '%s'\n", argv[i]);
            return 2;
        }
    }
    const char *colon = listen ? strrchr(listen, ':') : NULL;
    if (!colon || !out_path || seconds <= 0 || seconds > 86400) {
        fprintf(stderr, "usage: wl-http-sink --listen ADDR:PORT --out FILE [--status-file F] "
                        "[--reject TEXT] [--seconds T]\n");
        return 2;
    }
    char host[64];
    snprintf(host, sizeof host, "%.*s", (int)(colon - listen), listen);
    int port = atoi(colon + 1);
    out = fopen(out_path, "a");
    if (!out) {
        perror(out_path);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    struct event_base *base = event_base_new();
    struct evhttp *http = evhttp_new(base);
    evhttp_set_gencb(http, on_request, NULL);
    evhttp_set_max_body_size(http, 64 * 1024 * 1024);
    SSL_CTX *ctx = NULL;
    if (tls_cert) {
        ctx = SSL_CTX_new(TLS_server_method());
        if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, tls_cert) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, tls_key ? tls_key : tls_cert, SSL_FILETYPE_PEM) != 1) {
            fprintf(stderr, "wl-http-sink: cannot load %s / %s\n", tls_cert, tls_key);
            return 1;
        }
        if (tls_client_ca) {
            if (SSL_CTX_load_verify_locations(ctx, tls_client_ca, NULL) != 1) {
                fprintf(stderr, "wl-http-sink: cannot load %s\n", tls_client_ca);
                return 1;
            }
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        }
        evhttp_set_bevcb(http, tls_bev, ctx);
    }
    if (evhttp_bind_socket(http, host, (ev_uint16_t)port) != 0) {
        fprintf(stderr, "wl-http-sink: cannot listen on %s\n", listen);
        return 1;
    }
    struct event *sigterm = evsignal_new(base, SIGTERM, on_stop, base);
    struct event *sigint = evsignal_new(base, SIGINT, on_stop, base);
    struct event *timer = evtimer_new(base, on_stop, base);
    struct timeval tv = {.tv_sec = (time_t)seconds};
    evsignal_add(sigterm, NULL);
    evsignal_add(sigint, NULL);
    evtimer_add(timer, &tv);
    event_base_dispatch(base);
    event_free(sigterm);
    event_free(sigint);
    event_free(timer);
    evhttp_free(http);
    event_base_free(base);
    if (ctx)
        SSL_CTX_free(ctx);
    fclose(out);
    return 0;
}
