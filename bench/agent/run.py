#!/usr/bin/env python3
"""The agent's costs, in one run (root; ~3 minutes; network namespaces wla-bn-a/b over veth):

1. Per-event kernel cost of the socket probe vs a bpftrace program keeping the same per-flow
   sums, both attached at once to the same events (iperf3 -l 64 over veth), from the kernel's
   own run_time_ns/run_cnt (BPF_ENABLE_STATS, held only for this run).
2. iperf3 throughput over veth without and with the agent, 128 KiB and 64-byte writes,
   alternating runs; ratios per pair.
3. Drain time with 100,000 live flows (bench_drain).

Usage: run.py [BUILD_DIR] [PARTS] [OTHER_AGENT]   BUILD_DIR default /work/build-agent-bench
       (non-sanitized); PARTS a subset of "123" (default all); OTHER_AGENT: another
       wanledger-agent binary (e.g. built from the previous commit) attached at the same time in
       part 1, so that a change's own effect is measured in the same run
"""
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time

BUILD = sys.argv[1] if len(sys.argv) > 1 else "/work/build-agent-bench"
PARTS = sys.argv[2] if len(sys.argv) > 2 else "123"
OTHER = sys.argv[3] if len(sys.argv) > 3 else None
AGENT = f"{BUILD}/agentlib/wanledger-agent"
DRAIN = f"{BUILD}/bench/agent/bench_drain"
NS_A, NS_B, IP_A, IP_B = "wla-bn-a", "wla-bn-b", "10.204.0.1", "10.204.0.2"
ROUNDS_COST = 12
PAIRS = 9
SECS = 3
BT_PROG = r"""
tracepoint:sock:sock_send_length /args->ret > 0/ {
  $sk = (struct sock *)args->sk;
  @tx[pid, uid, cgroup, comm, $sk->__sk_common.skc_rcv_saddr, $sk->__sk_common.skc_daddr,
      $sk->__sk_common.skc_num, $sk->__sk_common.skc_dport] = sum(args->ret);
}
tracepoint:sock:sock_recv_length /args->ret > 0 && (args->flags & 2) == 0/ {
  $sk = (struct sock *)args->sk;
  @rx[pid, uid, cgroup, comm, $sk->__sk_common.skc_rcv_saddr, $sk->__sk_common.skc_daddr,
      $sk->__sk_common.skc_num, $sk->__sk_common.skc_dport] = sum(args->ret);
}
"""


def sh(cmd, check=True):
    return subprocess.run(cmd, shell=True, check=check, capture_output=True, text=True)


def quantiles(v):
    s = sorted(v)
    n = len(s)
    return s[int(0.5 * (n - 1) + 0.5)], s[int(0.99 * (n - 1) + 0.5)], s[-1], n


def fmt(name, v, unit, scale=1.0, prec=1):
    p50, p99, mx, n = quantiles([x * scale for x in v])
    return (f"{name:<40} n={n:<3} p50 {p50:10.{prec}f} {unit}  p99 {p99:10.{prec}f} {unit}  "
            f"max {mx:10.{prec}f} {unit}")


def enable_stats():
    """BPF_ENABLE_STATS(BPF_STATS_RUN_TIME): stats on while the returned fd is open."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint32 * 2)(0, 0)
    fd = libc.syscall(321, 32, ctypes.byref(attr), 8)  # __NR_bpf, BPF_ENABLE_STATS
    if fd < 0:
        sys.exit(f"BPF_ENABLE_STATS failed: errno {ctypes.get_errno()}")
    return fd


def progs():
    return {p["id"]: p for p in json.loads(sh("bpftool prog show -j").stdout)}


def new_ids(before, timeout=15.0):
    """Program ids that appeared since `before`, once they stop appearing."""
    t0, last = time.time(), set()
    while time.time() - t0 < timeout:
        time.sleep(0.5)
        ids = set(progs()) - set(before)
        if ids and ids == last:
            return ids
        last = ids
    sys.exit("programs did not appear")


def iperf(length, secs=SECS):
    out = sh(f"ip netns exec {NS_A} iperf3 -c {IP_B} -l {length} -t {secs} -J").stdout
    return json.loads(out)["end"]["sum_received"]["bits_per_second"]


def start_agent(tmp, extra="", binary=AGENT):
    return subprocess.Popen(
        f"exec {binary} --stdout --window 60 --spool {tmp}/spool --pin-dir none {extra}", shell=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(p):
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def setup():
    sh(f"ip netns del {NS_A}; ip netns del {NS_B}", check=False)
    for c in [f"ip netns add {NS_A}", f"ip netns add {NS_B}",
              f"ip link add {NS_A}-v type veth peer name {NS_B}-v netns {NS_B}",
              f"ip link set {NS_A}-v netns {NS_A}",
              f"ip -n {NS_A} addr add {IP_A}/24 dev {NS_A}-v",
              f"ip -n {NS_B} addr add {IP_B}/24 dev {NS_B}-v",
              f"ip -n {NS_A} link set {NS_A}-v up", f"ip -n {NS_B} link set {NS_B}-v up",
              f"ip -n {NS_A} link set lo up", f"ip -n {NS_B} link set lo up",
              f"ip -n {NS_A} route add 10.205.0.0/16 via {IP_B}"]:
        sh(c)


def main():
    if os.geteuid() != 0:
        sys.exit("run.py needs root")
    setup()
    iperf_srv = subprocess.Popen(f"exec ip netns exec {NS_B} iperf3 -s -B {IP_B}", shell=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
    tmp = tempfile.mkdtemp(prefix="wla-bench-")
    stats_fd = enable_stats()
    try:
        if "1" in PARTS:
            part_cost(tmp)
        if "2" in PARTS:
            part_throughput(tmp)
    finally:
        os.close(stats_fd)
        stop(iperf_srv)
    if "3" in PARTS:
        part_drain()
    sh(f"ip netns del {NS_A}; ip netns del {NS_B}", check=False)
    sh(f"rm -rf {tmp}", check=False)


def attach(tmp, what):
    """Starts one of "agent", "other", "bpftrace"; returns (process, its program ids)."""
    before = progs()
    if what == "bpftrace":
        with open(f"{tmp}/p.bt", "w") as f:
            f.write(BT_PROG)
        p = subprocess.Popen(["bpftrace", f"{tmp}/p.bt"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    elif what == "other":
        os.makedirs(f"{tmp}/other", exist_ok=True)
        p = start_agent(f"{tmp}/other", binary=OTHER)
    else:
        p = start_agent(tmp)
    return p, new_ids(before)


def part_cost(tmp):
    # 1. per-event cost, side by side: all attached at once to the same events. Programs on one
    # tracepoint run in attach order and the first one takes the cache misses on the socket and
    # the task, so the order rotates every round (each program first in as many rounds).
    names = ["agent", "bpftrace"] + (["other"] if OTHER else [])
    ev_names = ("tpb_send", "tpb_recv")
    per = {n: [] for n in names}
    ratio, ratio_old, ratio_new_old, loads, firsts = [], [], [], [], []
    rounds = ROUNDS_COST if ROUNDS_COST % len(names) == 0 else \
        ROUNDS_COST + len(names) - ROUNDS_COST % len(names)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        running = {n: attach(tmp, n) for n in order}
        a = progs()
        iperf(64)
        b = progs()
        loads.append(os.getloadavg()[0])
        firsts.append(order[0])
        for n in reversed(order):
            stop(running[n][0])

        def cost(ids, event_filter):
            rt = sum(b[i].get("run_time_ns", 0) - a[i].get("run_time_ns", 0) for i in ids)
            ev = sum(b[i].get("run_cnt", 0) - a[i].get("run_cnt", 0) for i in ids
                     if event_filter(b[i]))
            return rt / ev if ev else float("nan"), ev

        got = {}
        for n in names:
            filt = (lambda p: True) if n == "bpftrace" else (lambda p: p.get("name") in ev_names)
            got[n], evs = cost(running[n][1], filt)
            per[n].append(got[n])
        ratio.append(got["agent"] / got["bpftrace"])
        if OTHER:
            ratio_old.append(got["other"] / got["bpftrace"])
            ratio_new_old.append(got["agent"] / got["other"])
    print("== 1. kernel cost per socket event (iperf3 -l 64 over veth, all attached at once, "
          f"attach order rotating; {SECS} s rounds; last round {evs} events)")
    print("first attached per round: " + " ".join(firsts))
    print(fmt("wanledger socket probe (all programs)", per["agent"], "ns"))
    if OTHER:
        print(fmt("other agent", per["other"], "ns"))
    print(fmt("bpftrace, same per-flow sums", per["bpftrace"], "ns"))
    print(fmt("ratio agent / bpftrace", ratio, "x", prec=3))
    if OTHER:
        print(fmt("ratio other agent / bpftrace", ratio_old, "x", prec=3))
        print(fmt("ratio agent / other agent", ratio_new_old, "x", prec=3))
    # each program in the rounds it was attached first (as when it runs alone: it takes the
    # cache misses itself), and the ratio of those medians
    for n in names:
        print(fmt(f"{n}, rounds attached first", [x for x, f in zip(per[n], firsts) if f == n],
                  "ns"))
    med = {n: quantiles([x for x, f in zip(per[n], firsts) if f == n])[0] for n in names}
    print(f"ratio of first-attached p50s: agent / bpftrace {med['agent'] / med['bpftrace']:.3f} x"
          + (f", other / bpftrace {med['other'] / med['bpftrace']:.3f} x, agent / other "
             f"{med['agent'] / med['other']:.3f} x" if OTHER else ""))
    first = [r for r, f in zip(ratio, firsts) if f == "agent"]
    print(fmt("ratio agent / bpftrace, rounds agent first", first, "x", prec=3))
    print(fmt("load average (1 min) after each round", loads, "", prec=2))
    for n in names:
        print(f"{n:>9} per round (ns): " + " ".join(f"{x:.1f}" for x in per[n]))


def part_throughput(tmp):
    # 2. throughput without / with the agent
    print(f"== 2. iperf3 over veth, {SECS} s runs, alternating without/with the agent")
    for length, label in ((131072, "128 KiB writes"), (64, "64-byte writes")):
        base, probe, r, share, rate = [], [], [], [], []
        for i in range(PAIRS):
            order = (False, True) if i % 2 == 0 else (True, False)
            got = {}
            for with_agent in order:
                if not with_agent:
                    got[False] = iperf(length)
                    continue
                before = progs()
                ag = start_agent(tmp)
                ids = new_ids(before)
                a = progs()
                t0 = time.time()
                got[True] = iperf(length)
                span = time.time() - t0
                b = progs()
                stop(ag)
                # the probe's own CPU time while iperf3 ran, from the kernel's counters
                run_ns = sum(b[j].get("run_time_ns", 0) - a[j].get("run_time_ns", 0) for j in ids)
                events = sum(b[j].get("run_cnt", 0) - a[j].get("run_cnt", 0) for j in ids
                             if b[j].get("name") in ("tpb_send", "tpb_recv"))
                share.append(100.0 * run_ns / (span * 1e9))
                rate.append(events / span)
            base.append(got[False])
            probe.append(got[True])
            r.append(got[True] / got[False])
        print(fmt(f"{label}: without agent", base, "Gbit/s", 1e-9, 3))
        print(fmt(f"{label}: with agent", probe, "Gbit/s", 1e-9, 3))
        print(fmt(f"{label}: with/without per pair", r, "x", prec=3))
        print(fmt(f"{label}: socket events/s (agent)", rate, "/s", prec=0))
        print(fmt(f"{label}: probe CPU, % of one core", share, "%", prec=3))


def part_drain():
    print("== 3. drain time, 100,000 live flows per window")
    out = sh(f"{DRAIN} /run/netns/{NS_A} 10.205 100000 20 1000", check=False)
    print(out.stdout + out.stderr, end="")


if __name__ == "__main__":
    main()
