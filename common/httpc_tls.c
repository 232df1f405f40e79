/* TLS for the HTTP client (OpenSSL): verify the chain against the CA file (or the system store)
 * and the certificate's name against the URL's host (SAN DNS name, or SAN IP for an address),
 * optional client certificate for mutual TLS, all over a non-blocking socket with a deadline. */
#include <arpa/inet.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "httpc_conn.h"

static void ssl_errstr(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    if (!e) {
        snprintf(buf, len, "%s", errno ? strerror(errno) : "connection closed");
        return;
    }
    ERR_error_string_n(e, buf, len);
    ERR_clear_error();
}

static int load_ctx(SSL_CTX *ctx, const struct httpc_tls *tls, char *err, size_t errlen)
{
    char e[256];
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    /* a server that closes after its answer without close_notify (evhttp does) ends the body */
    SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    if (tls && tls->ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, tls->ca_file, NULL) != 1) {
            ssl_errstr(e, sizeof(e));
            snprintf(err, errlen, "ca_file %s: cannot load CA certificates: %s", tls->ca_file, e);
            return -1;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(err, errlen, "cannot load the system CA store (set ca_file)");
        return -1;
    }
    if (tls && tls->cert_file) {
        const char *key = tls->key_file ? tls->key_file : tls->cert_file;
        if (SSL_CTX_use_certificate_chain_file(ctx, tls->cert_file) != 1) {
            ssl_errstr(e, sizeof(e));
            snprintf(err, errlen, "client_cert %s: %s", tls->cert_file, e);
            return -1;
        }
        if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(ctx) != 1) {
            ssl_errstr(e, sizeof(e));
            snprintf(err, errlen, "client_key %s: %s", key, e);
            return -1;
        }
    }
    return 0;
}

SSL_CTX *httpc_tls_ctx_new(const struct httpc_tls *tls, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(err, errlen, "TLS: cannot create a context");
        return NULL;
    }
    if (load_ctx(ctx, tls, err, errlen) != 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

int httpc_tls_set_peer(SSL *ssl, const char *host)
{
    unsigned char addr[16];
    int is_ip = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    X509_VERIFY_PARAM *vp = SSL_get0_param(ssl);
    if (is_ip)
        return X509_VERIFY_PARAM_set1_ip_asc(vp, host) == 1 ? 0 : -1;
    SSL_set_tlsext_host_name(ssl, host);
    X509_VERIFY_PARAM_set_hostflags(vp, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(vp, host, 0) == 1 ? 0 : -1;
}

/* Drives one SSL call that may want I/O until it completes or the deadline passes. */
static int ssl_wait(struct httpc_conn *c, int r)
{
    int se = SSL_get_error(c->ssl, r);
    if (se == SSL_ERROR_WANT_READ)
        return httpc_wait_fd(c->fd, POLLIN, c->deadline_ms) == 0 ? 1 : -2;
    if (se == SSL_ERROR_WANT_WRITE)
        return httpc_wait_fd(c->fd, POLLOUT, c->deadline_ms) == 0 ? 1 : -2;
    if (se == SSL_ERROR_ZERO_RETURN)
        return 0;
    return -1;
}

int httpc_tls_start(struct httpc_conn *c, const char *host, const struct httpc_tls *tls, char *err,
                    size_t errlen)
{
    SSL_CTX *ctx = httpc_tls_ctx_new(tls, err, errlen);
    if (!ctx)
        return -1;
    c->ssl_ctx = ctx;
    SSL *ssl = SSL_new(ctx);
    if (!ssl) {
        snprintf(err, errlen, "TLS: out of memory");
        return -1;
    }
    c->ssl = ssl;
    SSL_set_fd(ssl, c->fd);
    httpc_tls_set_peer(ssl, host);
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(ssl);
        if (r == 1)
            return 0;
        int w = ssl_wait(c, r);
        if (w == 1)
            continue;
        long vr = SSL_get_verify_result(ssl);
        if (w == -2)
            snprintf(err, errlen, "TLS handshake with %s timed out", host);
        else if (vr != X509_V_OK)
            snprintf(err, errlen,
                     "TLS: the certificate of %s is not trusted: %s (checked against %s%s)", host,
                     X509_verify_cert_error_string(vr),
                     tls && tls->ca_file ? "ca_file " : "the system CA store",
                     tls && tls->ca_file ? tls->ca_file : "");
        else {
            char e[256];
            ssl_errstr(e, sizeof(e));
            snprintf(err, errlen, "TLS handshake with %s failed: %s", host, e);
        }
        return -1;
    }
}

int httpc_conn_write(struct httpc_conn *c, const char *buf, size_t len, char *err, size_t errlen)
{
    size_t off = 0;
    while (off < len) {
        if (c->ssl) {
            ERR_clear_error();
            int r = SSL_write(c->ssl, buf + off, (int)(len - off > 1 << 30 ? 1 << 30 : len - off));
            if (r > 0) {
                off += (size_t)r;
                continue;
            }
            int w = ssl_wait(c, r);
            if (w == 1)
                continue;
            snprintf(err, errlen, w == -2 ? "send timed out" : "TLS send failed");
            return -1;
        }
        ssize_t w = send(c->fd, buf + off, len - off, MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
            if (httpc_wait_fd(c->fd, POLLOUT, c->deadline_ms) != 0) {
                snprintf(err, errlen, "send timed out");
                return -1;
            }
            continue;
        }
        if (w < 0) {
            snprintf(err, errlen, "send: %s", strerror(errno));
            return -1;
        }
        off += (size_t)w;
    }
    return 0;
}

ssize_t httpc_conn_read(struct httpc_conn *c, char *buf, size_t len, char *err, size_t errlen)
{
    for (;;) {
        if (c->ssl) {
            ERR_clear_error();
            int r = SSL_read(c->ssl, buf, (int)(len > 1 << 30 ? 1 << 30 : len));
            if (r > 0)
                return r;
            int w = ssl_wait(c, r);
            if (w == 1)
                continue;
            if (w == 0 || SSL_get_error(c->ssl, r) == SSL_ERROR_SYSCALL)
                return 0; /* close_notify, or a peer that closed without one: end of body */
            snprintf(err, errlen, w == -2 ? "no response in time" : "TLS receive failed");
            return -1;
        }
        ssize_t r = recv(c->fd, buf, len, 0);
        if (r >= 0)
            return r;
        if (errno == EAGAIN || errno == EINTR) {
            if (httpc_wait_fd(c->fd, POLLIN, c->deadline_ms) != 0) {
                snprintf(err, errlen, "no response in time");
                return -1;
            }
            continue;
        }
        snprintf(err, errlen, "recv: %s", strerror(errno));
        return -1;
    }
}

void httpc_conn_close(struct httpc_conn *c)
{
    if (c->ssl) {
        SSL_shutdown(c->ssl);
        SSL_free(c->ssl);
    }
    if (c->ssl_ctx)
        SSL_CTX_free(c->ssl_ctx);
    if (c->fd >= 0)
        close(c->fd);
    c->ssl = c->ssl_ctx = NULL;
    c->fd = -1;
}
