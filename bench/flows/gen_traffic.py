#!/usr/bin/env python3
"""Writes a pcap (Ethernet, IPv4 UDP/TCP) of P packets over F flows between 10.1.x.y and
10.2.x.y for bench/flows: softflowd -r turns it into real IPFIX export. usage: gen_traffic.py
OUT P F"""
import random
import struct
import sys

out, P, F = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
flows = []
for i in range(F):
    src = bytes([10, 1, (i >> 8) & 255, i & 255])
    dst = bytes([10, 2, rng.randrange(256), rng.randrange(1, 255)])
    proto = 6 if i % 3 == 0 else 17
    flows.append((src, dst, proto, rng.randrange(1024, 65535), rng.choice([443, 2049, 5001, 8080])))


def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    return (~(s + (s >> 16))) & 0xFFFF


with open(out, "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    t = 1796119200.0
    for k in range(P):
        src, dst, proto, sport, dport = flows[k % F] if k < F else flows[rng.randrange(F)]
        plen = rng.choice([64, 200, 576, 1200, 1400])
        l4 = (struct.pack("!HHLLBBHHH", sport, dport, k, 0, 0x50, 0x10, 65535, 0, 0)
              if proto == 6 else struct.pack("!HHHH", sport, dport, 8 + plen, 0))
        total = 20 + len(l4) + plen
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, k & 0xFFFF, 0, 64, proto, 0, src, dst)
        ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
        frame = b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" + ip + l4
        t += 0.0001
        cap = frame[:96]  # headers only, like a snaplen: the lengths stay the real ones
        f.write(struct.pack("<IIII", int(t), int((t % 1) * 1e6), len(cap), len(frame) + plen))
        f.write(cap)
