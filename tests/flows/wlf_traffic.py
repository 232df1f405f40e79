#!/usr/bin/env python3
"""Known UDP traffic for tests/flows/test_flow_exporters: in each of N windows (aligned to the
wall clock, W seconds), one flow per destination with an exact datagram count and size, sent in
[start + W/10, start + W - 1.5 s) so every packet falls inside its window and the exporters'
reports of it (sFlow: by arrival) reach the collector before the window ends (times jittered,
fixed seed); a 20 packet/s ticker per
destination, from before the first window to 6 s after the last, keeps libpcap's ring moving
(softflowd and pmacctd read it in blocks: without later packets the last ones wait unread). Prints one
line per flow: "DST PORT WINDOW_START_EPOCH COUNT PAYLOAD_BYTES".

usage: wlf_traffic.py W N DST1 [DST2 ...]
"""
import random
import socket
import sys
import time

W, N = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(20261201)  # fixed seed: the same schedule every run
dsts = sys.argv[3:]
socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in dsts]
tick = b"t" * 32
now = time.time()
first = (int(now) // W + 1) * W
plan = []  # (t, sock index, port, size)
for d in range(len(dsts)):
    for w in range(N):
        ws = first + w * W
        count = 300 + 97 * w + 151 * d
        size = 200 + 61 * w + 37 * d
        port = 6000 + 100 * d + w
        print(dsts[d], port, ws, count, size, flush=True)
        for k in range(count):
            # jittered within its slot: strictly periodic packets would alias with a systematic
            # (1-in-N count-based) sampler, which then sees a fixed fraction other than 1/N
            t0, span = 0.1 * W, W - 1.5 - 0.1 * W
            plan.append((ws + t0 + span * (k + rng.random()) / count, d, port, size))
    # the ticker (Poisson, 20/s) starts before the first window and runs 6 s past the last
    t = now
    while t < first + N * W + 6:
        plan.append((t, d, 5999 - d, -1))
        t += rng.expovariate(20.0)
plan.sort()
payloads = {}
for t, d, port, size in plan:
    delay = t - time.time()
    if delay > 0:
        time.sleep(delay)
    if size < 0:
        socks[d].sendto(tick, (dsts[d], port))
    else:
        p = payloads.get(size)
        if p is None:
            p = payloads[size] = b"x" * size
        socks[d].sendto(p, (dsts[d], port))
