/* Internal to common/httpc*.c: one client connection (TCP, optionally TLS) with a deadline. */
#ifndef WL_HTTPC_CONN_H
#define WL_HTTPC_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "httpc.h"

struct httpc_conn {
    int fd;
    void *ssl_ctx; /* SSL_CTX *, NULL for plain TCP */
    void *ssl;     /* SSL * */
    int64_t deadline_ms;
};

int64_t httpc_now_ms(void);
/* Waits for ev (POLLIN/POLLOUT) on fd until the deadline: 0 ready, -1 timed out / failed. */
int httpc_wait_fd(int fd, short ev, int64_t deadline_ms);
/* TLS handshake over c->fd (connected, non-blocking) verifying host. 0 or -1 (err filled). */
int httpc_tls_start(struct httpc_conn *c, const char *host, const struct httpc_tls *tls, char *err,
                    size_t errlen);
/* Whole-buffer write / one read through TLS or TCP. Write: 0 or -1; read: bytes, 0 at EOF, -1. */
int httpc_conn_write(struct httpc_conn *c, const char *buf, size_t len, char *err, size_t errlen);
ssize_t httpc_conn_read(struct httpc_conn *c, char *buf, size_t len, char *err, size_t errlen);
void httpc_conn_close(struct httpc_conn *c);

#endif
