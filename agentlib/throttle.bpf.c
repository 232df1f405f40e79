/* The throttle: a token bucket per class and direction on every socket's egress and ingress
 * (cgroup_skb/egress and /ingress on the cgroup v2 root). A socket belongs to a class through the
 * process that created it (or first wrote to it): socket-local storage holds that tgid, the agent
 * maps tgids to classes. A packet within the class's credit passes; a TCP packet within `queue`
 * beyond it passes with a congestion signal (TCP enters CWR); any other packet is refused with a
 * congestion signal, which TCP takes as "not sent, keep it" (it resends later, so TCP loses
 * nothing) and UDP as a silent drop. Dry-run classes run the same bucket, count, and pass
 * everything. The sender side of downloads: a socket no rule's process owns may still be one of
 * this host's connections towards a throttled socket elsewhere (thr_peers, 4-tuple -> class);
 * egress and pacing limit it in that class. Buckets count a packet's wire length (wire_len). */
#include <vmlinux.h>
#include <bpf/bpf_endian.h>
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
/* Entries in thr_peers (0: no lookup at all), and its generation (sockets re-read their peer
 * class when it changes). */
volatile __u32 n_peers = 0;
volatile __u32 peer_gen = 1;

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
    __uint(type, BPF_MAP_TYPE_LPM_TRIE);
    __uint(map_flags, BPF_F_NO_PREALLOC);
    __uint(max_entries, WL_THR_MAX_SCOPE);
    __type(key, struct thr_scope_key);
    __type(value, __u8);
} thr_scope SEC(".maps");

struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, WL_THR_MAX_CLASSES);
    __type(key, __u32);
    __type(value, struct thr_counts);
} thr_counts SEC(".maps");

/* Sender side: this host's connections towards throttled sockets elsewhere -> class. */
struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, WL_THR_MAX_PEERS);
    __type(key, struct thr_peer_key);
    __type(value, __s32);
} thr_peers SEC(".maps");

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

/* Sockets created before the rules (or the agent): tagged by the first process that writes to
 * or reads from them while rules are active (a download's socket may never write again). */
static __always_inline void tag(struct sock *sk)
{
    if (!n_active || !sk)
        return;
    struct thr_sk *st = bpf_sk_storage_get(&thr_socks, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
    if (st && !st->tgid) {
        __u32 tgid = bpf_get_current_pid_tgid() >> 32;
        st->tgid = tgid;
        st->gen = 0;
        st->cls = -1;
        announce(tgid);
    }
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(thr_send, struct sock *sk, int ret, int flags)
{
    tag(sk);
    return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(thr_recv, struct sock *sk, int ret, int flags)
{
    tag(sk);
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

#define AF_INET_  2
#define AF_INET6_ 10

static __always_inline __s32 peer_cached(const struct thr_sk *st)
{
    __s32 cls = st->peer_cls;
    return cls >= 0 && cls < WL_THR_MAX_CLASSES ? cls : -1;
}

/* Looks the connection's key up in thr_peers and caches the answer in st for generation g. */
static __always_inline __s32 peer_store(struct thr_sk *st, __u32 g, const struct thr_peer_key *key)
{
    __s32 *c = key ? bpf_map_lookup_elem(&thr_peers, key) : NULL;
    st->peer_cls = c ? *c : -1;
    st->peer_gen = g;
    return peer_cached(st);
}

/* addr (16 bytes) = ::ffff:a */
static __always_inline void v4_mapped(__u8 *addr, __u32 a)
{
    addr[10] = 0xff;
    addr[11] = 0xff;
    __builtin_memcpy(&addr[12], &a, 4);
}

/* The peer class of a full socket seen by cgroup_skb (src_port host order, dst_port network). */
static __always_inline __s32 peer_class_sk(struct thr_sk *st, struct bpf_sock *sk)
{
    if (!n_peers)
        return -1;
    __u32 g = peer_gen;
    if (st->peer_gen == g)
        return peer_cached(st);
    struct thr_peer_key key = {};
    __u32 fam = sk->family;
    if (fam == AF_INET_) {
        v4_mapped(key.laddr, sk->src_ip4);
        v4_mapped(key.raddr, sk->dst_ip4);
    } else if (fam == AF_INET6_) {
        __u32 l[4] = {sk->src_ip6[0], sk->src_ip6[1], sk->src_ip6[2], sk->src_ip6[3]};
        __u32 r[4] = {sk->dst_ip6[0], sk->dst_ip6[1], sk->dst_ip6[2], sk->dst_ip6[3]};
        __builtin_memcpy(key.laddr, l, 16);
        __builtin_memcpy(key.raddr, r, 16);
    } else {
        return peer_store(st, g, NULL);
    }
    key.lport = (__u16)sk->src_port;
    key.rport = bpf_ntohs(sk->dst_port);
    return peer_store(st, g, &key);
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

#define ETH_P_IP_   0x0800
#define ETH_P_IPV6_ 0x86DD

/* Whether the far end of skb (egress: its destination, ingress: its source) is in class k's
 * scope. The packet starts at its IP header. */
static __always_inline int in_scope(struct __sk_buff *skb, __u32 k, int ingress)
{
    struct thr_scope_key key = {.prefixlen = 32 + 128, .cls = k};
    if (skb->protocol == bpf_htons(ETH_P_IP_)) {
        key.addr[10] = 0xff;
        key.addr[11] = 0xff;
        if (bpf_skb_load_bytes(skb, ingress ? 12 : 16, &key.addr[12], 4) != 0)
            return 0;
    } else if (skb->protocol == bpf_htons(ETH_P_IPV6_)) {
        if (bpf_skb_load_bytes(skb, ingress ? 8 : 24, key.addr, 16) != 0)
            return 0;
    } else {
        return 0;
    }
    return bpf_map_lookup_elem(&thr_scope, &key) != NULL;
}

/* The class of skb's socket and its bucket; -1 when the packet is not limited (no class, or
 * outside the class's scope). */
static __always_inline int classify(struct __sk_buff *skb, struct thr_sk **stp,
                                    struct thr_cfg **cfgp, struct thr_counts **np, __u32 *kp,
                                    int ingress)
{
    struct bpf_sock *sk = skb->sk;
    if (!sk)
        return -1;
    sk = bpf_sk_fullsock(sk);
    if (!sk)
        return -1;
    /* egress with peers: a socket no process of a rule wrote to may still be a peer socket */
    __u64 create = !ingress && n_peers ? BPF_SK_STORAGE_GET_F_CREATE : 0;
    struct thr_sk *st = bpf_sk_storage_get(&thr_socks, sk, 0, create);
    if (!st)
        return -1;
    __s32 cls = class_of(st);
    if (cls < 0 && !ingress)
        cls = peer_class_sk(st, sk);
    if (cls < 0)
        return -1;
    __u32 k = (__u32)cls;
    struct thr_cfg *cfg = bpf_map_lookup_elem(&thr_cfg, &k);
    struct thr_counts *n = bpf_map_lookup_elem(&thr_counts, &k);
    if (!cfg || !n || cfg->mode == WL_THR_MODE_OFF)
        return -1;
    if (cfg->scoped && !in_scope(skb, k, ingress))
        return -1;
    *stp = st;
    *cfgp = cfg;
    *np = n;
    *kp = k;
    return sk->protocol == IPPROTO_TCP_;
}

/* What skb puts on the wire at the IP layer: a GSO/GRO packet carries one IP and TCP header for
 * gso_segs segments, each of which has its own on the wire (3-4% of the payload at MTU 1500). */
static __always_inline __u64 wire_len(struct __sk_buff *skb, int tcp)
{
    __u64 len = skb->len;
    __u32 segs = skb->gso_segs;
    if (!tcp || segs <= 1)
        return len;
    __u8 b[1];
    __u32 ip = 40;
    if (skb->protocol == bpf_htons(ETH_P_IP_)) {
        if (bpf_skb_load_bytes(skb, 0, b, 1) != 0)
            return len;
        ip = (b[0] & 0xf) * 4;
    }
    if (ip < 20 || ip > 60 || bpf_skb_load_bytes(skb, ip + 12, b, 1) != 0)
        return len;
    __u32 hdr = ip + (b[0] >> 4) * 4;
    if (segs > 0xffff)
        segs = 0xffff;
    return len + (__u64)(segs - 1) * hdr;
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
    int tcp = classify(skb, &st, &cfg, &n, &k, 0);
    if (tcp < 0)
        return V_PASS;
    struct thr_state *s = bpf_map_lookup_elem(&thr_state, &k);
    if (!s)
        return V_PASS;
    __u64 len = wire_len(skb, tcp);
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
    int tcp = classify(skb, &st, &cfg, &n, &k, 1);
    if (tcp < 0)
        return V_PASS;
    struct thr_state *s = bpf_map_lookup_elem(&thr_state_in, &k);
    if (!s)
        return V_PASS;
    __u64 len = wire_len(skb, tcp);
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

/* Whether a TCP socket's peer is in class k's scope (in_scope for a connection). */
static __always_inline int sock_in_scope(struct bpf_sock_ops *skops, __u32 k)
{
    struct thr_scope_key key = {.prefixlen = 32 + 128, .cls = k};
    if (skops->family == AF_INET_) {
        __u32 a = skops->remote_ip4;
        key.addr[10] = 0xff;
        key.addr[11] = 0xff;
        __builtin_memcpy(&key.addr[12], &a, 4);
    } else if (skops->family == AF_INET6_) {
        __u32 w[4] = {skops->remote_ip6[0], skops->remote_ip6[1], skops->remote_ip6[2],
                      skops->remote_ip6[3]};
        __builtin_memcpy(key.addr, w, 16);
    } else {
        return 0;
    }
    return bpf_map_lookup_elem(&thr_scope, &key) != NULL;
}

/* The peer class of a TCP connection seen by sock_ops (local_port host order, remote_port
 * network order in the upper 16 bits). */
static __always_inline __s32 peer_class_ops(struct thr_sk *st, struct bpf_sock_ops *skops)
{
    if (!n_peers)
        return -1;
    __u32 g = peer_gen;
    if (st->peer_gen == g)
        return peer_cached(st);
    struct thr_peer_key key = {};
    __u32 fam = skops->family;
    if (fam == AF_INET_) {
        v4_mapped(key.laddr, skops->local_ip4);
        v4_mapped(key.raddr, skops->remote_ip4);
    } else if (fam == AF_INET6_) {
        __u32 l[4] = {skops->local_ip6[0], skops->local_ip6[1], skops->local_ip6[2],
                      skops->local_ip6[3]};
        __u32 r[4] = {skops->remote_ip6[0], skops->remote_ip6[1], skops->remote_ip6[2],
                      skops->remote_ip6[3]};
        __builtin_memcpy(key.laddr, l, 16);
        __builtin_memcpy(key.raddr, r, 16);
    } else {
        return peer_store(st, g, NULL);
    }
    key.lport = (__u16)skops->local_port;
    key.rport = (__u16)(bpf_ntohl(skops->remote_port) & 0xffff);
    return peer_store(st, g, &key);
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
    if (cls < 0 && n_active)
        cls = peer_class_ops(st, skops);
    if (cls >= 0) {
        __u32 k = (__u32)cls;
        struct thr_cfg *cfg = bpf_map_lookup_elem(&thr_cfg, &k);
        struct thr_state *s = bpf_map_lookup_elem(&thr_state, &k);
        if (cfg && s && cfg->mode == WL_THR_MODE_ENFORCE &&
            (!cfg->scoped || sock_in_scope(skops, k))) {
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

/* Downloads: the receive window. Run by the agent (throttle_probe_clamp) over the TCP sockets of
 * its network namespace, twice: pass 0 counts each enforced class's sockets that received at
 * least CLAMP_ACTIVE bytes since the last run, pass 1 clamps every established socket of the
 * class (TCP_WINDOW_CLAMP) to its share of the rate times its RTT, at least CLAMP_MIN_MSS
 * segments, so the remote sender is held by flow control instead of losing packets at our
 * ingress policer. A socket that left its class (rule gone, process moved) gets its old clamp
 * back. Both passes leave the counts in clamp_active / clamped for the agent. */
#define SOL_TCP_          6
#define TCP_WINDOW_CLAMP_ 10
#define TCP_ESTABLISHED_  1
#define CLAMP_ACTIVE      (16u * 1024u)
#define CLAMP_MIN_MSS     4

volatile __u32 clamp_pass = 0;
__u32 clamp_active[WL_THR_MAX_CLASSES] = {};
__u32 clamped = 0; /* sockets holding a throttle clamp after the last pass 1 */

static __always_inline int sk_in_scope(struct sock *sk, __u32 k)
{
    struct thr_scope_key key = {.prefixlen = 32 + 128, .cls = k};
    if (sk->__sk_common.skc_family == AF_INET_) {
        __u32 a = sk->__sk_common.skc_daddr;
        key.addr[10] = 0xff;
        key.addr[11] = 0xff;
        __builtin_memcpy(&key.addr[12], &a, 4);
    } else if (sk->__sk_common.skc_family == AF_INET6_) {
        struct in6_addr a = sk->__sk_common.skc_v6_daddr;
        __builtin_memcpy(key.addr, &a, 16);
    } else {
        return 0;
    }
    return bpf_map_lookup_elem(&thr_scope, &key) != NULL;
}

/* The enforced class of a socket whose far end is in its scope, or -1. */
static __always_inline __s32 clamp_class(struct thr_sk *st, struct sock *sk, struct thr_cfg **cfgp)
{
    __s32 cls = n_active ? class_of(st) : -1;
    if (cls < 0)
        return -1;
    __u32 k = (__u32)cls;
    struct thr_cfg *cfg = bpf_map_lookup_elem(&thr_cfg, &k);
    if (!cfg || cfg->mode != WL_THR_MODE_ENFORCE || (cfg->scoped && !sk_in_scope(sk, k)))
        return -1;
    *cfgp = cfg;
    return cls;
}

SEC("iter/tcp")
int thr_clamp(struct bpf_iter__tcp *ctx)
{
    struct sock_common *skc = ctx->sk_common;
    if (!skc)
        return 0;
    struct tcp_sock *tp = bpf_skc_to_tcp_sock(skc);
    if (!tp)
        return 0;
    struct sock *sk = &tp->inet_conn.icsk_inet.sk;
    if (sk->__sk_common.skc_state != TCP_ESTABLISHED_)
        return 0;
    struct thr_sk *st = bpf_sk_storage_get(&thr_socks, sk, 0, 0);
    if (!st)
        return 0;
    struct thr_cfg *cfg = NULL;
    __s32 cls = clamp_class(st, sk, &cfg);
    __u64 rcvd = tp->bytes_received;
    __u32 idx = (__u32)cls;
    asm volatile("" : "+r"(idx)); /* keep the mask: the verifier needs the bound */
    idx &= WL_THR_MAX_CLASSES - 1;
    if (clamp_pass == 0) {
        if (cls >= 0 && rcvd - st->rcvd >= CLAMP_ACTIVE)
            __sync_fetch_and_add(&clamp_active[idx], 1);
        st->rcvd = rcvd;
        return 0;
    }
    int v = 0;
    if (cls >= 0 && cfg) {
        __u32 a = clamp_active[idx];
        __u64 per = cfg->rate_Bps / (a ? a : 1);
        /* srtt (from what this socket sent: the handshake for a pure receiver) or the
         * receiver's own estimate, whichever is larger (both in us << 3) */
        __u64 rtt = tp->srtt_us >> 3, rrtt = tp->rcv_rtt_est.rtt_us >> 3;
        if (rrtt > rtt)
            rtt = rrtt;
        __u64 want = per * rtt / 1000000ULL;
        __u64 floor = (__u64)CLAMP_MIN_MSS * (tp->advmss ? tp->advmss : 1460);
        if (want < floor)
            want = floor;
        if (want > 0x3fffffffULL)
            want = 0x3fffffffULL;
        if (!st->clamp)
            st->clamp_orig = tp->window_clamp;
        /* re-applied every run: receive autotuning may have raised window_clamp again */
        if (st->clamp != want || tp->window_clamp != want) {
            v = (int)want;
            if (bpf_setsockopt(tp, SOL_TCP_, TCP_WINDOW_CLAMP_, &v, sizeof(v)) == 0)
                st->clamp = (__u32)want;
        }
    } else if (st->clamp) {
        v = st->clamp_orig > st->clamp ? (int)st->clamp_orig : 65535 << 14;
        if (bpf_setsockopt(tp, SOL_TCP_, TCP_WINDOW_CLAMP_, &v, sizeof(v)) == 0)
            st->clamp = 0;
    }
    if (st->clamp)
        __sync_fetch_and_add(&clamped, 1);
    return 0;
}
