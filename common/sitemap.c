/* Longest-prefix match of addresses to site indexes: one binary trie per family, nodes in one
 * array (indexes, not pointers, so growth is a realloc). A lookup walks at most 32/128 nodes and
 * remembers the deepest value seen. IPv4 starts with a 65,536-entry first level (DIR-16): the best
 * value among prefixes of length <= 16 for each /16, and the trie node at depth 16 to continue
 * from, so an IPv4 lookup walks at most 16 nodes, and none for site aggregates of /16 or shorter.
 */
#include "sitemap.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct sm_node {
    uint32_t child[2]; /* 0 = none (node 0 is never a child: roots are 0 and 1) */
    int32_t value;     /* -1 = no prefix ends here */
};

struct sitemap {
    struct sm_node *nodes;
    uint32_t n, cap;
    int32_t v4_best16[65536];  /* best value of prefixes with len <= 16 covering this /16 */
    int8_t v4_len16[65536];    /* its length, -1 when none */
    uint32_t v4_node16[65536]; /* trie node at depth 16 for this /16, 0 when none */
};

static uint32_t node_new(struct sitemap *sm)
{
    if (sm->n == sm->cap) {
        uint32_t cap = sm->cap ? sm->cap * 2 : 64;
        struct sm_node *nn = realloc(sm->nodes, cap * sizeof(*nn));
        if (!nn)
            return 0;
        sm->nodes = nn;
        sm->cap = cap;
    }
    sm->nodes[sm->n] = (struct sm_node){{0, 0}, -1};
    return sm->n++;
}

struct sitemap *sm_new(void)
{
    struct sitemap *sm = calloc(1, sizeof(*sm));
    if (!sm)
        return NULL;
    /* root 0: IPv4, root 1: IPv6 */
    if (node_new(sm) != 0 || node_new(sm) != 1) {
        sm_free(sm);
        return NULL;
    }
    for (int i = 0; i < 65536; i++) {
        sm->v4_best16[i] = -1;
        sm->v4_len16[i] = -1;
    }
    return sm;
}

void sm_free(struct sitemap *sm)
{
    if (!sm)
        return;
    free(sm->nodes);
    free(sm);
}

static inline int bit_at(const uint8_t *addr, int i)
{
    return (addr[i >> 3] >> (7 - (i & 7))) & 1;
}

int sm_add(struct sitemap *sm, int family, const uint8_t *addr, int len, int value)
{
    int maxlen = family == AF_INET ? 32 : family == AF_INET6 ? 128 : -1;
    if (maxlen < 0 || len < 0 || len > maxlen)
        return -2;
    uint32_t cur = family == AF_INET ? 0 : 1;
    for (int i = 0; i < len; i++) {
        int b = bit_at(addr, i);
        if (!sm->nodes[cur].child[b]) {
            uint32_t nn = node_new(sm);
            if (!nn)
                return -2;
            sm->nodes[cur].child[b] = nn;
        }
        cur = sm->nodes[cur].child[b];
    }
    if (sm->nodes[cur].value >= 0 && sm->nodes[cur].value != value)
        return -1;
    sm->nodes[cur].value = value;
    if (family == AF_INET) {
        uint32_t first = ((uint32_t)addr[0] << 8) | addr[1];
        if (len <= 16) {
            uint32_t span = 1u << (16 - len);
            first &= ~(span - 1);
            for (uint32_t i = first; i < first + span; i++)
                if (sm->v4_len16[i] <= len) {
                    sm->v4_len16[i] = (int8_t)len;
                    sm->v4_best16[i] = value;
                }
        } else {
            uint32_t n16 = 0;
            for (int i = 0; i < 16; i++)
                n16 = sm->nodes[n16].child[bit_at(addr, i)];
            sm->v4_node16[first] = n16;
        }
    }
    return 0;
}

int sm_lookup(const struct sitemap *sm, int family, const uint8_t *addr)
{
    if (family == AF_INET) {
        uint32_t first = ((uint32_t)addr[0] << 8) | addr[1];
        int best = sm->v4_best16[first];
        uint32_t cur = sm->v4_node16[first];
        for (int i = 16; cur && i < 32; i++) {
            cur = sm->nodes[cur].child[bit_at(addr, i)];
            if (cur && sm->nodes[cur].value >= 0)
                best = sm->nodes[cur].value;
        }
        return best;
    }
    int maxlen = 128;
    uint32_t cur = family == AF_INET ? 0 : 1;
    int best = sm->nodes[cur].value;
    for (int i = 0; i < maxlen; i++) {
        cur = sm->nodes[cur].child[bit_at(addr, i)];
        if (!cur)
            break;
        if (sm->nodes[cur].value >= 0)
            best = sm->nodes[cur].value;
    }
    return best;
}

int sm_lookup_str(const struct sitemap *sm, const char *addr)
{
    uint8_t buf[16];
    if (!addr)
        return -1;
    if (inet_pton(AF_INET, addr, buf) == 1)
        return sm_lookup(sm, AF_INET, buf);
    if (inet_pton(AF_INET6, addr, buf) == 1) {
        /* IPv4-mapped IPv6 (::ffff:a.b.c.d) is looked up as IPv4 */
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(buf, mapped, 12) == 0)
            return sm_lookup(sm, AF_INET, buf + 12);
        return sm_lookup(sm, AF_INET6, buf);
    }
    return -1;
}

int sm_parse_prefix(const char *s, int *family, uint8_t addr[16], int *len)
{
    char tmp[64];
    if (!s || strlen(s) >= sizeof(tmp))
        return -1;
    strcpy(tmp, s);
    char *slash = strchr(tmp, '/');
    int plen = -1;
    if (slash) {
        *slash = '\0';
        const char *p = slash + 1;
        if (!*p || strlen(p) > 3)
            return -1;
        plen = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9')
                return -1;
            plen = plen * 10 + (*p - '0');
        }
    }
    memset(addr, 0, 16);
    int fam, maxlen;
    if (inet_pton(AF_INET, tmp, addr) == 1) {
        fam = AF_INET;
        maxlen = 32;
    } else if (inet_pton(AF_INET6, tmp, addr) == 1) {
        fam = AF_INET6;
        maxlen = 128;
    } else {
        return -1;
    }
    if (plen < 0)
        plen = maxlen;
    if (plen > maxlen)
        return -1;
    for (int i = plen; i < maxlen; i++)
        if (bit_at(addr, i))
            return -1;
    *family = fam;
    *len = plen;
    return 0;
}
