/* The user side of the socket probe: picks an attach mode by probing what loads, sets the filters,
 * and drains one map generation at a time without losing an update (socket.bpf.c). */
#ifndef WL_SOCKPROBE_H
#define WL_SOCKPROBE_H

#include <stdbool.h>
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
    /* bpffs directory to pin maps and links in (NULL: no pins, the probe dies with the agent).
     * A probe pinned there by an earlier run is adopted when its owner token is adopt_token and
     * it was built from the same BPF object with the same filters; anything else pinned there is
     * removed and a fresh probe pinned. */
    const char *pin_dir;
    uint64_t adopt_token;    /* 0 = never adopt */
    uint64_t adopt_obj_hash; /* sockprobe_obj_hash() of the run that pinned it */
};

struct sockprobe;

/* Loads and attaches. On failure returns NULL with err saying, per mode tried, why (for example
 * "tp_btf: Operation not permitted (needs root or CAP_BPF+CAP_PERFMON)"). */
struct sockprobe *sockprobe_open(const struct sockprobe_opts *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Frees the user side; pinned programs stay attached and keep counting into the pinned maps. */
void sockprobe_close(struct sockprobe *sp);
/* Removes the pins, then closes: the programs detach. */
void sockprobe_release(struct sockprobe *sp);

/* Whether the probe is pinned, and whether it was adopted from an earlier run. */
bool sockprobe_pinned(const struct sockprobe *sp);
bool sockprobe_adopted(const struct sockprobe *sp);
/* The owner token written into the probe's .bss (random per fresh probe). */
uint64_t sockprobe_token(const struct sockprobe *sp);
/* FNV-1a of the BPF object this binary carries. */
uint64_t sockprobe_obj_hash(void);
/* The generation programs write now; sockprobe_set_gen makes it g (recovery: an earlier run
 * flipped but never reported the generation it flipped away from). */
uint32_t sockprobe_gen(const struct sockprobe *sp);
void sockprobe_set_gen(struct sockprobe *sp, uint32_t g);
/* Cumulative drops already reported (kept by the agent across restarts). */
uint64_t sockprobe_drops_seen(const struct sockprobe *sp);
void sockprobe_set_drops_seen(struct sockprobe *sp, uint64_t n);
/* Waits until generation g is quiescent, then zeroes its counters without reading them
 * (recovery: they were reported by an earlier run, which died before zeroing). g must not be
 * the generation programs write now. 0 or -1 with err. */
int sockprobe_zero_gen(struct sockprobe *sp, uint32_t g, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* The mode in use (never SOCKPROBE_AUTO once open). */
enum sockprobe_attach sockprobe_mode(const struct sockprobe *sp);
const char *sockprobe_mode_name(enum sockprobe_attach m);
/* "tp_btf", "fentry", "kprobe", "auto"; 0 or -1. */
int sockprobe_parse_mode(const char *s, enum sockprobe_attach *out)
    __attribute__((warn_unused_result));

/* sockprobe_collect + sockprobe_commit. Flips the generation the probe writes, waits until no
 * program can still write the old one, then reads and clears it whole, appending one record per
 * flow to out (owner, tuple, role, summed bytes and calls). *dropped gets the events lost since the
 * previous drain (map full). Returns 0 or -1 (err filled; the old generation is then left for the
 * next drain). */
int sockprobe_drain(struct sockprobe *sp, struct flowset *out, uint64_t *dropped, char *err,
                    size_t errlen) __attribute__((warn_unused_result));

/* The two halves of a drain, so that counters are zeroed only after their report is durable:
 * collect flips the generation, waits until the old one is quiescent and reads it into out
 * (nothing in the kernel changes but `gen`); commit zeroes what collect read, frees idle slots
 * and takes the drop count as reported; abort flips back instead, leaving the counts to the next
 * drain. collect returns the generation it read in *drained (may be NULL). */
int sockprobe_collect(struct sockprobe *sp, struct flowset *out, uint64_t *dropped,
                      uint32_t *drained, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int sockprobe_commit(struct sockprobe *sp, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void sockprobe_abort(struct sockprobe *sp);

#endif
