/* The socket probe: TCP and UDP bytes and calls per (process, socket 4-tuple), counted in flow
 * slots, into one of two counter generations that the agent flips and drains whole (sockprobe.c).
 */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "socket.h"
#include "core_fixes.bpf.h"

#define AF_INET  2
#define AF_INET6 10
#define MSG_PEEK 2
#define EEXIST   17

char LICENSE[] SEC("license") = "GPL";

/* Filters, set by the agent through the skeleton's rodata before load; 0 = off. */
const volatile __u32 filter_netns = 0;        /* inode of /proc/PID/ns/net */
const volatile __u64 filter_cgroup_id = 0;    /* cgroup v2 id (inode) of the subtree root */
const volatile __s32 filter_cgroup_level = 0; /* its depth below the cgroup root */
const volatile __u16 excl_ports[WL_MAX_EXCL_PORTS] = {};
const volatile __u32 n_excl_ports = 0;

/* The generation events are written to; only the agent writes it (through the mmap'd .bss). */
volatile __u32 gen = 0;

/* Flows live in slots that outlast windows: `slot_of` maps a flow to its slot, `slot_keys` holds
 * each slot's flow, and `counts0`/`counts1` the slot's counters per generation. The agent reads
 * and zeroes a quiescent generation through mmap (no syscall per flow) and frees slots idle for
 * a while in two phases (sockprobe.c). `claims` marks slots in use. n_slots is a power of two. */
const volatile __u32 n_slots = WL_FLOW_MAP_DEFAULT;
volatile __u32 next_hint = 0; /* where the next claim starts looking */
/* Random per probe instance, written by the agent before attaching: a restarted agent adopts
 * pinned maps only when this matches the token it kept in its state file (sockprobe.c). */
volatile __u64 owner_token = 0;

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, WL_FLOW_MAP_DEFAULT);
    __type(key, struct flow_key);
    __type(value, __u32);
} slot_of SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, WL_FLOW_MAP_DEFAULT);
    __type(key, __u32);
    __type(value, __u32);
} claims SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, WL_FLOW_MAP_DEFAULT);
    __type(key, __u32);
    __type(value, struct flow_key);
} slot_keys SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, WL_FLOW_MAP_DEFAULT);
    __type(key, __u32);
    __type(value, struct flow_val);
} counts0 SEC(".maps"), counts1 SEC(".maps");

/* Per slot, bumped by the agent each time it unpublishes the slot (after deleting it from
 * slot_of): a socket's cached slot (sk_slots) is used only while the epoch it was cached with
 * holds. */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(map_flags, BPF_F_MMAPABLE);
    __uint(max_entries, WL_FLOW_MAP_DEFAULT);
    __type(key, __u32);
    __type(value, __u32);
} slot_epoch SEC(".maps");

/* Per socket (tp_btf/fentry modes): the slot its last event counted in, as one 64-bit word
 * (slot + 1) << 32 | epoch, read and written whole (threads of several CPUs share sockets). An
 * event uses it when the epoch still holds and the slot's key (slot_keys) is this event's, checked
 * field by field against the task and the socket (fast_account): no flow key built, no hash.
 * Another process or thread name, a new peer or owner, differs and takes the full path. */
struct {
    __uint(type, BPF_MAP_TYPE_SK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, __u64);
} sk_slots SEC(".maps");

/* Programs currently between choosing a generation and finishing their write, per generation:
 * the agent drains a generation only once the sum over CPUs is 0 after the flip. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 2);
    __type(key, __u32);
    __type(value, __u64);
} inflight SEC(".maps");

/* Events that could not be counted, per reason (WL_DROP_*), cumulative. */
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, WL_DROP_NSLOTS);
    __type(key, __u32);
    __type(value, __u64);
} drops SEC(".maps");

/* What the state tracepoint learnt about a TCP socket (key: struct sock *): its role when the
 * kernel saw it connect or get accepted, and its local port, which the kernel zeroes when the
 * connection closes while unread data may still wait in the socket. Entries are not deleted at
 * close (that data is read later); a reused sock pointer is overwritten when the new socket
 * connects or is accepted, and LRU evicts the rest. */
struct sock_info {
    __u32 role;
    __u16 lport;
    __u16 pad;
};
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 65536);
    __type(key, __u64);
    __type(value, struct sock_info);
} socks SEC(".maps");

/* A peer address taken from a message rather than from the socket (unconnected UDP). */
struct wl_peer {
    __u16 family;
    __u16 port; /* host order */
    __u8 addr[16];
};

/* tp_btf mode: what the current thread's sendto/sendmsg/sendmmsg/recvfrom/recvmsg carries, from
 * the syscall tracepoints; an unconnected UDP receive waits here for the address until the
 * syscall returns. */
enum stash_kind { STASH_SEND_PEER = 1, STASH_SEND_VEC, STASH_RECV_ADDR, STASH_RECV_MSG };
struct stash {
    __u32 kind;
    __u32 idx;  /* STASH_SEND_VEC: next message of the vector */
    __u64 uptr; /* user pointer: mmsghdr[], sockaddr or user_msghdr */
    struct wl_peer peer;
    __u32 pending; /* a received byte count waits in key/bytes */
    __u32 pad;
    __u64 bytes;
    __u64 calls;
    struct flow_key key;
};
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u64); /* pid_tgid */
    __type(value, struct stash);
} stashes SEC(".maps");

/* kprobe mode: entry arguments until the kretprobe. */
struct kargs {
    __u64 sk;
    __u64 msg;
    __s32 flags;
    __u32 pad;
};
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, 16384);
    __type(key, __u64);
    __type(value, struct kargs);
} kargs_by_tid SEC(".maps");

static __always_inline void bump_drop(__u32 slot)
{
    __u64 *d = bpf_map_lookup_elem(&drops, &slot);
    if (d)
        __sync_fetch_and_add(d, 1);
}

/* Role of a TCP socket for a new flow: what the state tracepoint saw, else its bind bucket. */
static __always_inline __u32 sock_role(__u64 skp, __u16 lport)
{
    if (!skp)
        return WL_ROLE_UNKNOWN;
    struct sock_info *si = bpf_map_lookup_elem(&socks, &skp);
    if (si && si->role)
        return si->role;
    /* a connection older than the agent: decide once, remember */
    struct sock_info fresh = {.role = wl_tcp_role_from_bind_bucket((struct sock *)skp),
                              .lport = lport};
    if (fresh.role)
        bpf_map_update_elem(&socks, &skp, &fresh, BPF_ANY);
    return fresh.role;
}

#define WL_CLAIM_PROBES 32

/* Finds a free slot for a new flow, fills it and publishes it in slot_of. Returns the slot, or
 * -1 when no slot could be had (counted as a drop by the caller). */
static __always_inline long slot_claim(const struct flow_key *k, __u64 skp)
{
    __u32 mask = n_slots - 1;
    __u32 start = next_hint;
    __u32 one = 1;
    for (__u32 i = 0; i < WL_CLAIM_PROBES; i++) {
        __u32 cand = (start + i) & mask;
        if (bpf_map_update_elem(&claims, &cand, &one, BPF_NOEXIST) != 0)
            continue;
        /* ours: key and role first, then publish */
        struct flow_key *dst = bpf_map_lookup_elem(&slot_keys, &cand);
        struct flow_val *c0 = bpf_map_lookup_elem(&counts0, &cand);
        struct flow_val *c1 = bpf_map_lookup_elem(&counts1, &cand);
        if (!dst || !c0 || !c1)
            return -1;
        __builtin_memcpy(dst, k, sizeof(*k));
        __u32 role = sock_role(skp, k->lport);
        c0->role = role;
        c1->role = role;
        long err = bpf_map_update_elem(&slot_of, k, &cand, BPF_NOEXIST);
        if (err == -EEXIST) {
            /* another CPU published this flow first: use its slot, give ours back */
            bpf_map_delete_elem(&claims, &cand);
            __u32 *theirs = bpf_map_lookup_elem(&slot_of, k);
            return theirs ? (long)*theirs : -1;
        }
        if (err) {
            bpf_map_delete_elem(&claims, &cand);
            return -1;
        }
        next_hint = cand + 1;
        return cand;
    }
    /* a crowded stretch: let the next claim look past it (the agent also moves the hint to a
     * free slot after every drain) */
    next_hint = start + WL_CLAIM_PROBES;
    return -1;
}

static __always_inline bool key_equal(const struct flow_key *a, const struct flow_key *b)
{
    const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;
    for (int i = 0; i < (int)(sizeof(*a) / 8); i++)
        if (x[i] != y[i])
            return false;
    return true;
}

/* Caches slot for the socket: the epoch is read first, then slot_of is checked to still publish
 * the slot; the agent unpublishes (slot_of) before it bumps the epoch, so a cached epoch is
 * either current for a published slot or already stale. */
static __always_inline void cache_slot(__u64 *cache, const struct flow_key *k, __u32 slot)
{
    __u32 *ep = bpf_map_lookup_elem(&slot_epoch, &slot);
    if (!ep)
        return;
    __u32 e = *(volatile __u32 *)ep;
    __u32 *sp = bpf_map_lookup_elem(&slot_of, k);
    if (sp && *sp == slot)
        *(volatile __u64 *)cache = ((__u64)(slot + 1) << 32) | e;
}

/* Adds one event (the caller holds its generation's in-flight count). cache: the socket's
 * sk_slots word, or NULL. The socket's cached slot was tried before (fast_account). */
static __always_inline void flow_add(void *counts, const struct flow_key *k, __u64 bytes,
                                     __u64 calls, bool tx, __u64 skp, __u64 *cache)
{
    __u32 slot;
    __u32 *sp = bpf_map_lookup_elem(&slot_of, k);
    if (sp) {
        slot = *sp;
    } else {
        long got = slot_claim(k, skp);
        if (got < 0) {
            bump_drop(WL_DROP_MAP_FULL);
            return;
        }
        slot = (__u32)got;
    }
    if (cache)
        cache_slot(cache, k, slot);
    struct flow_val *v = bpf_map_lookup_elem(counts, &slot);
    if (!v)
        return;
    /* shared by all CPUs: atomic */
    if (tx) {
        __sync_fetch_and_add(&v->tx_bytes, bytes);
        __sync_fetch_and_add(&v->tx_calls, calls);
    } else {
        __sync_fetch_and_add(&v->rx_bytes, bytes);
        __sync_fetch_and_add(&v->rx_calls, calls);
    }
}

/* Counts into the current generation. The order matters: raise the generation's in-flight
 * count (a locked add, a full barrier), then re-read `gen`; the agent stores `gen`, fences, then
 * reads the count. Either this program sees the new generation and moves to it, or the agent
 * sees the count and waits, so no write lands in a generation being drained. */
static __always_inline void account(const struct flow_key *k, __u64 bytes, __u64 calls, bool tx,
                                    __u64 skp, __u64 *cache)
{
    __u32 g = gen & 1;
    for (int attempt = 0; attempt < 3; attempt++) {
        __u64 *inf = bpf_map_lookup_elem(&inflight, &g);
        if (!inf)
            return;
        __sync_fetch_and_add(inf, 1);
        __u32 now = *(volatile __u32 *)&gen & 1;
        if (now == g) {
            if (g)
                flow_add(&counts1, k, bytes, calls, tx, skp, cache);
            else
                flow_add(&counts0, k, bytes, calls, tx, skp, cache);
            __sync_fetch_and_add(inf, -1);
            return;
        }
        __sync_fetch_and_add(inf, -1);
        g = now;
    }
    bump_drop(WL_DROP_RACE);
}

/* ---- the per-event fast path (BTF-typed sk, no peer from the message) ----
 * A socket's cached slot (sk_slots) is checked against the facts of this event directly, with
 * no flow key built: the slot's key (slot_keys, unchanged while its epoch holds) must equal, field
 * by field, what key_from_sock would build now. Read per event: tgid, uid and cgroup id (three
 * helper calls), the group leader's start time, the parent's tgid and the thread's comm (plain
 * loads from the task: an exec, prctl(PR_SET_NAME) or a reparent changes them), and the socket's
 * ports and addresses (plain loads: a TCP socket can be disconnected and connected again, a UDP
 * socket reconnected). Not read: the socket's family, protocol and netns (fixed for the socket's
 * life, which is the storage's) and the filters and loopback/excluded-port checks (functions of
 * the key, passed when the slot was cached). Any difference is a miss: the full path runs. */
static __always_inline bool key_is_current(const struct flow_key *key, struct sock *sk)
{
    __u64 id = (bpf_get_current_pid_tgid() >> 32) | (bpf_get_current_uid_gid() << 32);
    if (*(const __u64 *)key != id || key->cgroup_id != bpf_get_current_cgroup_id())
        return false;
    /* ports: lport | rport << 16, as the key holds them (host order) */
    __u32 ports =
        (__u32)sk->__sk_common.skc_num | ((__u32)bpf_ntohs(sk->__sk_common.skc_dport) << 16);
    if (*(const __u32 *)&key->lport != ports)
        return false;
    /* an unconnected UDP socket's peer comes from the message (the stash): full path */
    if (key->proto == IPPROTO_UDP && key->rport == 0)
        return false;
    if (key->family == AF_INET) {
        if (*(const __u32 *)key->laddr != sk->__sk_common.skc_rcv_saddr ||
            *(const __u32 *)key->raddr != sk->__sk_common.skc_daddr)
            return false;
    } else {
        const __u64 *l = (const __u64 *)sk->__sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8;
        const __u64 *r = (const __u64 *)sk->__sk_common.skc_v6_daddr.in6_u.u6_addr8;
        const __u64 *kl = (const __u64 *)key->laddr, *kr = (const __u64 *)key->raddr;
        if (kl[0] != l[0] || kl[1] != l[1] || kr[0] != r[0] || kr[1] != r[1])
            return false;
    }
    struct task_struct *task = bpf_get_current_task_btf();
    const __u64 *comm = (const __u64 *)task->comm, *kc = (const __u64 *)key->comm;
    if (kc[0] != comm[0] || kc[1] != comm[1])
        return false;
    return key->ppid == (__u32)task->real_parent->tgid &&
           key->start_ns == wl_task_start_boottime_btf(task->group_leader);
}

/* Counts into slot s of `counts` if the socket's cached word c still names it (epoch) and its key
 * is this event's. The caller holds the generation's in-flight count: a slot whose epoch held
 * here is released only after that generation was drained (sockprobe.c free_idle_slots). */
static __always_inline bool fast_add(void *counts, __u64 c, struct sock *sk, __u64 bytes, bool tx)
{
    __u32 s = (__u32)(c >> 32) - 1;
    __u32 *ep = bpf_map_lookup_elem(&slot_epoch, &s);
    if (!ep || *(volatile __u32 *)ep != (__u32)c)
        return false;
    struct flow_key *key = bpf_map_lookup_elem(&slot_keys, &s);
    if (!key || !key_is_current(key, sk))
        return false;
    struct flow_val *v = bpf_map_lookup_elem(counts, &s);
    if (!v)
        return false;
    if (tx) {
        __sync_fetch_and_add(&v->tx_bytes, bytes);
        __sync_fetch_and_add(&v->tx_calls, 1);
    } else {
        __sync_fetch_and_add(&v->rx_bytes, bytes);
        __sync_fetch_and_add(&v->rx_calls, 1);
    }
    return true;
}

/* One event through the socket's cached slot, in the current generation (as account()). Returns
 * false on a miss (nothing counted; the caller takes the full path). */
static __always_inline bool fast_account(struct sock *sk, __u64 bytes, bool tx)
{
    __u64 *cache = bpf_sk_storage_get(&sk_slots, sk, NULL, 0);
    if (!cache)
        return false;
    __u64 c = *(volatile __u64 *)cache;
    if (!c)
        return false;
    __u32 g = gen & 1;
    for (int attempt = 0; attempt < 3; attempt++) {
        __u64 *inf = bpf_map_lookup_elem(&inflight, &g);
        if (!inf)
            return false;
        __sync_fetch_and_add(inf, 1);
        __u32 now = *(volatile __u32 *)&gen & 1;
        if (now == g) {
            bool hit =
                g ? fast_add(&counts1, c, sk, bytes, tx) : fast_add(&counts0, c, sk, bytes, tx);
            __sync_fetch_and_add(inf, -1);
            return hit;
        }
        __sync_fetch_and_add(inf, -1);
        g = now;
    }
    bump_drop(WL_DROP_RACE);
    return true;
}

static __always_inline bool addr_is_loopback(__u8 family, const __u8 *a)
{
    if (family == AF_INET)
        return a[0] == 127;
    /* ::1 and ::ffff:127.0.0.0/104 */
    __u64 hi = 0, lo = 0;
    __builtin_memcpy(&hi, a, 8);
    __builtin_memcpy(&lo, a + 8, 8);
    if (hi == 0 && lo == bpf_cpu_to_be64(1))
        return true;
    return hi == 0 && a[8] == 0 && a[9] == 0 && a[10] == 0xff && a[11] == 0xff && a[12] == 127;
}

static __always_inline bool port_excluded(__u16 port)
{
    for (__u32 i = 0; i < WL_MAX_EXCL_PORTS; i++) {
        if (i >= n_excl_ports)
            break;
        if (excl_ports[i] == port)
            return true;
    }
    return false;
}

/* Fills the socket and task parts of k. Returns false for sockets we never count (not TCP/UDP
 * over IPv4/IPv6, another namespace or cgroup subtree). With `btf` (tp_btf and fentry: sk is a
 * BTF-typed pointer) fields are plain loads; without (kprobe: a raw pointer) every field is a
 * bpf_probe_read_kernel call, several times slower per event. `btf` is a constant at every call
 * site, so each program keeps only one of the two paths. */
static __always_inline bool key_from_sock(struct flow_key *k, struct sock *sk, bool btf)
{
    __u16 family, proto;
    __u32 netns;
    if (btf) {
        family = sk->__sk_common.skc_family;
        if (family != AF_INET && family != AF_INET6)
            return false;
        proto = (__u16)BPF_CORE_READ_BITFIELD(sk, sk_protocol);
        netns = sk->__sk_common.skc_net.net->ns.inum;
    } else {
        family = BPF_CORE_READ(sk, __sk_common.skc_family);
        if (family != AF_INET && family != AF_INET6)
            return false;
        proto = wl_sock_protocol(sk);
        netns = wl_sock_netns(sk);
    }
    if (proto != IPPROTO_TCP && proto != IPPROTO_UDP)
        return false;
    if (filter_netns && netns != filter_netns)
        return false;
    if (filter_cgroup_id &&
        bpf_get_current_ancestor_cgroup_id(filter_cgroup_level) != filter_cgroup_id)
        return false;

    __builtin_memset(k, 0, sizeof(*k));
    k->family = family;
    k->proto = proto;
    k->netns = netns;
    __u64 id = bpf_get_current_pid_tgid();
    k->tgid = id >> 32;
    k->uid = (__u32)bpf_get_current_uid_gid();
    k->cgroup_id = bpf_get_current_cgroup_id();
    if (btf) {
        struct task_struct *task = bpf_get_current_task_btf();
        k->lport = sk->__sk_common.skc_num;
        k->rport = bpf_ntohs(sk->__sk_common.skc_dport);
        if (family == AF_INET) {
            __u32 s = sk->__sk_common.skc_rcv_saddr, d = sk->__sk_common.skc_daddr;
            __builtin_memcpy(k->laddr, &s, 4);
            __builtin_memcpy(k->raddr, &d, 4);
        } else {
            __builtin_memcpy(k->laddr, sk->__sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8, 16);
            __builtin_memcpy(k->raddr, sk->__sk_common.skc_v6_daddr.in6_u.u6_addr8, 16);
        }
        k->start_ns = wl_task_start_boottime_btf(task->group_leader);
        k->ppid = task->real_parent->tgid;
        __builtin_memcpy(k->comm, task->comm, sizeof(k->comm));
    } else {
        struct task_struct *task = (struct task_struct *)bpf_get_current_task();
        k->lport = BPF_CORE_READ(sk, __sk_common.skc_num);
        k->rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
        if (family == AF_INET) {
            __u32 s = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
            __u32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);
            __builtin_memcpy(k->laddr, &s, 4);
            __builtin_memcpy(k->raddr, &d, 4);
        } else {
            BPF_CORE_READ_INTO(&k->laddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
            BPF_CORE_READ_INTO(&k->raddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
        }
        k->start_ns = wl_task_start_boottime(BPF_CORE_READ(task, group_leader));
        k->ppid = BPF_CORE_READ(task, real_parent, tgid);
        bpf_get_current_comm(k->comm, sizeof(k->comm));
    }
    return true;
}

static __always_inline void key_set_peer(struct flow_key *k, const struct wl_peer *p)
{
    if (p->family == k->family) {
        __builtin_memcpy(k->raddr, p->addr, 16);
    } else if (k->family == AF_INET6 && p->family == AF_INET) {
        __builtin_memset(k->raddr, 0, 16);
        k->raddr[10] = 0xff;
        k->raddr[11] = 0xff;
        __builtin_memcpy(k->raddr + 12, p->addr, 4);
    } else {
        return;
    }
    k->rport = p->port;
}

/* The filters that need the final tuple: loopback (also a socket talking to its own address) and
 * excluded ports. */
static __always_inline bool key_counted(const struct flow_key *k)
{
    if (addr_is_loopback(k->family, k->raddr) || addr_is_loopback(k->family, k->laddr))
        return false;
    __u64 l0 = 0, l1 = 0, r0 = 0, r1 = 0;
    __builtin_memcpy(&l0, k->laddr, 8);
    __builtin_memcpy(&l1, k->laddr + 8, 8);
    __builtin_memcpy(&r0, k->raddr, 8);
    __builtin_memcpy(&r1, k->raddr + 8, 8);
    if (l0 == r0 && l1 == r1 && (r0 | r1))
        return false;
    if (n_excl_ports && (port_excluded(k->lport) || port_excluded(k->rport)))
        return false;
    return true;
}

/* Reads a struct sockaddr_in / sockaddr_in6 at ptr (user or kernel memory). */
static __always_inline int peer_read(struct wl_peer *p, const void *ptr, bool user)
{
    struct sockaddr_in6 sa = {};
    long err;
    if (!ptr)
        return -1;
    err = user ? bpf_probe_read_user(&sa, sizeof(struct sockaddr_in), ptr)
               : bpf_probe_read_kernel(&sa, sizeof(struct sockaddr_in), ptr);
    if (err)
        return -1;
    __builtin_memset(p, 0, sizeof(*p));
    if (sa.sin6_family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&sa;
        p->family = AF_INET;
        p->port = bpf_ntohs(sin->sin_port);
        __builtin_memcpy(p->addr, &sin->sin_addr.s_addr, 4);
        return 0;
    }
    if (sa.sin6_family != AF_INET6)
        return -1;
    err = user ? bpf_probe_read_user(&sa, sizeof(sa), ptr)
               : bpf_probe_read_kernel(&sa, sizeof(sa), ptr);
    if (err)
        return -1;
    p->family = AF_INET6;
    p->port = bpf_ntohs(sa.sin6_port);
    __builtin_memcpy(p->addr, sa.sin6_addr.in6_u.u6_addr8, 16);
    return 0;
}

/* The one handler every attach mode calls. ret is the syscall-level byte count (negative on
 * error); peer, when not NULL, is the destination/source from the message (UDP). With `defer`
 * (tp_btf mode), an unconnected UDP receive whose address only reaches user memory later waits
 * in the thread's stash until sys_exit. */
static __always_inline int handle(struct sock *sk, long ret, int flags, bool tx,
                                  const struct wl_peer *peer, bool defer, bool btf)
{
    struct flow_key k;
    if (ret <= 0 || (!tx && (flags & MSG_PEEK)) || !sk)
        return 0;
    if (btf && !peer && fast_account(sk, ret, tx))
        return 0;
    if (!key_from_sock(&k, sk, btf))
        return 0;
    if (k.proto == IPPROTO_TCP && k.lport == 0) {
        /* reading what arrived before the connection closed: the port is gone from sk */
        __u64 skp = (__u64)sk;
        struct sock_info *si = bpf_map_lookup_elem(&socks, &skp);
        if (si)
            k.lport = si->lport;
    }
    if (k.proto == IPPROTO_UDP) {
        if (peer) {
            key_set_peer(&k, peer);
        } else if (defer && !tx && k.rport == 0) {
            __u64 tid = bpf_get_current_pid_tgid();
            struct stash *st = bpf_map_lookup_elem(&stashes, &tid);
            if (st && (st->kind == STASH_RECV_ADDR || st->kind == STASH_RECV_MSG)) {
                if (st->pending && !key_equal(&st->key, &k)) {
                    if (key_counted(&st->key))
                        account(&st->key, st->bytes, st->calls, false, 0, NULL);
                    st->bytes = st->calls = 0;
                }
                st->key = k;
                st->bytes += ret;
                st->calls += 1;
                st->pending = 1;
                return 0;
            }
        }
    }
    if (!key_counted(&k))
        return 0;
    /* the socket's cached slot: BTF-typed sk only, and not for a peer taken from the message
     * (an unconnected UDP socket's key changes with every peer) */
    __u64 *cache = NULL;
    if (btf && !peer)
        cache = bpf_sk_storage_get(&sk_slots, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
    account(&k, ret, 1, tx, k.proto == IPPROTO_TCP ? (__u64)sk : 0, cache);
    return 0;
}

/* ---- tp_btf mode: sock:sock_send_length / sock:sock_recv_length (+ syscall tracepoints for
 * the addresses of unconnected UDP) ---- */

static __always_inline const struct wl_peer *stash_send_peer(struct wl_peer *buf)
{
    __u64 tid = bpf_get_current_pid_tgid();
    struct stash *st = bpf_map_lookup_elem(&stashes, &tid);
    if (!st)
        return NULL;
    if (st->kind == STASH_SEND_PEER)
        return &st->peer;
    if (st->kind == STASH_SEND_VEC) {
        /* struct mmsghdr { struct user_msghdr msg_hdr; unsigned int msg_len; } */
        const struct mmsghdr *vec = (const struct mmsghdr *)st->uptr;
        void *name = NULL;
        __u32 i = st->idx++;
        if (bpf_probe_read_user(&name, sizeof(name), &vec[i].msg_hdr.msg_name) == 0 &&
            peer_read(buf, name, true) == 0)
            return buf;
    }
    return NULL;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(tpb_send, struct sock *sk, int ret, int flags)
{
    struct wl_peer buf;
    const struct wl_peer *peer = NULL;
    /* a plain (BTF) load of the protocol, not a probed read: a helper call per event */
    if (ret > 0 && sk && (__u16)BPF_CORE_READ_BITFIELD(sk, sk_protocol) == IPPROTO_UDP)
        peer = stash_send_peer(&buf);
    return handle(sk, ret, flags, true, peer, false, true);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(tpb_recv, struct sock *sk, int ret, int flags)
{
    return handle(sk, ret, flags, false, NULL, true, true);
}

static __always_inline void stash_put(__u32 kind, __u64 uptr, const struct wl_peer *peer)
{
    __u64 tid = bpf_get_current_pid_tgid();
    struct stash st = {};
    st.kind = kind;
    st.uptr = uptr;
    if (peer)
        st.peer = *peer;
    bpf_map_update_elem(&stashes, &tid, &st, BPF_ANY);
}

static __always_inline void stash_drop(void)
{
    __u64 tid = bpf_get_current_pid_tgid();
    bpf_map_delete_elem(&stashes, &tid);
}

SEC("tracepoint/syscalls/sys_enter_sendto")
int tpb_sys_sendto(struct trace_event_raw_sys_enter *ctx)
{
    struct wl_peer p;
    if (ctx->args[4] && peer_read(&p, (const void *)ctx->args[4], true) == 0)
        stash_put(STASH_SEND_PEER, 0, &p);
    return 0;
}

SEC("tracepoint/syscalls/sys_enter_sendmsg")
int tpb_sys_sendmsg(struct trace_event_raw_sys_enter *ctx)
{
    const struct user_msghdr *m = (const struct user_msghdr *)ctx->args[1];
    void *name = NULL;
    struct wl_peer p;
    if (m && bpf_probe_read_user(&name, sizeof(name), &m->msg_name) == 0 && name &&
        peer_read(&p, name, true) == 0)
        stash_put(STASH_SEND_PEER, 0, &p);
    return 0;
}

SEC("tracepoint/syscalls/sys_enter_sendmmsg")
int tpb_sys_sendmmsg(struct trace_event_raw_sys_enter *ctx)
{
    if (ctx->args[1])
        stash_put(STASH_SEND_VEC, ctx->args[1], NULL);
    return 0;
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int tpb_sys_x_sendto(void *ctx)
{
    stash_drop();
    return 0;
}

SEC("tracepoint/syscalls/sys_exit_sendmsg")
int tpb_sys_x_sendmsg(void *ctx)
{
    stash_drop();
    return 0;
}

SEC("tracepoint/syscalls/sys_exit_sendmmsg")
int tpb_sys_x_sendmmsg(void *ctx)
{
    stash_drop();
    return 0;
}

SEC("tracepoint/syscalls/sys_enter_recvfrom")
int tpb_sys_recvfrom(struct trace_event_raw_sys_enter *ctx)
{
    if (ctx->args[4])
        stash_put(STASH_RECV_ADDR, ctx->args[4], NULL);
    return 0;
}

SEC("tracepoint/syscalls/sys_enter_recvmsg")
int tpb_sys_recvmsg(struct trace_event_raw_sys_enter *ctx)
{
    if (ctx->args[1])
        stash_put(STASH_RECV_MSG, ctx->args[1], NULL);
    return 0;
}

/* The receive returned: the source address is now in user memory. */
static __always_inline void stash_finish_recv(void)
{
    __u64 tid = bpf_get_current_pid_tgid();
    struct stash *st = bpf_map_lookup_elem(&stashes, &tid);
    if (!st)
        return;
    if (st->pending) {
        const void *addr = (const void *)st->uptr;
        struct wl_peer p;
        if (st->kind == STASH_RECV_MSG) {
            void *name = NULL;
            bpf_probe_read_user(&name, sizeof(name), &((const struct user_msghdr *)addr)->msg_name);
            addr = name;
        }
        if (peer_read(&p, addr, true) == 0)
            key_set_peer(&st->key, &p);
        if (key_counted(&st->key))
            account(&st->key, st->bytes, st->calls, false, 0, NULL);
    }
    bpf_map_delete_elem(&stashes, &tid);
}

SEC("tracepoint/syscalls/sys_exit_recvfrom")
int tpb_sys_x_recvfrom(void *ctx)
{
    stash_finish_recv();
    return 0;
}

SEC("tracepoint/syscalls/sys_exit_recvmsg")
int tpb_sys_x_recvmsg(void *ctx)
{
    stash_finish_recv();
    return 0;
}

/* ---- fentry mode: fexit on the protocol functions (the message is still in reach) ---- */

static __always_inline const struct wl_peer *msg_peer(struct wl_peer *buf, struct msghdr *msg)
{
    void *name = BPF_CORE_READ(msg, msg_name);
    return peer_read(buf, name, false) == 0 ? buf : NULL;
}

SEC("fexit/tcp_sendmsg")
int BPF_PROG(fx_tcp_send, struct sock *sk, struct msghdr *msg, size_t size, int ret)
{
    return handle(sk, ret, 0, true, NULL, false, true);
}

SEC("fexit/tcp_recvmsg")
int BPF_PROG(fx_tcp_recv, struct sock *sk, struct msghdr *msg, size_t len, int flags, int *addr_len,
             int ret)
{
    return handle(sk, ret, flags, false, NULL, false, true);
}

SEC("fexit/udp_sendmsg")
int BPF_PROG(fx_udp_send, struct sock *sk, struct msghdr *msg, size_t len, int ret)
{
    struct wl_peer buf;
    return handle(sk, ret, 0, true, ret > 0 ? msg_peer(&buf, msg) : NULL, false, true);
}

SEC("fexit/udp_recvmsg")
int BPF_PROG(fx_udp_recv, struct sock *sk, struct msghdr *msg, size_t len, int flags, int *addr_len,
             int ret)
{
    struct wl_peer buf;
    return handle(sk, ret, flags, false, ret > 0 ? msg_peer(&buf, msg) : NULL, false, true);
}

SEC("fexit/udpv6_sendmsg")
int BPF_PROG(fx_udp6_send, struct sock *sk, struct msghdr *msg, size_t len, int ret)
{
    struct wl_peer buf;
    return handle(sk, ret, 0, true, ret > 0 ? msg_peer(&buf, msg) : NULL, false, true);
}

SEC("fexit/udpv6_recvmsg")
int BPF_PROG(fx_udp6_recv, struct sock *sk, struct msghdr *msg, size_t len, int flags,
             int *addr_len, int ret)
{
    struct wl_peer buf;
    return handle(sk, ret, flags, false, ret > 0 ? msg_peer(&buf, msg) : NULL, false, true);
}

/* ---- kprobe mode: kprobe stores the arguments, kretprobe counts ---- */

static __always_inline int kargs_put(struct sock *sk, struct msghdr *msg, int flags)
{
    __u64 tid = bpf_get_current_pid_tgid();
    struct kargs a = {.sk = (__u64)sk, .msg = (__u64)msg, .flags = flags};
    bpf_map_update_elem(&kargs_by_tid, &tid, &a, BPF_ANY);
    return 0;
}

static __always_inline int kargs_done(long ret, bool tx, bool udp)
{
    __u64 tid = bpf_get_current_pid_tgid();
    struct kargs *a = bpf_map_lookup_elem(&kargs_by_tid, &tid);
    struct wl_peer buf;
    const struct wl_peer *peer = NULL;
    if (!a)
        return 0;
    struct kargs args = *a;
    bpf_map_delete_elem(&kargs_by_tid, &tid);
    if (udp && ret > 0)
        peer = msg_peer(&buf, (struct msghdr *)args.msg);
    return handle((struct sock *)args.sk, ret, args.flags, tx, peer, false, false);
}

SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(kp_tcp_send, struct sock *sk, struct msghdr *msg)
{
    return kargs_put(sk, msg, 0);
}

SEC("kretprobe/tcp_sendmsg")
int BPF_KRETPROBE(kr_tcp_send, int ret)
{
    return kargs_done(ret, true, false);
}

SEC("kprobe/tcp_recvmsg")
int BPF_KPROBE(kp_tcp_recv, struct sock *sk, struct msghdr *msg, size_t len, int flags)
{
    return kargs_put(sk, msg, flags);
}

SEC("kretprobe/tcp_recvmsg")
int BPF_KRETPROBE(kr_tcp_recv, int ret)
{
    return kargs_done(ret, false, false);
}

SEC("kprobe/udp_sendmsg")
int BPF_KPROBE(kp_udp_send, struct sock *sk, struct msghdr *msg)
{
    return kargs_put(sk, msg, 0);
}

SEC("kretprobe/udp_sendmsg")
int BPF_KRETPROBE(kr_udp_send, int ret)
{
    return kargs_done(ret, true, true);
}

SEC("kprobe/udp_recvmsg")
int BPF_KPROBE(kp_udp_recv, struct sock *sk, struct msghdr *msg, size_t len, int flags)
{
    return kargs_put(sk, msg, flags);
}

SEC("kretprobe/udp_recvmsg")
int BPF_KRETPROBE(kr_udp_recv, int ret)
{
    return kargs_done(ret, false, true);
}

SEC("kprobe/udpv6_sendmsg")
int BPF_KPROBE(kp_udp6_send, struct sock *sk, struct msghdr *msg)
{
    return kargs_put(sk, msg, 0);
}

SEC("kretprobe/udpv6_sendmsg")
int BPF_KRETPROBE(kr_udp6_send, int ret)
{
    return kargs_done(ret, true, true);
}

SEC("kprobe/udpv6_recvmsg")
int BPF_KPROBE(kp_udp6_recv, struct sock *sk, struct msghdr *msg, size_t len, int flags)
{
    return kargs_put(sk, msg, flags);
}

SEC("kretprobe/udpv6_recvmsg")
int BPF_KRETPROBE(kr_udp6_recv, int ret)
{
    return kargs_done(ret, false, true);
}

/* ---- every mode: connection roles ---- */

SEC("tracepoint/sock/inet_sock_set_state")
int all_sock_state(struct trace_event_raw_inet_sock_set_state *ctx)
{
    if (ctx->protocol != IPPROTO_TCP)
        return 0;
    __u64 skp = (__u64)ctx->skaddr;
    struct sock_info si = {.lport = ctx->sport};
    if (ctx->newstate == TCP_SYN_SENT) {
        si.role = WL_ROLE_CLIENT;
    } else if (ctx->newstate == TCP_SYN_RECV ||
               (ctx->oldstate == TCP_SYN_RECV && ctx->newstate == TCP_ESTABLISHED)) {
        si.role = WL_ROLE_SERVER;
    } else if (ctx->newstate == TCP_CLOSE) {
        /* keep the role; record the port of a connection older than the agent */
        struct sock_info *old = bpf_map_lookup_elem(&socks, &skp);
        if (old) {
            if (ctx->sport)
                old->lport = ctx->sport;
            return 0;
        }
        if (!ctx->sport || ctx->oldstate == TCP_LISTEN || ctx->oldstate == TCP_SYN_SENT)
            return 0;
    } else {
        return 0;
    }
    bpf_map_update_elem(&socks, &skp, &si, BPF_ANY);
    return 0;
}
