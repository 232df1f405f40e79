/* A small blocking HTTP/1.1 client for POSTing JSON to the reconciler (agent, poller, shipper)
 * and to webhooks. Plain http:// only (the reconciler sits behind a TLS proxy where needed). */
#ifndef WL_HTTPC_H
#define WL_HTTPC_H

#include <stddef.h>

struct httpc_response {
    int status; /* HTTP status, 0 when no response */
    char *body; /* malloc'd, NUL-terminated; may be NULL */
    size_t body_len;
};

/* POSTs body to url ("http://host:port/path") with Content-Type application/json and, when
 * token is not NULL, "Authorization: Bearer TOKEN". Returns 0 when a response arrived (any
 * status), -1 on connection/timeout errors (err filled). Free resp->body with free(). */
int httpc_post(const char *url, const char *token, const char *body, size_t len, int timeout_ms,
               struct httpc_response *resp, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* GET, same conventions. */
int httpc_get(const char *url, const char *token, int timeout_ms, struct httpc_response *resp,
              char *err, size_t errlen) __attribute__((warn_unused_result));
void httpc_response_free(struct httpc_response *resp);

#endif
