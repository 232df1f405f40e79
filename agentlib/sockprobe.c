/* Loading, attach-mode probing and the two-generation drain of the socket probe: flows live in
 * slots (socket.bpf.c); a quiescent generation's counters are read and zeroed through mmap, and
 * slots idle for IDLE_DRAINS drains are freed in two phases so that no late update is lost or
 * lands on another flow. */
#include "sockprobe.h"

#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "socket.h"
#include "socket.skel.h"

#define WAIT_LIMIT_NS 2000000000LL /* an in-flight program finishes in microseconds */
#define IDLE_DRAINS   2            /* a slot without traffic for this many drains is freed */

enum slot_state { SLOT_FREE = 0, SLOT_LIVE, SLOT_UNPUBLISHED };

struct sockprobe {
    struct socket *skel;
    enum sockprobe_attach mode;
    int ncpus;
    uint64_t drops_seen; /* cumulative drops already reported */
    uint32_t n_slots;
    /* mmap'd maps */
    struct flow_key *keys;   /* slot_keys */
    struct flow_val *cnt[2]; /* counts0, counts1 */
    size_t keys_len, cnt_len;
    /* per slot, user side */
    uint8_t *state;
    uint64_t *last_active; /* drain number */
    uint64_t drains;
    /* scratch for batch deletes */
    struct flow_key *del_keys;
    __u32 *del_slots;
};

const char *sockprobe_mode_name(enum sockprobe_attach m)
{
    switch (m) {
    case SOCKPROBE_TP_BTF:
        return "tp_btf";
    case SOCKPROBE_FENTRY:
        return "fentry";
    case SOCKPROBE_KPROBE:
        return "kprobe";
    default:
        return "auto";
    }
}

int sockprobe_parse_mode(const char *s, enum sockprobe_attach *out)
{
    static const enum sockprobe_attach all[] = {SOCKPROBE_AUTO, SOCKPROBE_TP_BTF, SOCKPROBE_FENTRY,
                                                SOCKPROBE_KPROBE};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(s, sockprobe_mode_name(all[i])) == 0) {
            *out = all[i];
            return 0;
        }
    }
    return -1;
}

/* Which mode a program belongs to, by its name prefix in socket.bpf.c; AUTO = every mode. */
static enum sockprobe_attach prog_mode(const struct bpf_program *p)
{
    const char *n = bpf_program__name(p);
    if (strncmp(n, "tpb_", 4) == 0)
        return SOCKPROBE_TP_BTF;
    if (strncmp(n, "fx_", 3) == 0)
        return SOCKPROBE_FENTRY;
    if (strncmp(n, "kp_", 3) == 0 || strncmp(n, "kr_", 3) == 0)
        return SOCKPROBE_KPROBE;
    return SOCKPROBE_AUTO;
}

static const char *errno_hint(int e)
{
    if (e == EPERM || e == EACCES)
        return " (the kernel refused: this program type is unsupported here, or the process "
               "lacks CAP_BPF+CAP_PERFMON)";
    return "";
}

/* Opens, configures, loads and attaches one mode; NULL with err on failure. */
static struct socket *try_mode(const struct sockprobe_opts *o, enum sockprobe_attach mode,
                               uint32_t n_slots, char *err, size_t errlen)
{
    struct socket *skel = socket__open();
    struct bpf_program *p;
    int e;
    if (!skel) {
        e = errno;
        snprintf(err, errlen, "%s: open: %s%s", sockprobe_mode_name(mode), strerror(e),
                 errno_hint(e));
        return NULL;
    }
    skel->rodata->filter_netns = o->netns_ino;
    skel->rodata->filter_cgroup_id = o->cgroup_id;
    skel->rodata->filter_cgroup_level = o->cgroup_level;
    for (size_t i = 0; i < o->n_excl_ports && i < WL_MAX_EXCL_PORTS; i++)
        skel->rodata->excl_ports[i] = o->excl_ports[i];
    skel->rodata->n_slots = n_slots;
    skel->rodata->n_excl_ports =
        (__u32)(o->n_excl_ports < WL_MAX_EXCL_PORTS ? o->n_excl_ports : WL_MAX_EXCL_PORTS);
    bpf_map__set_max_entries(skel->maps.slot_of, n_slots);
    bpf_map__set_max_entries(skel->maps.claims, n_slots);
    bpf_map__set_max_entries(skel->maps.slot_keys, n_slots);
    bpf_map__set_max_entries(skel->maps.counts0, n_slots);
    bpf_map__set_max_entries(skel->maps.counts1, n_slots);
    bpf_object__for_each_program(p, skel->obj)
    {
        enum sockprobe_attach pm = prog_mode(p);
        bpf_program__set_autoload(p, pm == SOCKPROBE_AUTO || pm == mode);
    }
    e = socket__load(skel);
    if (e) {
        e = -e;
        snprintf(err, errlen, "%s: load: %s%s", sockprobe_mode_name(mode), strerror(e),
                 errno_hint(e));
        goto fail;
    }
    e = socket__attach(skel);
    if (e) {
        e = -e;
        snprintf(err, errlen, "%s: attach: %s%s", sockprobe_mode_name(mode), strerror(e),
                 errno_hint(e));
        goto fail;
    }
    return skel;
fail:
    socket__destroy(skel);
    return NULL;
}

struct sockprobe *sockprobe_open(const struct sockprobe_opts *o, char *err, size_t errlen)
{
    static const enum sockprobe_attach order[] = {SOCKPROBE_TP_BTF, SOCKPROBE_FENTRY,
                                                  SOCKPROBE_KPROBE};
    struct sockprobe *sp = calloc(1, sizeof(*sp));
    char why[3][256] = {{0}};
    if (!sp) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    sp->ncpus = libbpf_num_possible_cpus();
    if (sp->ncpus <= 0) {
        snprintf(err, errlen, "cannot count possible CPUs: %s", strerror(-sp->ncpus));
        goto fail;
    }
    /* slots: a power of two, at least the requested flows */
    sp->n_slots = 1;
    while (sp->n_slots < (o->map_entries ? o->map_entries : WL_FLOW_MAP_DEFAULT))
        sp->n_slots <<= 1;
    sp->state = calloc(sp->n_slots, sizeof(*sp->state));
    sp->last_active = calloc(sp->n_slots, sizeof(*sp->last_active));
    sp->del_keys = calloc(sp->n_slots, sizeof(*sp->del_keys));
    sp->del_slots = calloc(sp->n_slots, sizeof(*sp->del_slots));
    if (!sp->state || !sp->last_active || !sp->del_keys || !sp->del_slots) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    if (o->attach != SOCKPROBE_AUTO) {
        sp->skel = try_mode(o, o->attach, sp->n_slots, err, errlen);
        sp->mode = o->attach;
    } else {
        for (size_t i = 0; i < 3 && !sp->skel; i++) {
            sp->skel = try_mode(o, order[i], sp->n_slots, why[i], sizeof(why[i]));
            sp->mode = order[i];
        }
        if (!sp->skel)
            snprintf(err, errlen, "no attach mode works: %s; %s; %s", why[0], why[1], why[2]);
    }
    if (!sp->skel)
        goto fail;
    long page = sysconf(_SC_PAGESIZE);
    sp->keys_len =
        ((size_t)sp->n_slots * sizeof(struct flow_key) + (size_t)page - 1) & ~((size_t)page - 1);
    sp->cnt_len =
        ((size_t)sp->n_slots * sizeof(struct flow_val) + (size_t)page - 1) & ~((size_t)page - 1);
    sp->keys =
        mmap(NULL, sp->keys_len, PROT_READ, MAP_SHARED, bpf_map__fd(sp->skel->maps.slot_keys), 0);
    sp->cnt[0] = mmap(NULL, sp->cnt_len, PROT_READ | PROT_WRITE, MAP_SHARED,
                      bpf_map__fd(sp->skel->maps.counts0), 0);
    sp->cnt[1] = mmap(NULL, sp->cnt_len, PROT_READ | PROT_WRITE, MAP_SHARED,
                      bpf_map__fd(sp->skel->maps.counts1), 0);
    if (sp->keys == MAP_FAILED || sp->cnt[0] == MAP_FAILED || sp->cnt[1] == MAP_FAILED) {
        snprintf(err, errlen, "mapping the flow counters: %s", strerror(errno));
        goto fail;
    }
    return sp;
fail:
    sockprobe_close(sp);
    return NULL;
}

void sockprobe_close(struct sockprobe *sp)
{
    if (!sp)
        return;
    if (sp->keys && sp->keys != MAP_FAILED)
        munmap(sp->keys, sp->keys_len);
    for (int g = 0; g < 2; g++)
        if (sp->cnt[g] && sp->cnt[g] != MAP_FAILED)
            munmap(sp->cnt[g], sp->cnt_len);
    socket__destroy(sp->skel);
    free(sp->state);
    free(sp->last_active);
    free(sp->del_keys);
    free(sp->del_slots);
    free(sp);
}

enum sockprobe_attach sockprobe_mode(const struct sockprobe *sp)
{
    return sp->mode;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sum over CPUs of a per-CPU u64 array slot. */
static int percpu_sum(int fd, __u32 slot, int ncpus, uint64_t *sum)
{
    uint64_t v[ncpus > 0 ? ncpus : 1];
    if (bpf_map_lookup_elem(fd, &slot, v))
        return -1;
    *sum = 0;
    for (int i = 0; i < ncpus; i++)
        *sum += v[i];
    return 0;
}

static void add_record(struct flowset *out, const struct flow_key *k, const struct flow_val *v,
                       int ncpus, int *oom)
{
    struct flow_val sum = {0};
    for (int c = 0; c < ncpus; c++) {
        sum.tx_bytes += v[c].tx_bytes;
        sum.rx_bytes += v[c].rx_bytes;
        sum.tx_calls += v[c].tx_calls;
        sum.rx_calls += v[c].rx_calls;
        if (v[c].role > sum.role)
            sum.role = v[c].role;
    }
    if (sum.tx_bytes == 0 && sum.rx_bytes == 0)
        return;
    struct flow_rec *r = flowset_add(out);
    if (!r) {
        *oom = 1;
        return;
    }
    r->source = FLOW_SRC_SOCKET;
    r->owner.pid = k->tgid;
    r->owner.ppid = k->ppid;
    r->owner.uid = k->uid;
    r->owner.cgroup_id = k->cgroup_id;
    r->owner.start_ns = k->start_ns;
    memcpy(r->owner.comm, k->comm, sizeof(r->owner.comm));
    r->owner.comm[sizeof(r->owner.comm) - 1] = '\0';
    r->family = k->family;
    r->proto = k->proto;
    memcpy(r->laddr, k->laddr, 16);
    memcpy(r->raddr, k->raddr, 16);
    r->lport = k->lport;
    r->rport = k->rport;
    r->netns = k->netns;
    r->role = (int)sum.role;
    r->tx_bytes = sum.tx_bytes;
    r->rx_bytes = sum.rx_bytes;
    r->tx_calls = sum.tx_calls;
    r->rx_calls = sum.rx_calls;
}

/* Deletes n keys (key_size bytes each) from a hash map: one batch call, else one by one; a key
 * already gone counts as deleted. 0, or -1 with errno. */
static int delete_keys(int fd, const void *keys, size_t key_size, __u32 n)
{
    LIBBPF_OPTS(bpf_map_batch_opts, bo);
    __u32 count = n;
    if (n == 0 || (bpf_map_delete_batch(fd, keys, &count, &bo) == 0 && count == n))
        return 0;
    for (__u32 i = 0; i < n; i++) {
        const char *k = (const char *)keys + (size_t)i * key_size;
        if (bpf_map_delete_elem(fd, k) != 0 && errno != ENOENT)
            return -1;
    }
    return 0;
}

/* Frees slots in two phases. Phase 2 (slots unpublished at the previous drain): no program can
 * still hold them (any that looked the flow up before it was unpublished ran in a generation
 * drained since), and their late counts were read just now under their old key: release the
 * claim. Phase 1 (live slots idle for IDLE_DRAINS drains): unpublish the flow from slot_of, so new
 * events of it take a new slot; the slot and its key stay until phase 2. */
static int free_idle_slots(struct sockprobe *sp, char *err, size_t errlen)
{
    int claims = bpf_map__fd(sp->skel->maps.claims);
    int slot_of = bpf_map__fd(sp->skel->maps.slot_of);
    __u32 n = 0;
    for (uint32_t s = 0; s < sp->n_slots; s++)
        if (sp->state[s] == SLOT_UNPUBLISHED)
            sp->del_slots[n++] = s;
    if (delete_keys(claims, sp->del_slots, sizeof(__u32), n) != 0) {
        snprintf(err, errlen, "releasing %u idle slots: %s", n, strerror(errno));
        return -1;
    }
    for (__u32 i = 0; i < n; i++)
        sp->state[sp->del_slots[i]] = SLOT_FREE;

    n = 0;
    for (uint32_t s = 0; s < sp->n_slots; s++) {
        if (sp->state[s] != SLOT_LIVE || sp->drains - sp->last_active[s] < IDLE_DRAINS)
            continue;
        sp->del_keys[n] = sp->keys[s];
        sp->del_slots[n++] = s;
    }
    if (delete_keys(slot_of, sp->del_keys, sizeof(struct flow_key), n) != 0) {
        snprintf(err, errlen, "unpublishing %u idle flows: %s", n, strerror(errno));
        return -1;
    }
    for (__u32 i = 0; i < n; i++)
        sp->state[sp->del_slots[i]] = SLOT_UNPUBLISHED;
    return 0;
}

int sockprobe_drain(struct sockprobe *sp, struct flowset *out, uint64_t *dropped, char *err,
                    size_t errlen)
{
    __u32 old = sp->skel->bss->gen & 1;
    int infd = bpf_map__fd(sp->skel->maps.inflight);
    uint64_t busy = 0;
    int oom = 0;

    /* Flip, then a full fence before reading the in-flight counts (see account() in
     * socket.bpf.c for the other half of the protocol). */
    __atomic_store_n(&sp->skel->bss->gen, old ^ 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    int64_t t0 = mono_ns();
    for (;;) {
        if (percpu_sum(infd, old, sp->ncpus, &busy)) {
            snprintf(err, errlen, "reading in-flight counts: %s", strerror(errno));
            return -1;
        }
        if (busy == 0)
            break;
        if (mono_ns() - t0 > WAIT_LIMIT_NS) {
            snprintf(err, errlen, "generation %u still has %llu writers after 2 s", old,
                     (unsigned long long)busy);
            return -1;
        }
        sched_yield();
    }

    /* Nothing writes `old` now: read every slot's counters through the mapping and zero them
     * (the role stays: it belongs to the slot's flow). */
    struct flow_val *cnt = sp->cnt[old];
    sp->drains++;
    for (uint32_t s = 0; s < sp->n_slots; s++) {
        struct flow_val *v = &cnt[s];
        if (!(v->tx_calls | v->rx_calls))
            continue;
        add_record(out, &sp->keys[s], v, 1, &oom);
        v->tx_bytes = v->rx_bytes = v->tx_calls = v->rx_calls = 0;
        /* late updates of an unpublished slot do not make it live again: its key may already
         * be published on another slot, and it must still be released next drain */
        if (sp->state[s] != SLOT_UNPUBLISHED)
            sp->state[s] = SLOT_LIVE;
        sp->last_active[s] = sp->drains;
    }
    if (oom) {
        snprintf(err, errlen, "out of memory while draining");
        return -1;
    }
    if (free_idle_slots(sp, err, errlen) != 0)
        return -1;
    /* point the kernel's claim hint at a slot that is free as far as this drain knows */
    uint32_t hint = sp->skel->bss->next_hint & (sp->n_slots - 1);
    for (uint32_t i = 0; i < sp->n_slots; i++) {
        uint32_t s = (hint + i) & (sp->n_slots - 1);
        if (sp->state[s] == SLOT_FREE) {
            sp->skel->bss->next_hint = s;
            break;
        }
    }

    uint64_t full = 0, race = 0;
    int dfd = bpf_map__fd(sp->skel->maps.drops);
    if (percpu_sum(dfd, WL_DROP_MAP_FULL, sp->ncpus, &full) ||
        percpu_sum(dfd, WL_DROP_RACE, sp->ncpus, &race)) {
        snprintf(err, errlen, "reading drop counts: %s", strerror(errno));
        return -1;
    }
    *dropped = full + race - sp->drops_seen;
    sp->drops_seen = full + race;
    return 0;
}
