/* Kernel struct and signature differences the socket probe must survive, one place, each with the
 * kernel commit that introduced it (CO-RE "___flavor" structs, resolved at load time). */
#ifndef WL_CORE_FIXES_BPF_H
#define WL_CORE_FIXES_BPF_H

#include <vmlinux.h>
#include <bpf/bpf_core_read.h>

/* cf25e24db61c ("time: Rename tsk->real_start_time to ->start_boottime", v5.5). /proc/PID/stat
 * field 22 is derived from this clock, so the agent can match it against the key's start_ns. */
struct task_struct___pre55 {
    u64 real_start_time;
} __attribute__((preserve_access_index));

static __always_inline __u64 wl_task_start_boottime(struct task_struct *task)
{
    if (bpf_core_field_exists(task->start_boottime))
        return BPF_CORE_READ(task, start_boottime);
    return BPF_CORE_READ((struct task_struct___pre55 *)task, real_start_time);
}

/* The same through a BTF-typed pointer (tp_btf, fentry): plain loads, no helper call. */
static __always_inline __u64 wl_task_start_boottime_btf(struct task_struct *task)
{
    if (bpf_core_field_exists(task->start_boottime))
        return task->start_boottime;
    return ((struct task_struct___pre55 *)task)->real_start_time;
}

/* ec095263a965 ("net: remove noblock parameter from recvmsg() entities", v5.19): before it,
 * tcp_recvmsg/udp_recvmsg took (sk, msg, len, nonblock, flags, addr_len). The fentry and kprobe
 * wrappers in socket.bpf.c read `flags` at the v5.19+ position, so those two modes need v5.19 or
 * later (the agent refuses older kernels rather than misreading MSG_PEEK). */

/* bf9765145b85 ("sock: Make sk_protocol a 16-bit value", v5.6): before it sk_protocol was an
 * 8-bit bitfield; the probed bitfield read handles both layouts. */
static __always_inline __u16 wl_sock_protocol(const struct sock *sk)
{
    return (__u16)BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol);
}

/* Network namespaces: sk->__sk_common.skc_net is a possible_net_t whose `net` member
 * exists only with CONFIG_NET_NS; without it every socket is in init_net (netns filter off). */
static __always_inline __u32 wl_sock_netns(const struct sock *sk)
{
    struct net *net = BPF_CORE_READ(sk, __sk_common.skc_net.net);
    if (!net)
        return 0;
    return BPF_CORE_READ(net, ns.inum);
}

/* Role of a TCP connection the state tracepoint never saw start (older than the agent): an
 * accepted socket shares its port's bind bucket with the listener, a connected one does not.
 * Since the bhash2 rework (v6.8-era kernels) sockets hang off inet_bind2_bucket.owners by
 * skc_bind_node and each inet_bind_bucket lists its bind2 buckets in bhash2; older kernels link
 * owners from the inet_bind_bucket itself, and there we return 0 (unknown) and let the agent
 * decide from the listening sockets in /proc. Returns WL_ROLE_SERVER, WL_ROLE_CLIENT or 0. */
static __always_inline __u32 wl_tcp_role_from_bind_bucket(struct sock *sk)
{
    struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
    struct inet_bind_bucket *tb = BPF_CORE_READ(icsk, icsk_bind_hash);
    if (!tb || !bpf_core_field_exists(tb->bhash2))
        return 0;
    struct hlist_node *b2 = BPF_CORE_READ(tb, bhash2.first);
    for (int i = 0; i < 8 && b2; i++) {
        struct inet_bind2_bucket *tb2 =
            (void *)b2 - bpf_core_field_offset(struct inet_bind2_bucket, bhash_node);
        struct hlist_node *o = BPF_CORE_READ(tb2, owners.first);
        for (int j = 0; j < 16 && o; j++) {
            struct sock_common *skc =
                (void *)o - bpf_core_field_offset(struct sock_common, skc_bind_node);
            if (BPF_CORE_READ(skc, skc_state) == TCP_LISTEN)
                return 2; /* WL_ROLE_SERVER */
            o = BPF_CORE_READ(o, next);
        }
        b2 = BPF_CORE_READ(b2, next);
    }
    return 1; /* WL_ROLE_CLIENT */
}

#endif
