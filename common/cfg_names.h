/* A string -> index map (on common/hindex.h) for the configuration's names (sites, devices, link
 * interfaces, circuits): look-ups and duplicate checks in O(1), so a configuration of 100k sites is
 * checked in linear time. Keys are copied. */
#ifndef WL_CFG_NAMES_H
#define WL_CFG_NAMES_H

#include <stddef.h>

struct cfg_names;

struct cfg_names *cfg_names_new(size_t expect);
void cfg_names_free(struct cfg_names *m);
/* Adds key -> idx unless key is there; returns the index already stored, or -1 when added (also
 * -1, and nothing added, when out of memory). */
long cfg_names_add(struct cfg_names *m, const char *key, long idx);
/* The index of key, or -1. m may be NULL (-1). */
long cfg_names_get(const struct cfg_names *m, const char *key);
/* Replaces the index stored for key (added if absent). */
void cfg_names_set(struct cfg_names *m, const char *key, long idx);

#endif
