/* ClickHouse's HTTP interface (see chhttp.h). */
#include "chhttp.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The server's message up to its first newline (ClickHouse answers errors as text). */
static void first_line(char *out, size_t len, const char *body)
{
    size_t n = body ? strcspn(body, "\n") : 0;
    if (n > 300)
        n = 300;
    snprintf(out, len, "%.*s", (int)n, body ? body : "");
}

/* s percent-encoded into out (3 x strlen(s) + 1 bytes): a URL query value (RFC 3986: unreserved
 * characters and the sub-delimiters a statement's column list is made of kept as they are). */
static void url_value(char *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
            (*c && strchr("-_.~(),*", *c))) {
            *out++ = (char)*c;
        } else {
            *out++ = '%';
            *out++ = hex[*c >> 4];
            *out++ = hex[*c & 15];
        }
    }
    *out = 0;
}

/* With data the statement goes in the URL (?query=) and data alone is the body, sent from where
 * it lies: an INSERT's megabytes are not copied behind its statement. */
static int exec(const struct cfg_clickhouse *ch, const char *sql, const char *data, size_t len,
                const char *url_params, int (*sink)(void *, const char *, size_t), void *ctx,
                struct httpc_response *resp, char *err, size_t errlen)
{
    memset(resp, 0, sizeof *resp);
    size_t sl = strlen(sql);
    size_t ulen = strlen(ch->url) + 16 + (url_params ? strlen(url_params) : 0) + (len ? 3 * sl : 0);
    char *url = malloc(ulen);
    if (!url) {
        snprintf(err, errlen, "clickhouse: out of memory for %zu bytes", ulen);
        return -1;
    }
    /* tables are named with their database */
    int at = snprintf(url, ulen, "%s/%s", ch->url, url_params || len ? "?" : "");
    if (len) {
        memcpy(url + at, "query=", 6);
        url_value(url + at + 6, sql);
        at += 6 + (int)strlen(url + at + 6);
    }
    if (url_params)
        snprintf(url + at, ulen - (size_t)at, "%s%s", len ? "&" : "", url_params);
    char auth[600] = "";
    if (ch->user) {
        char cred[400];
        int n = snprintf(cred, sizeof cred, "%s:%s", ch->user, ch->password ? ch->password : "");
        if (n > 0 && (size_t)n < sizeof cred) {
            memcpy(auth, "Basic ", 6);
            EVP_EncodeBlock((unsigned char *)auth + 6, (const unsigned char *)cred, n);
        }
    }
    struct httpc_req rq = {.url = url,
                           .authorization = auth[0] ? auth : NULL,
                           .body = len ? data : sql,
                           .len = len ? len : sl,
                           .content_type = "text/plain; charset=utf-8",
                           .timeout_ms = ch->timeout_ms,
                           .max_response = (size_t)1 << 30,
                           .sink = sink,
                           .sink_ctx = ctx};
    char e[300];
    int rc = httpc_do(&rq, resp, e, sizeof e);
    free(url);
    if (rc != 0) {
        snprintf(err, errlen, "clickhouse: %s", e);
        return -1;
    }
    if (resp->status != 200) {
        char msg[320];
        first_line(msg, sizeof msg, resp->body);
        snprintf(err, errlen, "clickhouse: HTTP %d: %s", resp->status, msg);
        httpc_response_free(resp);
        return -1;
    }
    return 0;
}

int chhttp_exec(const struct cfg_clickhouse *ch, const char *sql, const char *data, size_t len,
                const char *url_params, struct httpc_response *resp, char *err, size_t errlen)
{
    return exec(ch, sql, data, len, url_params, NULL, NULL, resp, err, errlen);
}

int chhttp_stream(const struct cfg_clickhouse *ch, const char *sql, const char *url_params,
                  int (*sink)(void *ctx, const char *data, size_t len), void *ctx, char *err,
                  size_t errlen)
{
    struct httpc_response resp;
    int rc = exec(ch, sql, NULL, 0, url_params, sink, ctx, &resp, err, errlen);
    httpc_response_free(&resp);
    return rc;
}
