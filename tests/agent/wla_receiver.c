/* A stand-in reconciler for the agent's delivery tests: accepts POST /v1/attributions on
 * 127.0.0.1:PORT (or, with --tls CERT KEY, HTTPS with that certificate), decodes the body's
 * Content-Encoding (zstd, gzip), appends "seq window_start flows" of every report to OUT (flushed
 * per request) and answers 200. While STATUS_FILE exists, it answers the status written there
 * instead ("503 3" adds Retry-After: 3) and records nothing. Every request (accepted or not) is
 * logged on stdout as "POST status wire_bytes body_bytes encoding monotonic_ms" and, when the
 * report carries it, "spool_dropped entries bytes".
 *
 *   wla_receiver PORT OUT [STATUS_FILE] [--tls CERT KEY] */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <openssl/ssl.h>

#include "th_decode.h"

static FILE *out;
static const char *status_file;

static int current_status(int *retry_after)
{
    *retry_after = -1;
    FILE *f = status_file ? fopen(status_file, "r") : NULL;
    if (!f)
        return 200;
    int code = 500;
    if (fscanf(f, "%d %d", &code, retry_after) < 2)
        *retry_after = -1;
    fclose(f);
    return code;
}

static void reply(struct evhttp_request *req, int status, int retry_after, const char *text)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "%s", text);
    if (retry_after >= 0) {
        char ra[16];
        snprintf(ra, sizeof(ra), "%d", retry_after);
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", ra);
    }
    evhttp_send_reply(req, status, status < 300 ? "OK" : "Test", b);
    evbuffer_free(b);
}

static void on_post(struct evhttp_request *req, void *arg)
{
    (void)arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *raw = malloc(len + 1);
    if (!raw) {
        evhttp_send_error(req, 500, "oom");
        return;
    }
    evbuffer_remove(in, raw, len);
    const char *enc = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Encoding");
    size_t blen = 0;
    char *body = th_decode_body(enc, raw, len, &blen);
    free(raw);
    int ra;
    int status = current_status(&ra);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("POST %d %zu %zu %s %lld\n", body ? status : 400, len, blen, enc ? enc : "identity",
           (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    fflush(stdout);
    if (!body) {
        reply(req, 400, -1, "{\"error\":\"cannot decode\"}");
        return;
    }
    if (status != 200) {
        reply(req, status, ra, "{\"error\":\"test\"}");
        free(body);
        return;
    }
    cJSON *j = cJSON_Parse(body);
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(j, "seq");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(j, "window_start");
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(j, "flows");
    const cJSON *sd = cJSON_GetObjectItemCaseSensitive(j, "spool_dropped");
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST || !cJSON_IsNumber(seq) ||
        !cJSON_IsString(ws)) {
        evhttp_send_error(req, 400, "bad report");
    } else {
        if (sd)
            printf("spool_dropped %.0f %.0f\n",
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sd, "entries")),
                   cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sd, "bytes")));
        fflush(stdout);
        fprintf(out, "%.0f %s %d\n", seq->valuedouble, ws->valuestring, cJSON_GetArraySize(fl));
        fflush(out);
        reply(req, 200, -1, "{}");
    }
    cJSON_Delete(j);
    free(body);
}

static void on_term(evutil_socket_t s, short w, void *base)
{
    (void)s;
    (void)w;
    event_base_loopbreak(base);
}

static struct bufferevent *tls_bev(struct event_base *base, void *ctx)
{
    return bufferevent_openssl_socket_new(base, -1, SSL_new(ctx), BUFFEREVENT_SSL_ACCEPTING,
                                          BEV_OPT_CLOSE_ON_FREE);
}

int main(int argc, char **argv)
{
    const char *cert = NULL, *key = NULL;
    int n = 0;
    char *pos[3] = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tls") && i + 2 < argc) {
            cert = argv[++i];
            key = argv[++i];
        } else if (n < 3) {
            pos[n++] = argv[i];
        }
    }
    if (n < 2) {
        fprintf(stderr, "usage: wla_receiver PORT OUT [STATUS_FILE] [--tls CERT KEY]\n");
        return 2;
    }
    status_file = pos[2];
    out = fopen(pos[1], "a");
    struct event_base *base = event_base_new();
    struct evhttp *http = evhttp_new(base);
    if (!out || !base || !http || evhttp_bind_socket(http, "127.0.0.1", (uint16_t)atoi(pos[0]))) {
        fprintf(stderr, "wla_receiver: cannot listen on 127.0.0.1:%s\n", pos[0]);
        return 1;
    }
    SSL_CTX *ctx = NULL;
    if (cert) {
        ctx = SSL_CTX_new(TLS_server_method());
        if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
            SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
            fprintf(stderr, "wla_receiver: cannot load %s / %s\n", cert, key);
            return 1;
        }
        evhttp_set_bevcb(http, tls_bev, ctx);
    }
    evhttp_set_cb(http, "/v1/attributions", on_post, NULL);
    struct event *t = evsignal_new(base, SIGTERM, on_term, base);
    event_add(t, NULL);
    printf("ready\n");
    fflush(stdout);
    event_base_dispatch(base);
    event_free(t);
    evhttp_free(http);
    event_base_free(base);
    if (ctx)
        SSL_CTX_free(ctx);
    fclose(out);
    return 0;
}
