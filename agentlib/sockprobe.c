/* Loading, attach-mode probing and the two-generation drain of the socket probe: flows live in
 * slots (socket.bpf.c); a quiescent generation's counters are read and zeroed through mmap, and
 * slots idle for IDLE_DRAINS drains are freed in two phases so that no late update is lost or
 * lands on another flow. */
#include "sockprobe.h"

#include <errno.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "log.h"
#include "sockpin.h"
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
    __u32 *epoch;            /* slot_epoch: bumped after a slot is unpublished */
    size_t epoch_len;
    size_t keys_len, cnt_len;
    /* per slot, user side */
    uint8_t *state;
    uint64_t *last_active; /* drain number */
    uint64_t drains;
    /* scratch for batch deletes */
    struct flow_key *del_keys;
    __u32 *del_slots;
    /* pins (sockpin.h) */
    char *pin_dir; /* NULL when not pinned */
    bool adopted;
    /* a collected generation waiting for commit */
    bool collected;
    uint32_t collected_gen;
    uint64_t collected_drops; /* cumulative drops at collect time */
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

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void configure(struct socket *skel, const struct sockprobe_opts *o, uint32_t n_slots)
{
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
    bpf_map__set_max_entries(skel->maps.slot_epoch, n_slots);
}

/* Opens, configures, loads and attaches one mode; NULL with err on failure. */
static struct socket *try_mode(const struct sockprobe_opts *o, enum sockprobe_attach mode,
                               uint32_t n_slots, uint64_t token, char *err, size_t errlen)
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
    configure(skel, o, n_slots);
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
    skel->bss->owner_token = token;
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

uint64_t sockprobe_obj_hash(void)
{
    size_t n = 0;
    const unsigned char *b = socket__elf_bytes(&n);
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* The probe an earlier run pinned in o->pin_dir, when it is ours (owner token), built from the
 * same object and configured the same way (rodata compared byte for byte): its maps are reused
 * and no program is loaded, since the pinned links keep the earlier programs attached. NULL with
 * why otherwise. */
static struct socket *try_adopt(const struct sockprobe_opts *o, uint32_t n_slots,
                                enum sockprobe_attach *mode, char *why, size_t len)
{
    static const struct {
        const char *prefix;
        enum sockprobe_attach mode;
    } modes[] = {{"tpb_", SOCKPROBE_TP_BTF}, {"fx_", SOCKPROBE_FENTRY}, {"kp_", SOCKPROBE_KPROBE}};
    if (!o->adopt_token) {
        snprintf(why, len, "no state from an earlier run");
        return NULL;
    }
    if (o->adopt_obj_hash != sockprobe_obj_hash()) {
        snprintf(why, len, "the BPF object differs from the pinned one's (upgrade)");
        return NULL;
    }
    *mode = SOCKPROBE_AUTO;
    for (size_t i = 0; i < 3; i++)
        if (sockpin_count_links(o->pin_dir, modes[i].prefix) > 0)
            *mode = modes[i].mode;
    if (*mode == SOCKPROBE_AUTO || (o->attach != SOCKPROBE_AUTO && o->attach != *mode)) {
        snprintf(why, len, "no pinned links of the wanted attach mode");
        return NULL;
    }
    struct socket *skel = socket__open();
    struct bpf_program *p;
    size_t rsz = 0;
    if (!skel) {
        snprintf(why, len, "open: %s", strerror(errno));
        return NULL;
    }
    configure(skel, o, n_slots);
    const void *init = bpf_map__initial_value(skel->maps.rodata, &rsz);
    unsigned char want[rsz ? rsz : 1];
    memcpy(want, init, rsz);
    char err[256];
    if (!sockpin_maps_present(skel->skeleton, o->pin_dir)) {
        snprintf(why, len, "some maps are not pinned");
        goto fail;
    }
    if (sockpin_set_map_paths(skel->skeleton, o->pin_dir, err, sizeof(err)) != 0) {
        snprintf(why, len, "%s", err);
        goto fail;
    }
    bpf_object__for_each_program(p, skel->obj) bpf_program__set_autoload(p, false);
    int e = socket__load(skel);
    if (e) {
        snprintf(why, len, "the pinned maps do not fit this probe: %s", strerror(-e));
        goto fail;
    }
    if (skel->bss->owner_token != o->adopt_token) {
        snprintf(why, len, "the pinned probe belongs to another run (owner token)");
        goto fail;
    }
    if (memcmp(skel->rodata, want, rsz) != 0) {
        snprintf(why, len, "the pinned probe has other filters or map size");
        goto fail;
    }
    return skel;
fail:
    socket__destroy(skel);
    return NULL;
}

/* After adoption: every claimed slot is live as of drain 0 (the idle logic frees it in its two
 * phases if it stays quiet; a claim whose key was already unpublished is simply unpublished
 * again, a no-op). */
static void rebuild_slot_state(struct sockprobe *sp)
{
    int fd = bpf_map__fd(sp->skel->maps.claims);
    __u32 key, next, *prev = NULL;
    while (bpf_map_get_next_key(fd, prev, &next) == 0) {
        if (next < sp->n_slots) {
            sp->state[next] = SLOT_LIVE;
            sp->last_active[next] = 0;
        }
        key = next;
        prev = &key;
    }
}

/* Pins a fresh probe; on failure it runs unpinned (logged). */
static void pin_fresh(struct sockprobe *sp, const char *dir)
{
    char err[512];
    if (sockpin_mkdir(dir, err, sizeof(err)) != 0 ||
        sockpin_pin_all(sp->skel->skeleton, dir, err, sizeof(err)) != 0) {
        log_warn("socket", "not pinning the probe (a restart will lose the window): %s", err);
        char e2[256];
        sockpin_clear(dir, e2, sizeof(e2));
        return;
    }
    sp->pin_dir = strdup(dir);
    if (!sp->pin_dir) {
        sockpin_clear(dir, err, sizeof(err));
        log_warn("socket", "not pinning the probe: out of memory");
    }
}

static uint64_t new_token(void)
{
    uint64_t t = 0;
    while (t == 0)
        if (getrandom(&t, sizeof(t), 0) != (ssize_t)sizeof(t))
            t = (uint64_t)mono_ns() ^ ((uint64_t)getpid() << 32);
    return t;
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
    char why_not[256] = "";
    if (o->pin_dir)
        sp->skel = try_adopt(o, sp->n_slots, &sp->mode, why_not, sizeof(why_not));
    if (sp->skel) {
        sp->adopted = true;
        sp->pin_dir = strdup(o->pin_dir);
        log_info("socket",
                 "adopted the probe pinned in %s (%s): counts since the last drain "
                 "are kept",
                 o->pin_dir, sockprobe_mode_name(sp->mode));
    } else {
        uint64_t token = new_token();
        if (o->pin_dir) {
            char e2[256];
            int n = sockpin_clear(o->pin_dir, e2, sizeof(e2));
            if (n > 0)
                log_warn("socket", "removed %d stale pins in %s: %s", n, o->pin_dir, why_not);
            else if (n < 0)
                log_warn("socket", "%s", e2);
        }
        if (o->attach != SOCKPROBE_AUTO) {
            sp->skel = try_mode(o, o->attach, sp->n_slots, token, err, errlen);
            sp->mode = o->attach;
        } else {
            for (size_t i = 0; i < 3 && !sp->skel; i++) {
                sp->skel = try_mode(o, order[i], sp->n_slots, token, why[i], sizeof(why[i]));
                sp->mode = order[i];
            }
            if (!sp->skel)
                snprintf(err, errlen, "no attach mode works: %s; %s; %s", why[0], why[1], why[2]);
        }
        if (sp->skel && o->pin_dir)
            pin_fresh(sp, o->pin_dir);
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
    sp->epoch_len = ((size_t)sp->n_slots * sizeof(__u32) + (size_t)page - 1) & ~((size_t)page - 1);
    sp->epoch = mmap(NULL, sp->epoch_len, PROT_READ | PROT_WRITE, MAP_SHARED,
                     bpf_map__fd(sp->skel->maps.slot_epoch), 0);
    if (sp->keys == MAP_FAILED || sp->cnt[0] == MAP_FAILED || sp->cnt[1] == MAP_FAILED ||
        sp->epoch == MAP_FAILED) {
        snprintf(err, errlen, "mapping the flow counters: %s", strerror(errno));
        goto fail;
    }
    if (sp->adopted)
        rebuild_slot_state(sp);
    return sp;
fail:
    sockprobe_close(sp);
    return NULL;
}

static void close_probe(struct sockprobe *sp, bool keep_pins)
{
    if (!sp)
        return;
    if (sp->skel && sp->pin_dir && keep_pins)
        sockpin_disconnect_links(sp->skel->skeleton);
    if (sp->keys && sp->keys != MAP_FAILED)
        munmap(sp->keys, sp->keys_len);
    for (int g = 0; g < 2; g++)
        if (sp->cnt[g] && sp->cnt[g] != MAP_FAILED)
            munmap(sp->cnt[g], sp->cnt_len);
    if (sp->epoch && sp->epoch != MAP_FAILED)
        munmap(sp->epoch, sp->epoch_len);
    socket__destroy(sp->skel);
    free(sp->state);
    free(sp->last_active);
    free(sp->del_keys);
    free(sp->del_slots);
    free(sp->pin_dir);
    free(sp);
}

void sockprobe_close(struct sockprobe *sp)
{
    close_probe(sp, true);
}

void sockprobe_release(struct sockprobe *sp)
{
    char err[256];
    if (sp && sp->pin_dir && sockpin_clear(sp->pin_dir, err, sizeof(err)) < 0)
        log_warn("socket", "%s", err);
    close_probe(sp, false);
}

bool sockprobe_pinned(const struct sockprobe *sp)
{
    return sp->pin_dir != NULL;
}

bool sockprobe_adopted(const struct sockprobe *sp)
{
    return sp->adopted;
}

uint64_t sockprobe_token(const struct sockprobe *sp)
{
    return sp->skel->bss->owner_token;
}

uint32_t sockprobe_gen(const struct sockprobe *sp)
{
    return __atomic_load_n(&sp->skel->bss->gen, __ATOMIC_SEQ_CST) & 1;
}

void sockprobe_set_gen(struct sockprobe *sp, uint32_t g)
{
    __atomic_store_n(&sp->skel->bss->gen, g & 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    sp->collected = false;
}

uint64_t sockprobe_drops_seen(const struct sockprobe *sp)
{
    return sp->drops_seen;
}

void sockprobe_set_drops_seen(struct sockprobe *sp, uint64_t n)
{
    sp->drops_seen = n;
}

enum sockprobe_attach sockprobe_mode(const struct sockprobe *sp)
{
    return sp->mode;
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
    /* after the unpublish: sockets' cached slots (socket.bpf.c sk_slots) stop matching */
    for (__u32 i = 0; i < n; i++)
        __atomic_fetch_add(&sp->epoch[sp->del_slots[i]], 1, __ATOMIC_SEQ_CST);
    for (__u32 i = 0; i < n; i++)
        sp->state[sp->del_slots[i]] = SLOT_UNPUBLISHED;
    return 0;
}

/* Waits until no program is between choosing generation g and finishing its write. */
static int wait_quiescent(struct sockprobe *sp, __u32 g, char *err, size_t errlen)
{
    int infd = bpf_map__fd(sp->skel->maps.inflight);
    uint64_t busy = 0;
    int64_t t0 = mono_ns();
    for (;;) {
        if (percpu_sum(infd, g, sp->ncpus, &busy)) {
            snprintf(err, errlen, "reading in-flight counts: %s", strerror(errno));
            return -1;
        }
        if (busy == 0)
            return 0;
        if (mono_ns() - t0 > WAIT_LIMIT_NS) {
            snprintf(err, errlen, "generation %u still has %llu writers after 2 s", g,
                     (unsigned long long)busy);
            return -1;
        }
        sched_yield();
    }
}

static void zero_counts(struct flow_val *cnt, uint32_t n_slots)
{
    for (uint32_t s = 0; s < n_slots; s++) {
        struct flow_val *v = &cnt[s];
        if (v->tx_calls | v->rx_calls)
            v->tx_bytes = v->rx_bytes = v->tx_calls = v->rx_calls = 0;
    }
}

int sockprobe_zero_gen(struct sockprobe *sp, uint32_t g, char *err, size_t errlen)
{
    g &= 1;
    if (sockprobe_gen(sp) == g) {
        snprintf(err, errlen, "generation %u is the one being written", g);
        return -1;
    }
    if (wait_quiescent(sp, g, err, errlen) != 0)
        return -1;
    zero_counts(sp->cnt[g], sp->n_slots);
    return 0;
}

int sockprobe_collect(struct sockprobe *sp, struct flowset *out, uint64_t *dropped,
                      uint32_t *drained, char *err, size_t errlen)
{
    __u32 old = sp->skel->bss->gen & 1;
    int oom = 0;

    if (sp->collected) {
        snprintf(err, errlen, "the previous drain was neither committed nor aborted");
        return -1;
    }
    /* Flip, then a full fence before reading the in-flight counts (see account() in
     * socket.bpf.c for the other half of the protocol). */
    __atomic_store_n(&sp->skel->bss->gen, old ^ 1, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (wait_quiescent(sp, old, err, errlen) != 0)
        return -1;

    /* Nothing writes `old` now: read every slot's counters through the mapping; commit zeroes
     * them once their report is safe. */
    struct flow_val *cnt = sp->cnt[old];
    sp->drains++;
    for (uint32_t s = 0; s < sp->n_slots; s++) {
        struct flow_val *v = &cnt[s];
        if (!(v->tx_calls | v->rx_calls))
            continue;
        add_record(out, &sp->keys[s], v, 1, &oom);
        /* late updates of an unpublished slot do not make it live again: its key may already
         * be published on another slot, and it must still be released next drain */
        if (sp->state[s] != SLOT_UNPUBLISHED)
            sp->state[s] = SLOT_LIVE;
        sp->last_active[s] = sp->drains;
    }
    if (oom) {
        snprintf(err, errlen, "out of memory while draining");
        sockprobe_set_gen(sp, old);
        return -1;
    }

    uint64_t full = 0, race = 0;
    int dfd = bpf_map__fd(sp->skel->maps.drops);
    if (percpu_sum(dfd, WL_DROP_MAP_FULL, sp->ncpus, &full) ||
        percpu_sum(dfd, WL_DROP_RACE, sp->ncpus, &race)) {
        snprintf(err, errlen, "reading drop counts: %s", strerror(errno));
        sockprobe_set_gen(sp, old);
        return -1;
    }
    *dropped = full + race >= sp->drops_seen ? full + race - sp->drops_seen : full + race;
    sp->collected = true;
    sp->collected_gen = old;
    sp->collected_drops = full + race;
    if (drained)
        *drained = old;
    return 0;
}

void sockprobe_abort(struct sockprobe *sp)
{
    if (sp->collected)
        sockprobe_set_gen(sp, sp->collected_gen);
}

int sockprobe_commit(struct sockprobe *sp, char *err, size_t errlen)
{
    if (!sp->collected) {
        snprintf(err, errlen, "nothing collected to commit");
        return -1;
    }
    sp->collected = false;
    zero_counts(sp->cnt[sp->collected_gen], sp->n_slots);
    sp->drops_seen = sp->collected_drops;
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
    return 0;
}

int sockprobe_drain(struct sockprobe *sp, struct flowset *out, uint64_t *dropped, char *err,
                    size_t errlen)
{
    if (sockprobe_collect(sp, out, dropped, NULL, err, errlen) != 0)
        return -1;
    return sockprobe_commit(sp, err, errlen);
}
