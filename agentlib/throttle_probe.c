/* Loading and attaching the throttle (throttle.bpf.c) and the map updates the agent makes. */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/types.h>

#include "throttle.h"
#include "throttle_probe.h"
#include "throttle.skel.h"

_Static_assert(THROTTLE_MAX_CLASSES == WL_THR_MAX_CLASSES, "class count");

/* Credit a class may save up, and the TCP queue beyond it sent with a congestion signal: 10 ms
 * and 100 ms of the rate (TCP paces itself to its share: the queue only absorbs jitter), at least
 * two 64 KiB TSO segments and one. */
#define BURST_NS  10000000ULL
#define QUEUE_NS  100000000ULL
#define MIN_BURST (128u * 1024u)
#define MIN_QUEUE (64u * 1024u)

struct throttle_probe {
    struct throttle *skel;
    int cg_fd;
    struct bpf_link *links[7]; /* [6]: the clamp iterator */
    int netns_fd;              /* the namespace whose sockets are clamped (-1: ours) */
    struct ring_buffer *rb;
    throttle_tgid_fn fn;
    void *fn_arg;
    int ncpu;
    struct { /* what thr_scope holds per class (to remove it again) */
        bool scoped;
        size_t n;
        struct throttle_prefix p[THROTTLE_MAX_PREFIXES];
    } scope[WL_THR_MAX_CLASSES];
    struct throttle_peer *peers; /* what thr_peers holds (to compare and remove) */
    size_t n_peers;
};

static int on_event(void *ctx, void *data, size_t len)
{
    struct throttle_probe *tp = ctx;
    uint32_t tgid;
    if (len < sizeof(tgid) || !tp->fn)
        return 0;
    memcpy(&tgid, data, sizeof(tgid));
    tp->fn(tgid, tp->fn_arg);
    return 0;
}

struct throttle_probe *throttle_probe_open(const char *cgroup_dir, char *err, size_t errlen)
{
    struct throttle_probe *tp = calloc(1, sizeof(*tp));
    if (!tp) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    tp->cg_fd = -1;
    tp->netns_fd = -1;
    tp->ncpu = libbpf_num_possible_cpus();
    tp->skel = throttle__open();
    if (!tp->skel || tp->ncpu <= 0) {
        snprintf(err, errlen, "open: %s", strerror(errno));
        goto fail;
    }
    int e = throttle__load(tp->skel);
    if (e) {
        snprintf(err, errlen, "load: %s%s", strerror(-e),
                 e == -EPERM ? " (needs root or CAP_BPF+CAP_NET_ADMIN+CAP_PERFMON)" : "");
        goto fail;
    }
    tp->cg_fd = open(cgroup_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tp->cg_fd < 0) {
        snprintf(err, errlen, "cgroup %s: %s", cgroup_dir, strerror(errno));
        goto fail;
    }
    /* links: they go away with the agent, so a crashed agent throttles nothing (fail open) */
    tp->links[0] = bpf_program__attach_cgroup(tp->skel->progs.thr_egress, tp->cg_fd);
    tp->links[1] = tp->links[0]
                       ? bpf_program__attach_cgroup(tp->skel->progs.thr_sock_create, tp->cg_fd)
                       : NULL;
    tp->links[2] = tp->links[1] ? bpf_program__attach(tp->skel->progs.thr_send) : NULL;
    tp->links[3] =
        tp->links[2] ? bpf_program__attach_cgroup(tp->skel->progs.thr_sockops, tp->cg_fd) : NULL;
    tp->links[4] =
        tp->links[3] ? bpf_program__attach_cgroup(tp->skel->progs.thr_ingress, tp->cg_fd) : NULL;
    tp->links[5] = tp->links[4] ? bpf_program__attach(tp->skel->progs.thr_recv) : NULL;
    tp->links[6] = tp->links[5] ? bpf_program__attach_iter(tp->skel->progs.thr_clamp, NULL) : NULL;
    if (!tp->links[6]) {
        snprintf(err, errlen, "attach to %s: %s", cgroup_dir, strerror(errno));
        goto fail;
    }
    tp->rb = ring_buffer__new(bpf_map__fd(tp->skel->maps.thr_events), on_event, tp, NULL);
    if (!tp->rb) {
        snprintf(err, errlen, "ring buffer: %s", strerror(errno));
        goto fail;
    }
    return tp;
fail:
    throttle_probe_close(tp);
    return NULL;
}

void throttle_probe_close(struct throttle_probe *tp)
{
    if (!tp)
        return;
    ring_buffer__free(tp->rb);
    for (size_t i = 0; i < 7; i++)
        bpf_link__destroy(tp->links[i]);
    if (tp->netns_fd >= 0)
        close(tp->netns_fd);
    if (tp->cg_fd >= 0)
        close(tp->cg_fd);
    throttle__destroy(tp->skel);
    free(tp->peers);
    free(tp);
}

int throttle_probe_set_class(struct throttle_probe *tp, unsigned cls, uint64_t rate_bps,
                             enum throttle_mode mode, int reset)
{
    if (cls >= WL_THR_MAX_CLASSES)
        return -1;
    __u32 k = cls;
    struct thr_cfg c = {.rate_Bps = rate_bps / 8, .mode = (__u32)mode};
    c.scoped = tp->scope[cls].scoped;
    c.burst = c.rate_Bps * BURST_NS / 1000000000ULL;
    if (c.burst < MIN_BURST)
        c.burst = MIN_BURST;
    c.queue = c.rate_Bps * QUEUE_NS / 1000000000ULL;
    if (c.queue < MIN_QUEUE)
        c.queue = MIN_QUEUE;
    if (reset) {
        struct thr_state s;
        memset(&s, 0, sizeof(s));
        s.credit = (__s64)c.burst;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s.last_ns = (__u64)ts.tv_sec * 1000000000ULL + (__u64)ts.tv_nsec;
        if (bpf_map_update_elem(bpf_map__fd(tp->skel->maps.thr_state), &k, &s, 0) != 0 ||
            bpf_map_update_elem(bpf_map__fd(tp->skel->maps.thr_state_in), &k, &s, 0) != 0)
            return -1;
        struct thr_counts *z = calloc((size_t)tp->ncpu, sizeof(*z));
        if (!z)
            return -1;
        int r = bpf_map_update_elem(bpf_map__fd(tp->skel->maps.thr_counts), &k, z, 0);
        free(z);
        if (r != 0)
            return -1;
    }
    return bpf_map_update_elem(bpf_map__fd(tp->skel->maps.thr_cfg), &k, &c, 0) ? -1 : 0;
}

static void scope_key(struct thr_scope_key *k, unsigned cls, const struct throttle_prefix *p)
{
    memset(k, 0, sizeof(*k));
    k->prefixlen = 32 + p->len;
    k->cls = cls;
    memcpy(k->addr, p->addr, sizeof(k->addr));
}

int throttle_probe_set_scope(struct throttle_probe *tp, unsigned cls, bool scoped,
                             const struct throttle_prefix *p, size_t n)
{
    if (cls >= WL_THR_MAX_CLASSES || n > THROTTLE_MAX_PREFIXES)
        return -1;
    int fd = bpf_map__fd(tp->skel->maps.thr_scope), rc = 0;
    struct thr_scope_key k;
    __u8 one = 1;
    for (size_t i = 0; i < tp->scope[cls].n; i++) {
        scope_key(&k, cls, &tp->scope[cls].p[i]);
        bpf_map_delete_elem(fd, &k);
    }
    tp->scope[cls].n = 0;
    for (size_t i = 0; scoped && i < n; i++) {
        scope_key(&k, cls, &p[i]);
        if (bpf_map_update_elem(fd, &k, &one, 0) != 0)
            rc = -1;
        tp->scope[cls].p[tp->scope[cls].n++] = p[i];
    }
    tp->scope[cls].scoped = scoped;
    /* the class's cfg carries the flag: read, set, write back */
    __u32 key = cls;
    struct thr_cfg c;
    int cfd = bpf_map__fd(tp->skel->maps.thr_cfg);
    if (bpf_map_lookup_elem(cfd, &key, &c) != 0)
        return -1;
    c.scoped = scoped;
    if (bpf_map_update_elem(cfd, &key, &c, 0) != 0)
        return -1;
    return rc;
}

void throttle_probe_set_active(struct throttle_probe *tp, unsigned n)
{
    __atomic_store_n(&tp->skel->bss->n_active, n, __ATOMIC_RELEASE);
}

int throttle_probe_map_tgid(struct throttle_probe *tp, uint32_t tgid, int cls)
{
    int fd = bpf_map__fd(tp->skel->maps.thr_tgid_class);
    if (cls < 0)
        return bpf_map_delete_elem(fd, &tgid) == 0 || errno == ENOENT ? 0 : -1;
    __s32 v = cls;
    return bpf_map_update_elem(fd, &tgid, &v, 0) ? -1 : 0;
}

void throttle_probe_unmap_all(struct throttle_probe *tp)
{
    int fd = bpf_map__fd(tp->skel->maps.thr_tgid_class);
    __u32 key, next;
    /* delete as we go: always restart from the first key (bounded by the map size) */
    for (unsigned i = 0; i < WL_THR_MAX_TGIDS + 1; i++) {
        if (bpf_map_get_next_key(fd, NULL, &next) != 0)
            break;
        key = next;
        bpf_map_delete_elem(fd, &key);
    }
}

void throttle_probe_commit(struct throttle_probe *tp)
{
    __atomic_fetch_add(&tp->skel->data->class_gen, 1, __ATOMIC_ACQ_REL);
}

void throttle_probe_forget(struct throttle_probe *tp, uint32_t tgid)
{
    bpf_map_delete_elem(bpf_map__fd(tp->skel->maps.thr_seen), &tgid);
}

int throttle_probe_counts(const struct throttle_probe *tp, unsigned cls,
                          struct throttle_counts *out)
{
    memset(out, 0, sizeof(*out));
    if (cls >= WL_THR_MAX_CLASSES)
        return -1;
    struct thr_counts *v = calloc((size_t)tp->ncpu, sizeof(*v));
    if (!v)
        return -1;
    __u32 k = cls;
    int r = bpf_map_lookup_elem(bpf_map__fd(tp->skel->maps.thr_counts), &k, v);
    for (int i = 0; r == 0 && i < tp->ncpu; i++) {
        out->pass_bytes += v[i].pass_bytes;
        out->pass_pkts += v[i].pass_pkts;
        out->mark_pkts += v[i].mark_pkts;
        out->delay_bytes += v[i].delay_bytes;
        out->delay_pkts += v[i].delay_pkts;
        out->drop_bytes += v[i].drop_bytes;
        out->drop_pkts += v[i].drop_pkts;
    }
    free(v);
    return r ? -1 : 0;
}

int throttle_probe_events_fd(const struct throttle_probe *tp)
{
    return ring_buffer__epoll_fd(tp->rb);
}

void throttle_probe_events(struct throttle_probe *tp, throttle_tgid_fn fn, void *arg)
{
    tp->fn = fn;
    tp->fn_arg = arg;
    ring_buffer__consume(tp->rb);
    tp->fn = NULL;
}

size_t throttle_probe_prog_ids(const struct throttle_probe *tp, uint32_t *ids, size_t max)
{
    const struct bpf_program *p[] = {tp->skel->progs.thr_egress,  tp->skel->progs.thr_sock_create,
                                     tp->skel->progs.thr_send,    tp->skel->progs.thr_sockops,
                                     tp->skel->progs.thr_ingress, tp->skel->progs.thr_recv};
    size_t n = 0;
    for (size_t i = 0; i < 6 && n < max; i++) {
        struct bpf_prog_info info;
        __u32 len = sizeof(info);
        memset(&info, 0, sizeof(info));
        if (bpf_obj_get_info_by_fd(bpf_program__fd(p[i]), &info, &len) == 0)
            ids[n++] = info.id;
    }
    return n;
}

int throttle_probe_set_netns(struct throttle_probe *tp, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (tp->netns_fd >= 0)
        close(tp->netns_fd);
    tp->netns_fd = fd;
    return 0;
}

/* One run of the iterator: it walks the TCP sockets of the namespace it was created in. */
static int run_iter(struct throttle_probe *tp)
{
    int self = -1, fd = -1;
    if (tp->netns_fd >= 0) {
        self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
        if (self < 0 || setns(tp->netns_fd, CLONE_NEWNET) != 0) {
            if (self >= 0)
                close(self);
            return -1;
        }
    }
    fd = bpf_iter_create(bpf_link__fd(tp->links[6]));
    if (self >= 0) {
        /* back home; the agent cannot run on in the wrong namespace */
        if (setns(self, CLONE_NEWNET) != 0)
            abort();
        close(self);
    }
    if (fd < 0)
        return -1;
    char buf[256];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        ;
    close(fd);
    return n < 0 ? -1 : 0;
}

int throttle_probe_clamp(struct throttle_probe *tp, unsigned *clamped)
{
    memset(tp->skel->bss->clamp_active, 0, sizeof(tp->skel->bss->clamp_active));
    tp->skel->bss->clamped = 0;
    tp->skel->bss->clamp_pass = 0;
    if (run_iter(tp) != 0)
        return -1;
    tp->skel->bss->clamp_pass = 1;
    int r = run_iter(tp);
    *clamped = __atomic_load_n(&tp->skel->bss->clamped, __ATOMIC_ACQUIRE);
    return r;
}

static void peer_key(struct thr_peer_key *k, const struct throttle_peer *p)
{
    memset(k, 0, sizeof(*k));
    memcpy(k->laddr, p->laddr, 16);
    memcpy(k->raddr, p->raddr, 16);
    k->lport = p->lport;
    k->rport = p->rport;
}

int throttle_probe_set_peers(struct throttle_probe *tp, const struct throttle_peer *p, size_t n)
{
    if (n > THROTTLE_MAX_PEERS)
        n = THROTTLE_MAX_PEERS;
    if (n == tp->n_peers && (n == 0 || memcmp(p, tp->peers, n * sizeof(*p)) == 0))
        return 0;
    int fd = bpf_map__fd(tp->skel->maps.thr_peers), rc = 0;
    struct thr_peer_key k;
    for (size_t i = 0; i < tp->n_peers; i++) {
        peer_key(&k, &tp->peers[i]);
        bpf_map_delete_elem(fd, &k);
    }
    struct throttle_peer *copy = n ? malloc(n * sizeof(*p)) : NULL;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        __s32 v = p[i].cls;
        peer_key(&k, &p[i]);
        if (bpf_map_update_elem(fd, &k, &v, 0) != 0) {
            rc = -1;
            continue;
        }
        if (copy)
            copy[kept++] = p[i];
    }
    if (n && !copy)
        rc = -1; /* the next call rewrites the set (the old entries may linger until then) */
    free(tp->peers);
    tp->peers = copy;
    tp->n_peers = copy ? kept : 0;
    __atomic_store_n(&tp->skel->bss->n_peers, (__u32)n, __ATOMIC_RELEASE);
    __atomic_fetch_add(&tp->skel->data->peer_gen, 1, __ATOMIC_ACQ_REL);
    return rc;
}
