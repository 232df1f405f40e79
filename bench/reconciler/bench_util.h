/* What the reconciler benchmarks share: fatal errors, a growable string, a keep-alive HTTP/1.1
 * client for loopback and percentiles. */
#ifndef WL_BENCH_UTIL_H
#define WL_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

struct str {
    char *p;
    size_t n, cap;
};

void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void sadd(struct str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* a TCP connection to 127.0.0.1:port (dies on failure) */
int http_connect(int port);
/* POSTs body on a kept-alive connection; returns the HTTP status (body printed unless 200) */
int http_post(int fd, const char *path, const char *token, const char *body, size_t len);
/* the same with Content-Encoding: coding (NULL: none) */
int http_post_coded(int fd, const char *path, const char *token, const char *coding,
                    const char *body, size_t len);
int cmp_i64(const void *a, const void *b);
/* nearest-rank percentile p (0..1) of n sorted values */
int64_t pct(const int64_t *sorted, size_t n, double p);

#endif
