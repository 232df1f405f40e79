/* The throttle's kernel/user layout (throttle.bpf.c, throttle_probe.c): fixed-width, no padding
 * holes. A rule the agent applies gets one class slot; sockets carry their creator's tgid in
 * socket-local storage and find their class through the tgid -> class map. */
#ifndef WL_THROTTLE_H
#define WL_THROTTLE_H

#define WL_THR_MAX_CLASSES 64
#define WL_THR_MAX_TGIDS   65536

#define WL_THR_MODE_OFF     0
#define WL_THR_MODE_ENFORCE 1
#define WL_THR_MODE_DRY_RUN 2

/* What the agent sets per class (read without a lock by the program). */
struct thr_cfg {
    __u64 rate_Bps; /* bytes per second */
    __u64 burst;    /* bytes of credit a class can save up */
    __u64 queue;    /* TCP: bytes beyond the credit still sent, with a congestion signal */
    __u32 mode;     /* WL_THR_MODE_* */
    __u32 scoped;   /* only packets whose far end is in thr_scope for this class */
};

/* thr_scope (LPM trie): class and far-end address (IPv6 form, IPv4 as ::ffff:a.b.c.d); prefixlen
 * = 32 (the class, always whole) + the address prefix's length. */
#define WL_THR_MAX_SCOPE (WL_THR_MAX_CLASSES * 16)
struct thr_scope_key {
    __u32 prefixlen;
    __u32 cls;
    __u8 addr[16];
};

/* The bucket (guarded by lock). credit < 0 is the virtual queue. */
struct thr_state {
    struct bpf_spin_lock lock;
    __u32 pad;
    __s64 credit;
    __u64 last_ns;
    __u64 epoch;             /* now >> WL_THR_EPOCH_SHIFT of the last packet */
    __u32 tcp_now, tcp_prev; /* TCP sockets that sent in this and the previous epoch */
};

/* ~67 ms: a TCP socket that sent within the last two epochs is active; active sockets share
 * the class rate as their pacing rate. */
#define WL_THR_EPOCH_SHIFT 26

/* Per class and CPU. In dry-run, delayed and dropped are what enforcement would have done. */
struct thr_counts {
    __u64 pass_bytes, pass_pkts;   /* sent (including marked) */
    __u64 mark_pkts;               /* sent with a congestion signal (TCP enters CWR) */
    __u64 delay_bytes, delay_pkts; /* TCP segments refused: TCP keeps and resends them */
    __u64 drop_bytes, drop_pkts;   /* other packets refused: lost */
    __u64 pad;
};

/* Socket-local storage. */
struct thr_sk {
    __u32 tgid;       /* the process that created (or first wrote to) the socket */
    __u32 gen;        /* class_gen when cls was looked up */
    __s32 cls;        /* class slot, -1: none */
    __u32 epoch;      /* last epoch this socket was counted active in (low 32 bits) */
    __u64 paced;      /* SO_MAX_PACING_RATE set by the throttle (bytes/s), 0: none */
    __u64 rcvd;       /* tcp_sock bytes_received at the last clamp pass */
    __u32 clamp;      /* TCP_WINDOW_CLAMP set by the throttle (bytes), 0: none */
    __u32 clamp_orig; /* window_clamp before the throttle set one (restored after) */
    __u32 peer_gen;   /* peer_gen when peer_cls was looked up */
    __s32 peer_cls;   /* class from thr_peers (a peer socket: this host sends), -1: none */
};

/* Sender side (downloads): the connections of this host whose far end is a throttled socket on
 * another host (the reconciler matched both ends in the flow reports) -> the class of that
 * rule's peer slot. Addresses in IPv6 form (IPv4 as ::ffff:a.b.c.d), ports in host order. */
#define WL_THR_MAX_PEERS 8192
struct thr_peer_key {
    __u8 laddr[16];
    __u8 raddr[16];
    __u16 lport, rport;
    __u32 pad;
};

#endif
