/* The log-linear latency bucket layout, shared by the NFS probe's kernel side (nfs.bpf.c) and
 * user space (llhist.c): one definition of "which bucket holds v".
 *
 * HdrHistogram's idea with 16 sub-buckets per power of two: values 0..15 have a bucket each
 * (exact); a value v >= 16 with e = floor(log2 v) falls in sub-bucket (v >> (e - 4)) - 16 of
 * octave e, a bucket [(16 + s) << (e - 4), (17 + s) << (e - 4)), whose width is at most 1/16 of
 * its lower bound: reporting a bucket's upper bound overstates a value by at most 6.25%. Octaves
 * 4..23 are kept (values below 2^24); larger values share one overflow bucket. Units are the
 * caller's (the NFS probe records microseconds: exact below 16 us, 6.25% up to 16.777216 s).
 *
 * Needs __u32/__u64 (vmlinux.h in BPF, <linux/types.h> in user space). */
#ifndef WL_LLHIST_LAYOUT_H
#define WL_LLHIST_LAYOUT_H

#define LLHIST_SUB_BITS 4
#define LLHIST_SUB      (1u << LLHIST_SUB_BITS) /* 16 sub-buckets per power of two */
#define LLHIST_TOP_EXP  24                      /* values >= 2^24 go to the overflow bucket */
#define LLHIST_OVERFLOW (LLHIST_SUB * (LLHIST_TOP_EXP - LLHIST_SUB_BITS + 1)) /* 336 */
#define LLHIST_SLOTS    (LLHIST_OVERFLOW + 1)                                 /* 337 */

static inline __attribute__((always_inline)) __u32 llhist_index_of(__u64 v)
{
    if (v < LLHIST_SUB)
        return (__u32)v;
    if (v >= (1ULL << LLHIST_TOP_EXP))
        return LLHIST_OVERFLOW;
    __u32 e = 0;
    __u64 x = v;
    if (x >> 16) {
        x >>= 16;
        e += 16;
    }
    if (x >> 8) {
        x >>= 8;
        e += 8;
    }
    if (x >> 4) {
        x >>= 4;
        e += 4;
    }
    if (x >> 2) {
        x >>= 2;
        e += 2;
    }
    if (x >> 1)
        e += 1;
    __u32 sub = (__u32)(v >> (e - LLHIST_SUB_BITS)) - LLHIST_SUB;
    return LLHIST_SUB * (e - LLHIST_SUB_BITS + 1) + sub;
}

#endif
