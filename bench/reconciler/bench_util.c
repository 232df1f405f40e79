/* What the reconciler benchmarks share (bench_util.h). */
#include "bench_util.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

/* ---- a growable string ---------------------------------------------------------------------- */

void sadd(struct str *s, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < s->cap - s->n) {
            s->n += (size_t)k;
            return;
        }
        s->cap = s->cap ? s->cap * 2 : 1 << 16;
        s->p = realloc(s->p, s->cap);
        if (!s->p)
            die("out of memory");
    }
}

/* ---- a keep-alive HTTP client -----------------------------------------------------------------
 */

int http_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
        die("connect: %s", strerror(errno));
    return fd;
}

int http_post(int fd, const char *path, const char *token, const char *body, size_t len)
{
    return http_post_coded(fd, path, token, NULL, body, len);
}

/* POSTs on a kept-alive connection; returns the status. */
int http_post_coded(int fd, const char *path, const char *token, const char *coding,
                    const char *body, size_t len)
{
    char head[512];
    int hn = snprintf(head, sizeof(head),
                      "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                      "Content-Type: application/json\r\n%s%s%sContent-Length: %zu\r\n\r\n",
                      path, token, coding ? "Content-Encoding: " : "", coding ? coding : "",
                      coding ? "\r\n" : "", len);
    if (hn < 0 || (size_t)hn >= sizeof(head))
        die("POST %s: header too long", path);
    if (send(fd, head, (size_t)hn, MSG_NOSIGNAL | MSG_MORE) != hn)
        die("send");
    for (size_t off = 0; off < len;) {
        ssize_t w = send(fd, body + off, len - off, MSG_NOSIGNAL);
        if (w <= 0)
            die("send body");
        off += (size_t)w;
    }
    char buf[4096];
    size_t n = 0;
    char *end = NULL;
    while (!end) {
        ssize_t r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
        if (r <= 0)
            die("recv");
        n += (size_t)r;
        buf[n] = 0;
        end = strstr(buf, "\r\n\r\n");
    }
    int status = 0;
    sscanf(buf, "HTTP/1.1 %d", &status);
    char *cl = strcasestr(buf, "Content-Length:");
    size_t clen = cl ? strtoul(cl + 15, NULL, 10) : 0;
    size_t have = n - (size_t)(end + 4 - buf);
    while (have < clen) {
        ssize_t r = recv(fd, buf, sizeof(buf), 0);
        if (r <= 0)
            die("recv body");
        have += (size_t)r;
    }
    if (status != 200)
        fprintf(stderr, "POST %s -> %d: %.300s\n", path, status, end + 4);
    return status;
}

int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t pct(const int64_t *sorted, size_t n, double p)
{
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return sorted[i < n ? i : n - 1];
}
