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

#endif
