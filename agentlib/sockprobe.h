/* The user side of the socket probe: picks an attach mode by probing what loads, sets the filters,
 * and drains one map generation at a time without losing an update (socket.bpf.c). */
#ifndef WL_SOCKPROBE_H
#define WL_SOCKPROBE_H

#include <stddef.h>
#include <stdint.h>

#include "flowset.h"

enum sockprobe_attach {
    SOCKPROBE_AUTO = 0, /* the first of tp_btf, fentry, kprobe that loads and attaches */
    SOCKPROBE_TP_BTF,
    SOCKPROBE_FENTRY,
    SOCKPROBE_KPROBE,
};

#define SOCKPROBE_MAX_EXCL_PORTS 16

struct sockprobe_opts {
    enum sockprobe_attach attach;
    uint32_t netns_ino; /* count only sockets of this network namespace; 0 = all */
    uint64_t cgroup_id; /* count only tasks in this cgroup v2 subtree; 0 = all */
    int cgroup_level;   /* depth of that cgroup below the root ("/" = 0) */
    uint16_t excl_ports[SOCKPROBE_MAX_EXCL_PORTS];
    size_t n_excl_ports;
    uint32_t map_entries; /* per generation; 0 = WL_FLOW_MAP_DEFAULT */
};

struct sockprobe;

/* Loads and attaches. On failure returns NULL with err saying, per mode tried, why (for example
 * "tp_btf: Operation not permitted (needs root or CAP_BPF+CAP_PERFMON)"). */
struct sockprobe *sockprobe_open(const struct sockprobe_opts *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void sockprobe_close(struct sockprobe *sp);

/* The mode in use (never SOCKPROBE_AUTO once open). */
enum sockprobe_attach sockprobe_mode(const struct sockprobe *sp);
const char *sockprobe_mode_name(enum sockprobe_attach m);
/* "tp_btf", "fentry", "kprobe", "auto"; 0 or -1. */
int sockprobe_parse_mode(const char *s, enum sockprobe_attach *out)
    __attribute__((warn_unused_result));

/* Flips the generation the probe writes, waits until no program can still write the old one,
 * then reads and clears it whole, appending one record per flow to out (owner, tuple, role,
 * summed bytes and calls). *dropped gets the events lost since the previous drain (map full).
 * Returns 0 or -1 (err filled; the old generation is then left for the next drain). */
int sockprobe_drain(struct sockprobe *sp, struct flowset *out, uint64_t *dropped, char *err,
                    size_t errlen) __attribute__((warn_unused_result));

#endif
