/* Longest-prefix match of IPv4/IPv6 addresses to site indexes (a path-compressed binary trie). */
#ifndef WL_SITEMAP_H
#define WL_SITEMAP_H

#include <stdint.h>

struct sitemap;

struct sitemap *sm_new(void);
void sm_free(struct sitemap *sm);
/* addr: 4 bytes (AF_INET) or 16 bytes (AF_INET6) in network order. Returns 0, or -1 when the
 * exact prefix is already present with another value (value kept), or -2 on a bad length. */
int sm_add(struct sitemap *sm, int family, const uint8_t *addr, int len, int value);
/* Longest match: the value, or -1 when no prefix covers addr. */
int sm_lookup(const struct sitemap *sm, int family, const uint8_t *addr);
/* Textual address ("10.1.2.3", "fd00::1"); -1 when unmapped or unparsable. */
int sm_lookup_str(const struct sitemap *sm, const char *addr);
/* Parses "10.0.0.0/8" / "fd00::/48" / a bare address (full length). Returns 0 or -1.
 * Host bits beyond len must be zero, else -1. */
int sm_parse_prefix(const char *s, int *family, uint8_t addr[16], int *len);

#endif
