/* HOST:PORT parsing (see hostport.h). */
#include "hostport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int fail(char *err, size_t errlen, const char *s, size_t len, const char *what)
{
    snprintf(err, errlen, "\"%.*s\": %s", (int)(len > 200 ? 200 : len), s, what);
    return -1;
}

static bool valid_name(const char *h, size_t n)
{
    size_t label = 0;
    if (n == 0 || n > 253)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (c == '.') {
            if (label == 0)
                return false;
            label = 0;
            continue;
        }
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_';
        if (!ok || ++label > 63)
            return false;
    }
    return true;
}

static bool dotted_digits(const char *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || h[i] == '.'))
            return false;
    return true;
}

int hostport_parse(const char *s, size_t len, unsigned flags, struct hostport *out, char *err,
                   size_t errlen)
{
    memset(out, 0, sizeof(*out));
    const char *h = s, *rest;
    size_t hl;
    if (len > 0 && s[0] == '[') {
        const char *rb = memchr(s, ']', len);
        if (!rb)
            return fail(err, errlen, s, len, "'[' without ']' around an IPv6 address");
        h = s + 1;
        hl = (size_t)(rb - h);
        rest = rb + 1;
        if (hl == 0 || hl >= INET6_ADDRSTRLEN)
            return fail(err, errlen, s, len, "not an IPv6 address between [ and ]");
        char a[INET6_ADDRSTRLEN];
        struct in6_addr in6;
        memcpy(a, h, hl);
        a[hl] = 0;
        if (inet_pton(AF_INET6, a, &in6) != 1)
            return fail(err, errlen, s, len, "not an IPv6 address between [ and ]");
        out->family = AF_INET6;
        if (rest < s + len && *rest != ':')
            return fail(err, errlen, s, len, "expected ':' and a port after ']'");
    } else {
        const char *colon = memchr(s, ':', len);
        if (colon && memchr(colon + 1, ':', len - (size_t)(colon + 1 - s)))
            return fail(err, errlen, s, len, "an IPv6 address needs brackets: [ADDRESS]:PORT");
        hl = colon ? (size_t)(colon - s) : len;
        rest = s + hl;
        if (hl == 0)
            return fail(err, errlen, s, len, "the host is empty (expected HOST:PORT)");
        if (hl >= sizeof(out->host))
            return fail(err, errlen, s, len, "the host is longer than 253 bytes");
        if (dotted_digits(h, hl)) {
            char a[HOSTPORT_HOST_MAX];
            struct in_addr in4;
            memcpy(a, h, hl);
            a[hl] = 0;
            if (inet_pton(AF_INET, a, &in4) != 1)
                return fail(err, errlen, s, len, "not an IPv4 address (a.b.c.d, each 0-255)");
            out->family = AF_INET;
        } else if (!valid_name(h, hl)) {
            return fail(err, errlen, s, len,
                        "the host is neither an IP address nor a DNS name (letters, digits, '-', "
                        "'.')");
        }
    }
    memcpy(out->host, h, hl);
    out->host[hl] = 0;
    size_t pl = (size_t)(s + len - rest);
    if (pl == 0) {
        if (flags & HOSTPORT_PORT_OPTIONAL)
            return 0;
        return fail(err, errlen, s, len, "no port (expected HOST:PORT)");
    }
    /* rest is ":digits" */
    const char *p = rest + 1;
    pl--;
    if (pl == 0)
        return fail(err, errlen, s, len, "the port after ':' is empty");
    unsigned long port = 0;
    for (size_t i = 0; i < pl; i++) {
        if (p[i] < '0' || p[i] > '9')
            return fail(err, errlen, s, len, "the port is not a decimal number");
        port = port * 10 + (unsigned)(p[i] - '0');
        if (port > 65535)
            return fail(err, errlen, s, len, "the port is above 65535");
    }
    if (port == 0 && !(flags & HOSTPORT_ALLOW_ZERO))
        return fail(err, errlen, s, len, "port 0 is not a port to connect or listen on");
    out->port = (uint16_t)port;
    out->has_port = true;
    return 0;
}

char *hostport_format(const char *host, unsigned port, char *out, size_t outlen)
{
    if (strchr(host, ':') && host[0] != '[') /* libevent's URI hosts keep their brackets */
        snprintf(out, outlen, "[%s]:%u", host, port);
    else
        snprintf(out, outlen, "%s:%u", host, port);
    return out;
}
