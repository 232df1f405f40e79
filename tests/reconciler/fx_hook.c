/* The webhook receiver of the alert-delivery tests (see fx_hook.h). */
#include "fx_hook.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "timeutil.h"

static struct {
    int fd, port;
    pthread_t thread;
    pthread_mutex_t mu;
    struct fx_hook_post posts[FX_HOOK_MAX];
    int n;
    int fail_first; /* answer 503 to this many requests */
    int conns;      /* connection threads running */
    volatile bool stop;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* One request (head and Content-Length body): 0; -1 on a timeout before its first byte; -2 at
 * the end of the stream or on an error. */
static int read_request(int fd, char **path, char **body)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1), *end = NULL;
    while (!end) {
        ssize_t r = recv(fd, buf + n, cap - n, 0);
        if (r <= 0) {
            int rc = r < 0 && errno == EAGAIN && n == 0 ? -1 : -2;
            free(buf);
            return rc;
        }
        n += (size_t)r;
        buf[n] = 0;
        end = strstr(buf, "\r\n\r\n");
        if (!end && n == cap) {
            free(buf);
            return -2;
        }
    }
    size_t head = (size_t)(end - buf) + 4, clen = 0;
    char *cl = strcasestr(buf, "\r\nContent-Length:");
    if (cl)
        clen = strtoul(cl + 17, NULL, 10);
    if (head + clen > cap) {
        cap = head + clen;
        buf = realloc(buf, cap + 1);
    }
    while (n < head + clen) {
        ssize_t r = recv(fd, buf + n, head + clen - n, 0);
        if (r <= 0) {
            free(buf);
            return -2;
        }
        n += (size_t)r;
    }
    char method[16], p[512];
    if (sscanf(buf, "%15s %511s", method, p) != 2) {
        free(buf);
        return -2;
    }
    *path = strdup(p);
    *body = strndup(buf + head, clen);
    free(buf);
    return 0;
}

static void *serve_conn(void *arg)
{
    int c = (int)(intptr_t)arg;
    struct timeval tv = {1, 0};
    setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (!R.stop) {
        char *path = NULL, *body = NULL;
        int rc = read_request(c, &path, &body);
        if (rc == -1)
            continue;
        if (rc < 0)
            break;
        pthread_mutex_lock(&R.mu);
        int status = R.fail_first > 0 ? 503 : 200;
        if (R.fail_first > 0)
            R.fail_first--;
        if (R.n < FX_HOOK_MAX) {
            R.posts[R.n++] = (struct fx_hook_post){.at_ns = tm_mono_ns(),
                                                   .wall_us = tm_now_us(),
                                                   .status = status,
                                                   .path = path,
                                                   .body = body};
        } else {
            free(path);
            free(body);
        }
        pthread_mutex_unlock(&R.mu);
        char resp[128];
        int len = snprintf(resp, sizeof(resp), "HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n",
                           status, status == 200 ? "OK" : "Service Unavailable");
        if (send(c, resp, (size_t)len, MSG_NOSIGNAL) != len)
            break;
    }
    close(c);
    pthread_mutex_lock(&R.mu);
    R.conns--;
    pthread_mutex_unlock(&R.mu);
    return NULL;
}

static void *accept_loop(void *arg)
{
    (void)arg;
    while (!R.stop) {
        int c = accept(R.fd, NULL, NULL); /* SO_RCVTIMEO: wakes every 200 ms to see stop */
        if (c < 0)
            continue;
        pthread_t t;
        pthread_mutex_lock(&R.mu);
        R.conns++;
        pthread_mutex_unlock(&R.mu);
        if (pthread_create(&t, NULL, serve_conn, (void *)(intptr_t)c) == 0) {
            pthread_detach(t);
            continue;
        }
        close(c);
        pthread_mutex_lock(&R.mu);
        R.conns--;
        pthread_mutex_unlock(&R.mu);
    }
    return NULL;
}

void fx_hook_start(int fail_first)
{
    R.fail_first = fail_first;
    R.n = 0;
    R.stop = false;
    R.fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(R.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    struct timeval tv = {0, 200000};
    setsockopt(R.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (bind(R.fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(R.fd, (struct sockaddr *)&a, &len) != 0 || listen(R.fd, 8) != 0 ||
        pthread_create(&R.thread, NULL, accept_loop, NULL) != 0) {
        fprintf(stderr, "fx_hook_start: %s\n", strerror(errno));
        abort();
    }
    R.port = ntohs(a.sin_port);
}

int fx_hook_port(void)
{
    return R.port;
}

int fx_hook_count(void)
{
    pthread_mutex_lock(&R.mu);
    int n = R.n;
    pthread_mutex_unlock(&R.mu);
    return n;
}

int fx_hook_wait(int n, int timeout_s)
{
    int64_t until = tm_mono_ns() + (int64_t)timeout_s * 1000000000LL;
    while (fx_hook_count() < n && tm_mono_ns() < until)
        usleep(20000);
    return fx_hook_count();
}

struct fx_hook_post fx_hook_get(int i)
{
    pthread_mutex_lock(&R.mu);
    struct fx_hook_post p = i >= 0 && i < R.n ? R.posts[i] : (struct fx_hook_post){0};
    pthread_mutex_unlock(&R.mu);
    return p;
}

void fx_hook_stop(void)
{
    R.stop = true;
    pthread_join(R.thread, NULL);
    close(R.fd);
    /* connection threads see stop within their 1 s receive timeout */
    int64_t until = tm_mono_ns() + 5 * 1000000000LL;
    for (;;) {
        pthread_mutex_lock(&R.mu);
        int left = R.conns;
        pthread_mutex_unlock(&R.mu);
        if (left == 0 || tm_mono_ns() > until)
            break;
        usleep(20000);
    }
    pthread_mutex_lock(&R.mu);
    for (int i = 0; i < R.n; i++) {
        free((char *)R.posts[i].path);
        free((char *)R.posts[i].body);
    }
    R.n = 0;
    pthread_mutex_unlock(&R.mu);
}
