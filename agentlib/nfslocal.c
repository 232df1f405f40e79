/* Client address per NFS server from the kernel's own source-address choice, cached. */
#include "nfslocal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostport.h"

#define MAX_SERVERS 64 /* mounts of distinct servers; beyond it the oldest answer is replaced */

struct entry {
    char server[48];
    int64_t at_us; /* when it was asked */
    bool ok;
    uint8_t family;
    uint8_t addr[16];
};

struct nfslocal {
    int64_t ttl_us;
    size_t n;
    struct entry e[MAX_SERVERS];
};

struct nfslocal *nfslocal_new(int64_t ttl_us)
{
    struct nfslocal *nl = calloc(1, sizeof(*nl));
    if (nl)
        nl->ttl_us = ttl_us;
    return nl;
}

void nfslocal_free(struct nfslocal *nl)
{
    free(nl);
}

/* "a.b.c.d:port", "[v6]:port", or either without the port (2049); addresses only (hostport.h
 * parses, names are refused: the kernel is asked for a route, not DNS). */
static int parse_server(const char *server, struct sockaddr_storage *ss, socklen_t *len)
{
    struct hostport hp;
    char err[256];
    if (hostport_parse(server, strlen(server), HOSTPORT_PORT_OPTIONAL, &hp, err, sizeof(err)) != 0)
        return -1;
    uint16_t port = hp.has_port ? hp.port : 2049;
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    if (hp.family == AF_INET && inet_pton(AF_INET, hp.host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        *len = sizeof(*s4);
        return 0;
    }
    if (hp.family == AF_INET6 && inet_pton(AF_INET6, hp.host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        *len = sizeof(*s6);
        return 0;
    }
    return -1;
}

/* Asks the kernel which source address it would use towards server. */
static bool resolve(const char *server, uint8_t *family, uint8_t addr[16])
{
    struct sockaddr_storage to, me;
    socklen_t to_len, me_len = sizeof(me);
    if (parse_server(server, &to, &to_len) != 0)
        return false;
    int fd = socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool ok = connect(fd, (struct sockaddr *)&to, to_len) == 0 &&
              getsockname(fd, (struct sockaddr *)&me, &me_len) == 0;
    close(fd);
    if (!ok)
        return false;
    memset(addr, 0, 16);
    if (me.ss_family == AF_INET) {
        memcpy(addr, &((struct sockaddr_in *)&me)->sin_addr, 4);
        *family = AF_INET;
    } else {
        memcpy(addr, &((struct sockaddr_in6 *)&me)->sin6_addr, 16);
        *family = AF_INET6;
    }
    return true;
}

int nfslocal_lookup(struct nfslocal *nl, const char *server, int64_t now_us, uint8_t *family,
                    uint8_t addr[16])
{
    struct entry *e = NULL, *oldest = NULL;
    for (size_t i = 0; i < nl->n; i++) {
        if (strcmp(nl->e[i].server, server) == 0) {
            e = &nl->e[i];
            break;
        }
        if (!oldest || nl->e[i].at_us < oldest->at_us)
            oldest = &nl->e[i];
    }
    if (!e || now_us - e->at_us >= nl->ttl_us || now_us < e->at_us) {
        if (!e)
            e = nl->n < MAX_SERVERS ? &nl->e[nl->n++] : oldest;
        snprintf(e->server, sizeof(e->server), "%s", server);
        e->at_us = now_us;
        e->ok = strlen(server) < sizeof(e->server) && resolve(server, &e->family, e->addr);
    }
    if (!e->ok)
        return -1;
    *family = e->family;
    memcpy(addr, e->addr, 16);
    return 0;
}

size_t nfslocal_fill(struct nfslocal *nl, struct flowset *fs, int64_t now_us)
{
    size_t n = 0;
    for (size_t i = 0; i < fs->n; i++) {
        struct flow_rec *r = &fs->v[i];
        if (r->source != FLOW_SRC_NFS || !r->server[0])
            continue;
        if (nfslocal_lookup(nl, r->server, now_us, &r->family, r->laddr) == 0)
            n++;
        else
            r->family = 0;
    }
    return n;
}
