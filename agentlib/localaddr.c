/* Per-namespace local address lists, to drop wildcard-bound traffic to the host itself. */
#include "localaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_NS    64
#define MAX_ADDRS 256

struct ns_addrs {
    uint32_t netns;
    bool ok;
    size_t n;
    uint8_t a[MAX_ADDRS][16]; /* IPv4 as ::ffff:a.b.c.d */
};

static void add_addr(struct ns_addrs *t, const uint8_t a[16])
{
    if (t->n < MAX_ADDRS)
        memcpy(t->a[t->n++], a, 16);
}

static void v4_mapped(uint8_t out[16], const uint8_t v4[4])
{
    memset(out, 0, 10);
    out[10] = out[11] = 0xff;
    memcpy(out + 12, v4, 4);
}

/* "|-- 10.1.0.2" followed by "/32 host LOCAL" marks a local IPv4 address. */
static bool read_fib_trie(const char *path, struct ns_addrs *t)
{
    FILE *f = fopen(path, "re");
    char line[256], last[64] = "";
    if (!f)
        return false;
    while (fgets(line, sizeof(line), f)) {
        char *p = strstr(line, "|-- ");
        if (p) {
            snprintf(last, sizeof(last), "%s", p + 4);
            last[strcspn(last, " \n")] = '\0';
            continue;
        }
        if (strstr(line, "/32 host LOCAL") && last[0]) {
            uint8_t v4[4], m[16];
            if (inet_pton(AF_INET, last, v4) == 1) {
                v4_mapped(m, v4);
                add_addr(t, m);
            }
        }
    }
    fclose(f);
    return true;
}

static bool read_if_inet6(const char *path, struct ns_addrs *t)
{
    FILE *f = fopen(path, "re");
    char hex[40];
    if (!f)
        return false;
    while (fscanf(f, "%32s %*s %*s %*s %*s %*s", hex) == 1) {
        uint8_t a[16];
        for (int i = 0; i < 16; i++) {
            unsigned b;
            sscanf(hex + 2 * i, "%2x", &b);
            a[i] = (uint8_t)b;
        }
        add_addr(t, a);
    }
    fclose(f);
    return true;
}

static bool netns_of(const char *root, uint32_t pid, uint32_t *ino)
{
    char path[192], link[64];
    unsigned v = 0;
    snprintf(path, sizeof(path), "%s/%u/ns/net", root, pid);
    ssize_t n = readlink(path, link, sizeof(link) - 1);
    if (n <= 0)
        return false;
    link[n] = '\0';
    if (sscanf(link, "net:[%u]", &v) != 1)
        return false;
    *ino = v;
    return true;
}

static struct ns_addrs *table_for(struct ns_addrs *tabs, size_t *ntabs, const struct flowset *fs,
                                  uint32_t netns, const char *root)
{
    for (size_t j = 0; j < *ntabs; j++)
        if (tabs[j].netns == netns)
            return tabs[j].ok ? &tabs[j] : NULL;
    if (*ntabs == MAX_NS)
        return NULL;
    struct ns_addrs *t = &tabs[(*ntabs)++];
    memset(t, 0, sizeof(*t));
    t->netns = netns;
    /* any live process of this window that is still in that namespace can show its tables */
    for (size_t i = 0; i < fs->n && !t->ok; i++) {
        uint32_t ino, pid = fs->v[i].owner.pid;
        char path[192];
        if (fs->v[i].netns != netns || !netns_of(root, pid, &ino) || ino != netns)
            continue;
        snprintf(path, sizeof(path), "%s/%u/net/fib_trie", root, pid);
        bool a = read_fib_trie(path, t);
        snprintf(path, sizeof(path), "%s/%u/net/if_inet6", root, pid);
        read_if_inet6(path, t);
        t->ok = a;
    }
    return t->ok ? t : NULL;
}

size_t localaddr_drop_self(struct flowset *fs, const char *proc_root)
{
    static const uint8_t zero[16];
    const char *root = proc_root ? proc_root : "/proc";
    struct ns_addrs *tabs = calloc(MAX_NS, sizeof(*tabs));
    size_t ntabs = 0, kept = 0, dropped = 0;
    if (!tabs)
        return 0;
    for (size_t i = 0; i < fs->n; i++) {
        struct flow_rec *r = &fs->v[i];
        bool self = false;
        bool wildcard = r->source == FLOW_SRC_SOCKET &&
                        (r->family == AF_INET ? memcmp(r->laddr, zero, 4) == 0
                                              : memcmp(r->laddr, zero, 16) == 0);
        if (wildcard) {
            struct ns_addrs *t = table_for(tabs, &ntabs, fs, r->netns, root);
            uint8_t ra[16];
            if (r->family == AF_INET)
                v4_mapped(ra, r->raddr);
            else
                memcpy(ra, r->raddr, 16);
            for (size_t j = 0; t && j < t->n && !self; j++)
                self = memcmp(t->a[j], ra, 16) == 0;
        }
        if (self) {
            dropped++;
            continue;
        }
        if (kept != i)
            fs->v[kept] = *r;
        kept++;
    }
    fs->n = kept;
    free(tabs);
    return dropped;
}
