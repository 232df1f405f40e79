/* Blocking HTTP/1.1 client over one TCP connection per request ("Connection: close"), with a
 * deadline covering connect, send and receive. Enough for posting reports and webhooks. */
#include "httpc.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "hostport.h"

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "http://HOST[:PORT]/PATH" (HOST:PORT by hostport.h, port 80 by default). */
static int parse_url(const char *url, char *host, size_t hl, char *port, size_t pl, char *path,
                     size_t ptl, char *err, size_t errlen)
{
    if (strncmp(url, "http://", 7) != 0) {
        snprintf(err, errlen, "does not start with http://");
        return -1;
    }
    const char *h = url + 7;
    const char *slash = strchr(h, '/');
    size_t authority = slash ? (size_t)(slash - h) : strlen(h);
    struct hostport hp;
    if (hostport_parse(h, authority, HOSTPORT_PORT_OPTIONAL, &hp, err, errlen) != 0)
        return -1;
    if (snprintf(path, ptl, "%s", slash ? slash : "/") >= (int)ptl ||
        snprintf(host, hl, "%s", hp.host) >= (int)hl ||
        snprintf(port, pl, "%u", hp.has_port ? hp.port : 80u) >= (int)pl) {
        snprintf(err, errlen, "too long");
        return -1;
    }
    return 0;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return -1;
        struct pollfd p = {.fd = fd, .events = ev};
        int r = poll(&p, 1, (int)left);
        if (r > 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return -1;
        if (r == 0)
            return -1;
    }
}

static int request(const char *method, const char *url, const char *token, const char *body,
                   size_t len, int timeout_ms, struct httpc_response *resp, char *err,
                   size_t errlen)
{
    memset(resp, 0, sizeof(*resp));
    char host[320], port[320], path[2048];
    char why[300];
    if (parse_url(url, host, sizeof(host), port, sizeof(port), path, sizeof(path), why,
                  sizeof(why)) != 0) {
        snprintf(err, errlen, "bad URL \"%s\": expected http://HOST[:PORT]/PATH: %s", url, why);
        return -1;
    }
    int64_t deadline = now_ms() + timeout_ms;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int gr = getaddrinfo(host, port, &hints, &ai);
    if (gr != 0) {
        snprintf(err, errlen, "%s: cannot resolve %s: %s", url, host, gai_strerror(gr));
        return -1;
    }
    int fd = -1;
    int rc = -1;
    char *hdr = NULL, *buf = NULL;
    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "%s: socket: %s", url, strerror(errno));
        goto cleanup;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
        snprintf(err, errlen, "%s: connect: %s", url, strerror(errno));
        goto cleanup;
    }
    if (wait_fd(fd, POLLOUT, deadline) != 0) {
        snprintf(err, errlen, "%s: connect timed out after %d ms", url, timeout_ms);
        goto cleanup;
    }
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
    if (soerr) {
        snprintf(err, errlen, "%s: connect: %s", url, strerror(soerr));
        goto cleanup;
    }
    size_t hcap = 1024 + strlen(path) + strlen(host) + (token ? strlen(token) : 0);
    hdr = malloc(hcap);
    int hn = snprintf(hdr, hcap,
                      "%s %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: wanledger\r\n"
                      "Connection: close\r\n%s%s%s"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                      method, path, host, port, token ? "Authorization: Bearer " : "",
                      token ? token : "", token ? "\r\n" : "", len);
    const char *parts[2] = {hdr, body};
    size_t plen[2] = {(size_t)hn, len};
    for (int k = 0; k < 2; k++) {
        size_t off = 0;
        while (off < plen[k]) {
            ssize_t w = send(fd, parts[k] + off, plen[k] - off, MSG_NOSIGNAL);
            if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
                if (wait_fd(fd, POLLOUT, deadline) != 0) {
                    snprintf(err, errlen, "%s: send timed out after %d ms", url, timeout_ms);
                    goto cleanup;
                }
                continue;
            }
            if (w < 0) {
                snprintf(err, errlen, "%s: send: %s", url, strerror(errno));
                goto cleanup;
            }
            off += (size_t)w;
        }
    }
    size_t cap = 8192, n = 0;
    buf = malloc(cap);
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap *= 2;
            char *nb = realloc(buf, cap);
            if (!nb)
                goto cleanup;
            buf = nb;
        }
        ssize_t r = recv(fd, buf + n, cap - n - 1, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (wait_fd(fd, POLLIN, deadline) != 0) {
                snprintf(err, errlen, "%s: no response within %d ms", url, timeout_ms);
                goto cleanup;
            }
            continue;
        }
        if (r < 0) {
            snprintf(err, errlen, "%s: recv: %s", url, strerror(errno));
            goto cleanup;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
    int status = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1) {
        snprintf(err, errlen, "%s: not an HTTP response", url);
        goto cleanup;
    }
    char *bstart = strstr(buf, "\r\n\r\n");
    resp->status = status;
    if (bstart) {
        bstart += 4;
        /* chunked bodies are de-chunked; others are taken as is */
        int chunked = 0;
        for (char *l = buf; l < bstart; l = strstr(l, "\r\n") + 2)
            if (strncasecmp(l, "Transfer-Encoding:", 18) == 0 && strcasestr(l, "chunked") &&
                strcasestr(l, "chunked") < strstr(l, "\r\n"))
                chunked = 1;
        if (chunked) {
            char *out = malloc(strlen(bstart) + 1);
            size_t on = 0;
            char *p = bstart;
            for (;;) {
                unsigned long sz = strtoul(p, &p, 16);
                p = strstr(p, "\r\n");
                if (!p || sz == 0)
                    break;
                p += 2;
                if (sz > (size_t)(buf + n - p))
                    break;
                memcpy(out + on, p, sz);
                on += sz;
                p += sz + 2;
            }
            out[on] = '\0';
            resp->body = out;
            resp->body_len = on;
        } else {
            resp->body_len = n - (size_t)(bstart - buf);
            resp->body = malloc(resp->body_len + 1);
            memcpy(resp->body, bstart, resp->body_len + 1);
        }
    }
    rc = 0;
cleanup:
    free(hdr);
    free(buf);
    if (fd >= 0)
        close(fd);
    freeaddrinfo(ai);
    return rc;
}

int httpc_post(const char *url, const char *token, const char *body, size_t len, int timeout_ms,
               struct httpc_response *resp, char *err, size_t errlen)
{
    return request("POST", url, token, body, len, timeout_ms, resp, err, errlen);
}

int httpc_get(const char *url, const char *token, int timeout_ms, struct httpc_response *resp,
              char *err, size_t errlen)
{
    return request("GET", url, token, "", 0, timeout_ms, resp, err, errlen);
}

void httpc_response_free(struct httpc_response *resp)
{
    free(resp->body);
    resp->body = NULL;
    resp->body_len = 0;
}
