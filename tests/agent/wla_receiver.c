/* A stand-in reconciler for the spool test: accepts POST /v1/attributions on 127.0.0.1:PORT,
 * appends "seq window_start flows" of every report to OUT (flushed per request) and answers 200.
 *
 *   wla_receiver PORT OUT */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

static FILE *out;

static void on_post(struct evhttp_request *req, void *arg)
{
    (void)arg;
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *body = malloc(len + 1);
    if (!body) {
        evhttp_send_error(req, 500, "oom");
        return;
    }
    evbuffer_remove(in, body, len);
    body[len] = '\0';
    cJSON *j = cJSON_Parse(body);
    const cJSON *seq = cJSON_GetObjectItemCaseSensitive(j, "seq");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(j, "window_start");
    const cJSON *fl = cJSON_GetObjectItemCaseSensitive(j, "flows");
    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST || !cJSON_IsNumber(seq) ||
        !cJSON_IsString(ws)) {
        evhttp_send_error(req, 400, "bad report");
    } else {
        fprintf(out, "%.0f %s %d\n", seq->valuedouble, ws->valuestring, cJSON_GetArraySize(fl));
        fflush(out);
        struct evbuffer *b = evbuffer_new();
        evbuffer_add_printf(b, "{}");
        evhttp_send_reply(req, 200, "OK", b);
        evbuffer_free(b);
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

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: wla_receiver PORT OUT\n");
        return 2;
    }
    out = fopen(argv[2], "a");
    struct event_base *base = event_base_new();
    struct evhttp *http = evhttp_new(base);
    if (!out || !base || !http || evhttp_bind_socket(http, "127.0.0.1", (uint16_t)atoi(argv[1]))) {
        fprintf(stderr, "wla_receiver: cannot listen on 127.0.0.1:%s\n", argv[1]);
        return 1;
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
    fclose(out);
    return 0;
}
