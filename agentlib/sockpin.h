/* Pinning a loaded BPF skeleton in bpffs so that its programs keep counting after the agent dies
 * (SIGKILL, crash, upgrade) and a restarted agent adopts the same maps: one directory per agent,
 * holding every map as "map_NAME" and every attached link as "link_PROG" (bpffs refuses
 * names with a dot: dots become underscores). */
#ifndef WL_SOCKPIN_H
#define WL_SOCKPIN_H

#include <stdbool.h>
#include <stddef.h>

#include <bpf/libbpf.h>

/* Creates dir and its parents (mounting bpffs on /sys/fs/bpf when nothing is mounted there).
 * 0, or -1 with err. */
int sockpin_mkdir(const char *dir, char *err, size_t errlen) __attribute__((warn_unused_result));
/* Removes every pin in dir (links without another holder detach) and dir itself; a missing dir
 * is fine. Returns how many pins were removed, -1 with err on failure. */
int sockpin_clear(const char *dir, char *err, size_t errlen);
/* Sets every map's pin path to dir/map_NAME before load: libbpf then reuses a compatible pinned
 * map (and fails the load on an incompatible one). */
int sockpin_set_map_paths(struct bpf_object_skeleton *s, const char *dir, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* True when dir/map_NAME exists for every map of s. */
bool sockpin_maps_present(struct bpf_object_skeleton *s, const char *dir);
/* Pins every map (after load) and every attached link. 0, or -1 with err. */
int sockpin_pin_all(struct bpf_object_skeleton *s, const char *dir, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Names of the programs whose links are pinned in dir, by prefix: returns how many link pins
 * start with "link_PREFIX" (prefix "" counts all). */
int sockpin_count_links(const char *dir, const char *prefix);
/* Makes the skeleton's links forget their kernel objects (bpf_link__disconnect), so that
 * destroying the skeleton leaves the pinned links attached. */
void sockpin_disconnect_links(struct bpf_object_skeleton *s);

#endif
