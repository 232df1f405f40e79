/* A small blocking HTTP/1.1 client for POSTing to the reconciler (agent, poller, `ship`) over
 * http:// or https://. HTTPS verifies the server's certificate chain against a CA file (or the
 * system store) and its name against the URL's host (DNS name or IP address), and can present a
 * client certificate (mutual TLS). Plain http:// is refused unless every address the host resolves
 * to is a loopback address, or the caller explicitly allows plain HTTP: bearer tokens cross the
 * WAN only inside TLS. */
#ifndef WL_HTTPC_H
#define WL_HTTPC_H

#include <stdbool.h>
#include <stddef.h>

struct httpc_tls {
    const char *ca_file;     /* PEM CA bundle the server must chain to; NULL: system store */
    const char *cert_file;   /* client certificate chain (PEM) for mutual TLS, or NULL */
    const char *key_file;    /* its private key (PEM), or NULL (then taken from cert_file) */
    bool allow_plain_remote; /* allow http:// to non-loopback hosts (tokens in clear text!) */
};

/* For other TLS clients (the webhooks' libevent connections): the context every HTTPS client here
 * uses — TLS 1.2+, the peer verified against tls->ca_file (else the system store), optional
 * client certificate — or NULL with err; and the peer name an SSL must match (SAN IP for an
 * address, else SNI and the DNS name), 0 or -1. */
struct ssl_ctx_st;
struct ssl_st;
struct ssl_ctx_st *httpc_tls_ctx_new(const struct httpc_tls *tls, char *err, size_t errlen);
int httpc_tls_set_peer(struct ssl_st *ssl, const char *host);

struct httpc_req {
    const char *method;        /* "POST" (default when NULL) or "GET" */
    const char *url;           /* http[s]://HOST[:PORT]/PATH */
    const char *token;         /* "Authorization: Bearer TOKEN" when not NULL */
    const char *authorization; /* else a whole Authorization value ("Basic …") when not NULL */
    const char *body;
    size_t len;
    const char *content_type;     /* default application/json */
    const char *content_encoding; /* "zstd", "gzip" or NULL */
    int timeout_ms;               /* deadline over resolve, connect, handshake, send, receive */
    const struct httpc_tls *tls;  /* NULL: defaults (system CAs, plain only to loopback) */
    size_t max_response;          /* bytes; 0: 16 MiB (a reconciler answer is small) */
    /* When set, a 200 response's body is not kept: it is handed to sink as it arrives, de-chunked,
     * in pieces of any size (no max_response), and resp->body stays NULL; any other status's
     * body is kept as usual. A non-zero return stops the transfer (httpc_do returns -1, err
     * says so). A chunked body that ends before its last chunk, or a body shorter than its
     * Content-Length, is an error, whatever the sink was given. The deadline (timeout_ms) then
     * covers the request and the head, and after that each piece of the body on its own. */
    int (*sink)(void *ctx, const char *data, size_t len);
    void *sink_ctx;
};

struct httpc_response {
    int status; /* HTTP status, 0 when no response */
    char *body; /* malloc'd, NUL-terminated; may be NULL */
    size_t body_len;
    int retry_after_s; /* the Retry-After header in seconds, -1 when absent or unreadable */
};

/* Sends one request. Returns 0 when a response arrived (any status), -1 on URL, resolve,
 * connect, TLS (certificate verification names the reason) or timeout errors (err filled).
 * Free resp->body with httpc_response_free(). */
int httpc_do(const struct httpc_req *rq, struct httpc_response *resp, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* POSTs body as application/json with the default TLS settings. Same conventions. */
int httpc_post(const char *url, const char *token, const char *body, size_t len, int timeout_ms,
               struct httpc_response *resp, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* GET, same conventions. */
int httpc_get(const char *url, const char *token, int timeout_ms, struct httpc_response *resp,
              char *err, size_t errlen) __attribute__((warn_unused_result));
void httpc_response_free(struct httpc_response *resp);

/* A Retry-After value (delta-seconds or an IMF-fixdate HTTP-date) as seconds from now, clamped
 * to [0, 86400]; -1 when unreadable. */
int httpc_parse_retry_after(const char *value);

#endif
