/* The throttle: a token bucket per class and direction on every socket's egress and ingress
 * (cgroup_skb/egress and /ingress on the cgroup v2 root). A socket belongs to a class through the
 * process that created it (or first wrote to it): socket-local storage holds that tgid, the agent
 * maps tgids to classes. A packet within the class's credit passes; a TCP packet within `queue`
 * beyond it passes with a congestion signal (TCP enters CWR); any other packet is refused with a
 * congestion signal, which TCP takes as "not sent, keep it" (it resends later, so TCP loses
 * nothing) and UDP as a silent drop. Dry-run classes run the same bucket, count, and pass
 * everything. */
#include <vmlinux.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "throttle.h"

#define IPPROTO_TCP_        6
#define NSEC                1000000000ULL
#define SOL_SOCKET_         1
#define SO_MAX_PACING_RATE_ 47

/* cgroup_skb egress verdicts */
#define V_DROP        0
#define V_PASS        1
#define V_DROP_NOTIFY 2
#define V_PASS_NOTIFY 3

char LICENSE[] SEC("license") = "GPL";

/* Set by the agent through the mmap'd .bss: classes in use (0: every hook returns at once), and
 * the generation of the tgid -> class map (sockets re-read their class when it changes). */
volatile __u32 n_active = 0;
volatile __u32 class_gen = 1;

struct {
    __uint(type, BPF_MAP_TYPE_SK_STORAGE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __type(key, int);
    __type(value, struct thr_sk);
} thr_socks SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, WL_THR_MAX_TGIDS);
    __type(key, __u32);
    __type(value, __s32);
} thr_tgid_class SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, WL_THR_MAX_CLASSES);
    __type(key, __u32);
    __type(value, struct thr_cfg);
} thr_cfg SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, WL_THR_MAX_CLASSES);
    __type(key, __u32);
    __type(value, struct thr_state);
} thr_state SEC(".maps");

/* The ingress bucket of each class (downloads: what the class's sockets receive). */
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, WL_THR_MAX_CLASSES);
    __type(key, __u32);
    __type(value, struct thr_state);
} thr_state_in SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, WL_THR_MAX_CLASSES);
    __type(key, __u32);
    __type(value, struct thr_counts);
} thr_counts SEC(".maps");

/* tgids already announced to the agent (so each new process is announced once). */
struct {
    __uint(type, BPF_MAP_TYPE_LRU_HASH);
    __uint(max_entries, WL_THR_MAX_TGIDS);
    __type(key, __u32);
    __type(value, __u8);
} thr_seen SEC(".maps");

/* New processes that create sockets while rules are active: the agent classifies them. */
struct {
    __uint(type, BPF_MAP_TYPE_RINGBUF);
    __uint(max_entries, 64 * 1024);
} thr_events SEC(".maps");

static __always_inline void announce(__u32 tgid)
{
    __u8 one = 1;
    if (bpf_map_lookup_elem(&thr_seen, &tgid))
        return;
    if (bpf_map_update_elem(&thr_seen, &tgid, &one, BPF_NOEXIST) == 0)
        bpf_ringbuf_output(&thr_events, &tgid, sizeof(tgid), 0);
}

SEC("cgroup/sock_create")
int thr_sock_create(struct bpf_sock *ctx)
{
    if (!n_active)
        return 1;
    __u32 tgid = bpf_get_current_pid_tgid() >> 32;
    struct thr_sk *st = bpf_sk_storage_get(&thr_socks, ctx, 0, BPF_SK_STORAGE_GET_F_CREATE);
    if (st && !st->tgid) {
        st->tgid = tgid;
        st->gen = 0;
        st->cls = -1;
    }
    announce(tgid);
    return 1;
}

/* Sockets created before the rules (or the agent): tagged by their first writer. */
SEC("tp_btf/sock_send_length")
int BPF_PROG(thr_send, struct sock *sk, int ret, int flags)
{
    if (!n_active || !sk)
        return 0;
    struct thr_sk *st = bpf_sk_storage_get(&thr_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
    if (st && !st->tgid) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;
        st->tgid = tgid;
        st->gen = 0;
        st->cls = -1;
        announce(tgid);
    }
    return 0;
}

enum verdict { PASS, MARK, REFUSE };

/* The socket's class (-1: none), looked up again when the agent changed the mapping. */
static __always_inline __s32 class_of(struct thr_sk *st)
{
    __u32 g = class_gen;
    if (st->gen != g) {
        __u32 tgid = st->tgid;
        __s32 *c = bpf_map_lookup_elem(&thr_tgid_class, &tgid);
        st->cls = c ? *c : -1;
        st->gen = g;
    }
    __s32 cls = st->cls;
    return cls >= 0 && cls < WL_THR_MAX_CLASSES ? cls : -1;
}

/* One packet against the bucket; returns the verdict and updates the credit. */
/* queue: the bytes beyond the credit a TCP packet may still pass (with a congestion signal on
 * egress). */
static __always_inline enum verdict bucket(struct thr_state *s, const struct thr_cfg *c, __u64 len,
                                           int tcp, int new_active, __u64 now, __u64 queue)
{
    enum verdict v;
    __u64 epoch = now >> WL_THR_EPOCH_SHIFT;
    bpf_spin_lock(&s->lock);
    if (s->epoch != epoch) {
        s->tcp_prev = s->epoch + 1 == epoch ? s->tcp_now : 0;
        s->tcp_now = 0;
        s->epoch = epoch;
    }
    s->tcp_now += new_active;
    __u64 el = now > s->last_ns ? now - s->last_ns : 0;
    if (el > NSEC)
        el = NSEC;
    /* refill in whole bytes; the time not yet worth a byte stays on the clock */
    __u64 add = el * c->rate_Bps / NSEC;
    __u64 used_ns = c->rate_Bps ? add * NSEC / c->rate_Bps : el;
    s->last_ns = now - (el - used_ns);
    if (now - s->last_ns >= NSEC)
        s->last_ns = now;
    __s64 credit = s->credit + (__s64)add;
    if (credit > (__s64)c->burst)
        credit = (__s64)c->burst;
    if (credit >= 0) {
        v = PASS;
        credit -= (__s64)len;
    } else if (tcp && credit > -(__s64)queue) {
        v = MARK;
        credit -= (__s64)len;
    } else {
        v = REFUSE;
    }
    s->credit = credit;
    bpf_spin_unlock(&s->lock);
    return v;
}

/* The class of skb's socket and its bucket; -1 when the packet is not limited. */
static __always_inline int classify(struct __sk_buff *skb, struct thr_sk **stp,
                                    struct thr_cfg **cfgp, struct thr_counts **np, __u32 *kp)
{
    struct bpf_sock *sk = skb->sk;
    if (!sk)
        return -1;
    sk = bpf_sk_fullsock(sk);
    if (!sk)
        return -1;
    struct thr_sk *st = bpf_sk_storage_get(&thr_socks, sk, 0, 0);
    if (!st)
        return -1;
    __s32 cls = class_of(st);
    if (cls < 0)
        return -1;
    __u32 k = (__u32)cls;
    struct thr_cfg *cfg = bpf_map_lookup_elem(&thr_cfg, &k);
    struct thr_counts *n = bpf_map_lookup_elem(&thr_counts, &k);
    if (!cfg || !n || cfg->mode == WL_THR_MODE_OFF)
        return -1;
    *stp = st;
    *cfgp = cfg;
    *np = n;
    *kp = k;
    return sk->protocol == IPPROTO_TCP_;
}

/* Counts a refused packet: TCP resends it (delayed), anything else is lost (dropped). */
static __always_inline void count_refused(struct thr_counts *n, __u64 len, int tcp)
{
    if (tcp) {
        n->delay_bytes += len;
        n->delay_pkts++;
    } else {
        n->drop_bytes += len;
        n->drop_pkts++;
    }
}

SEC("cgroup_skb/egress")
int thr_egress(struct __sk_buff *skb)
{
    if (!n_active)
        return V_PASS;
    struct thr_sk *st;
    struct thr_cfg *cfg;
    struct thr_counts *n;
    __u32 k;
    int tcp = classify(skb, &st, &cfg, &n, &k);
    if (tcp < 0)
        return V_PASS;
    struct thr_state *s = bpf_map_lookup_elem(&thr_state, &k);
    if (!s)
        return V_PASS;
    __u64 len = skb->len;
    __u64 now = bpf_ktime_get_ns();
    __u32 epoch = (__u32)(now >> WL_THR_EPOCH_SHIFT);
    int new_active = tcp && st->epoch != epoch;
    st->epoch = epoch;
    enum verdict v = bucket(s, cfg, len, tcp, new_active, now, cfg->queue);
    int dry = cfg->mode == WL_THR_MODE_DRY_RUN;
    if (v == REFUSE) {
        count_refused(n, len, tcp);
        if (!dry)
            return V_DROP_NOTIFY;
        n->pass_bytes += len;
        n->pass_pkts++;
        return V_PASS;
    }
    n->pass_bytes += len;
    n->pass_pkts++;
    if (v == MARK) {
        n->mark_pkts++;
        if (!dry)
            return V_PASS_NOTIFY;
    }
    return V_PASS;
}

/* Ingress: what a class's sockets receive (a workflow that downloads: the sender is a process
 * of another owner, often on a host without a rule). A policer: within the credit a packet
 * passes, and in debt up to IN_QUEUE_X times the egress queue too; beyond it is dropped before
 * the socket sees it; a TCP sender takes the loss as congestion, backs off
 * and resends (delayed), anything else is lost (dropped). The
 * dropped bytes did cross the network once: a receiver-side limit lowers the link's load to
 * about the cap plus the resends. */
#define IN_QUEUE_X 3

SEC("cgroup_skb/ingress")
int thr_ingress(struct __sk_buff *skb)
{
    if (!n_active)
        return V_PASS;
    struct thr_sk *st;
    struct thr_cfg *cfg;
    struct thr_counts *n;
    __u32 k;
    int tcp = classify(skb, &st, &cfg, &n, &k);
    if (tcp < 0)
        return V_PASS;
    struct thr_state *s = bpf_map_lookup_elem(&thr_state_in, &k);
    if (!s)
        return V_PASS;
    __u64 len = skb->len;
    /* every protocol may use the queue here: the only signal a receiver can give is a drop */
    enum verdict v = bucket(s, cfg, len, 1, 0, bpf_ktime_get_ns(), IN_QUEUE_X * cfg->queue);
    if (v == REFUSE) {
        count_refused(n, len, tcp);
        if (cfg->mode != WL_THR_MODE_DRY_RUN)
            return V_DROP;
    }
    n->pass_bytes += len;
    n->pass_pkts++;
    return V_PASS;
}

/* TCP pacing: on every RTT sample of a TCP socket, an enforced class's active sockets get
 * rate / active as SO_MAX_PACING_RATE (TCP paces itself with its internal timer when there is
 * no fq); a socket that left its class gets its pacing limit lifted. */
static __always_inline void pace(struct bpf_sock_ops *skops)
{
    struct bpf_sock *sk = skops->sk;
    if (!sk)
        return;
    struct thr_sk *st = bpf_sk_storage_get(&thr_socks, sk, 0, 0);
    if (!st)
        return;
    __u64 want = 0;
    __s32 cls = n_active ? class_of(st) : -1;
    if (cls >= 0) {
        __u32 k = (__u32)cls;
        struct thr_cfg *cfg = bpf_map_lookup_elem(&thr_cfg, &k);
        struct thr_state *s = bpf_map_lookup_elem(&thr_state, &k);
        if (cfg && s && cfg->mode == WL_THR_MODE_ENFORCE) {
            __u32 a = s->tcp_now > s->tcp_prev ? s->tcp_now : s->tcp_prev;
            want = cfg->rate_Bps / (a ? a : 1);
            if (!want)
                want = 1;
        }
    }
    if (want == st->paced)
        return;
    /* the BPF path takes an int: bytes/s up to ~34 Gbit/s, ~0U = no limit */
    __u32 v = want && want < 0xffffffffULL ? (__u32)want : ~0U;
    if (bpf_setsockopt(skops, SOL_SOCKET_, SO_MAX_PACING_RATE_, &v, sizeof(v)) == 0)
        st->paced = want;
}

SEC("sockops")
int thr_sockops(struct bpf_sock_ops *skops)
{
    switch (skops->op) {
    case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
    case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
        /* every connection: a rule may cover it later */
        bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_RTT_CB_FLAG);
        break;
    case BPF_SOCK_OPS_RTT_CB:
        pace(skops);
        break;
    }
    return 1;
}
