/* The tree's one HOST:PORT parser (listen addresses, URL authorities, --metrics): "10.0.0.1:80",
 * "[::1]:80", "name.example:80". An IPv6 address must be in brackets; a dotted-decimal host must
 * be a valid IPv4 address; a name must be a DNS name (labels of letters, digits, '-', '_', at most
 * 63 bytes, 253 in all); the port is decimal 1-65535 (0 with HOSTPORT_ALLOW_ZERO). Errors say
 * what is wrong and quote the input. */
#ifndef WL_HOSTPORT_H
#define WL_HOSTPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HOSTPORT_ALLOW_ZERO    1u /* port 0: the kernel picks one (tests) */
#define HOSTPORT_PORT_OPTIONAL 2u /* "host" alone is fine: has_port false, port 0 */
#define HOSTPORT_HOST_MAX      254

struct hostport {
    char host[HOSTPORT_HOST_MAX]; /* without brackets: "::1", "10.0.0.1", "name" */
    uint16_t port;
    bool has_port;
    int family; /* AF_INET or AF_INET6 for an address literal, AF_UNSPEC for a name */
};

/* Parses s[0..len) (len = strlen(s) for a C string). 0, or -1 with err and *out unspecified. */
int hostport_parse(const char *s, size_t len, unsigned flags, struct hostport *out, char *err,
                   size_t errlen);
/* Formats host and port back: "[::1]:80" for IPv6 (given bare or, as libevent's URI parser
 * keeps it, in brackets), "host:80" otherwise. Returns out. */
char *hostport_format(const char *host, unsigned port, char *out, size_t outlen);

#endif
