/* The user side of the throttle's kernel part (throttle.bpf.c): loads and attaches it to a
 * cgroup v2 directory (the root: every process of the host), sets class buckets, maps processes
 * to classes, reads the per-class counters, and hands over the processes the kernel announces. */
#ifndef WL_THROTTLE_PROBE_H
#define WL_THROTTLE_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define THROTTLE_MAX_CLASSES 64

enum throttle_mode {
    THROTTLE_OFF = 0,
    THROTTLE_ENFORCE = 1,
    THROTTLE_DRY_RUN = 2,
};

/* Summed over CPUs; in dry-run delayed/dropped are what enforcement would have refused. */
struct throttle_counts {
    uint64_t pass_bytes, pass_pkts, mark_pkts;
    uint64_t delay_bytes, delay_pkts; /* TCP: refused segments, kept and resent by TCP */
    uint64_t drop_bytes, drop_pkts;   /* other protocols: refused packets, lost */
};

/* An address prefix in IPv6 form (IPv4 as ::ffff:a.b.c.d, len counted over the 128 bits). */
#define THROTTLE_MAX_PREFIXES 16
struct throttle_prefix {
    uint8_t addr[16];
    uint8_t len;
};

struct throttle_probe;

/* Loads and attaches to cgroup_dir (a cgroup v2 directory). NULL with err on failure. */
struct throttle_probe *throttle_probe_open(const char *cgroup_dir, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void throttle_probe_close(struct throttle_probe *tp);

/* Sets class cls (< THROTTLE_MAX_CLASSES) to rate_bps in mode; reset: a new rule in this slot
 * (bucket full, counters zero). 0 or -1. */
int throttle_probe_set_class(struct throttle_probe *tp, unsigned cls, uint64_t rate_bps,
                             enum throttle_mode mode, int reset)
    __attribute__((warn_unused_result));
/* Class cls limits only packets whose far end is in p[0..n) (scoped), or every packet (not
 * scoped: p ignored). Kept across throttle_probe_set_class. 0 or -1. */
int throttle_probe_set_scope(struct throttle_probe *tp, unsigned cls, bool scoped,
                             const struct throttle_prefix *p, size_t n)
    __attribute__((warn_unused_result));
/* Classes in use: 0 makes every hook return at once (no rule, no cost beyond the call). */
void throttle_probe_set_active(struct throttle_probe *tp, unsigned n);
/* tgid -> class (cls < 0 removes); call throttle_probe_commit after a batch so sockets re-read
 * their class. */
int throttle_probe_map_tgid(struct throttle_probe *tp, uint32_t tgid, int cls);
/* Removes every tgid mapping. */
void throttle_probe_unmap_all(struct throttle_probe *tp);
void throttle_probe_commit(struct throttle_probe *tp);
/* Lets the kernel announce tgid again (after it exited: the pid may be reused). */
void throttle_probe_forget(struct throttle_probe *tp, uint32_t tgid);
int throttle_probe_counts(const struct throttle_probe *tp, unsigned cls,
                          struct throttle_counts *out) __attribute__((warn_unused_result));

/* Processes announced by the kernel (they created or wrote to a socket while rules are active):
 * fd to wait on (readable when there are some), and the call that hands each tgid to fn. */
int throttle_probe_events_fd(const struct throttle_probe *tp);
typedef void (*throttle_tgid_fn)(uint32_t tgid, void *arg);
void throttle_probe_events(struct throttle_probe *tp, throttle_tgid_fn fn, void *arg);

/* Downloads: clamps the receive window (TCP_WINDOW_CLAMP) of every established TCP socket of an
 * enforced class to its share of the rate times its RTT, and lifts the clamp of sockets no
 * longer in one; clamped: sockets holding a clamp now. Walks the sockets of the namespace set by
 * throttle_probe_set_netns (default: the agent's). 0 or -1. */
int throttle_probe_set_netns(struct throttle_probe *tp, const char *path)
    __attribute__((warn_unused_result));
int throttle_probe_clamp(struct throttle_probe *tp, unsigned *clamped)
    __attribute__((warn_unused_result));

/* Sender side: this host's connections whose far end is a throttled socket elsewhere (the
 * reconciler's match of both ends), each to the class of its rule's peer slot. Addresses in
 * IPv6 form (IPv4 as ::ffff:a.b.c.d), ports in host order. */
#define THROTTLE_MAX_PEERS 8192
struct throttle_peer {
    uint8_t laddr[16], raddr[16];
    uint16_t lport, rport;
    int cls;
};
/* Makes p[0..n) the peer set (replacing the last one; unchanged sets cost nothing); the
 * sockets re-read their peer class. 0, or -1 when some could not be written. */
int throttle_probe_set_peers(struct throttle_probe *tp, const struct throttle_peer *p, size_t n)
    __attribute__((warn_unused_result));

/* Kernel ids of the attached programs (for bpf_stats); returns how many. */
size_t throttle_probe_prog_ids(const struct throttle_probe *tp, uint32_t *ids, size_t max);

#endif
