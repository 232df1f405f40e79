// SPDX-License-Identifier: GPL-2.0
/* The build pipeline's proof: a trivial probe that counts send calls and bytes of one process on
 * the sock:sock_send_length tracepoint. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

const volatile __u32 target_tgid = 0;

__u64 calls = 0;
__u64 bytes = 0;

SEC("tracepoint/sock/sock_send_length")
int count_send(struct trace_event_raw_sock_msg_length *ctx)
{
    if ((__u32)(bpf_get_current_pid_tgid() >> 32) != target_tgid)
        return 0;
    if (ctx->ret <= 0)
        return 0;
    __sync_fetch_and_add(&calls, 1);
    __sync_fetch_and_add(&bytes, (__u64)ctx->ret);
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
