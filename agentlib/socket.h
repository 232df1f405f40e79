/* Key and value structs the socket probe (socket.bpf.c) and the agent share; fixed-width types
 * only, laid out without implicit padding so the kernel and user side hash the same bytes. */
#ifndef WL_SOCKET_H
#define WL_SOCKET_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define WL_COMM_LEN         16
#define WL_MAX_EXCL_PORTS   16
#define WL_FLOW_MAP_DEFAULT 65536

/* Roles of a TCP connection (kept in the value; UDP is always unknown in the kernel). */
#define WL_ROLE_UNKNOWN 0
#define WL_ROLE_CLIENT  1
#define WL_ROLE_SERVER  2

/* One flow: a process (tgid + its start time, so pid reuse makes a new flow) talking over one
 * socket 4-tuple. Addresses are in network byte order, IPv4 in the first 4 bytes; ports are in
 * host byte order. 96 bytes, no padding holes. */
struct flow_key {
    __u32 tgid;
    __u32 uid;
    __u64 cgroup_id;
    __u64 start_ns; /* task group leader's start_boottime, ns since boot */
    __u32 ppid;     /* real parent's tgid when the event happened */
    __u32 netns;    /* inode of the socket's network namespace */
    __u16 lport;
    __u16 rport;
    __u8 family; /* AF_INET or AF_INET6 */
    __u8 proto;  /* IPPROTO_TCP or IPPROTO_UDP */
    __u8 pad[2];
    __u8 laddr[16];
    __u8 raddr[16];
    char comm[WL_COMM_LEN];
};

/* Counters of one flow (slot) in one generation, updated by every CPU with atomic adds; one
 * cache line each, so that two busy flows never share a line. */
struct flow_val {
    __u64 tx_bytes;
    __u64 rx_bytes;
    __u64 tx_calls;
    __u64 rx_calls;
    __u32 role; /* WL_ROLE_*, set when the slot is claimed */
    __u32 pad;
    __u64 pad_line[3];
} __attribute__((aligned(64)));

/* Indexes of the per-CPU `drops` array. */
#define WL_DROP_MAP_FULL 0 /* a new flow did not fit in the map */
#define WL_DROP_RACE     1 /* generation flipped three times during one event (never seen) */
#define WL_DROP_NSLOTS   2

#endif
