#!/usr/bin/env python3
"""Measurement half of bench_poll.sh (which builds the namespaces and snmpds): times one SNMP poll
of the same IF-MIB columns by wanledger, by net-snmp's command-line tools and by
prometheus-snmp-exporter, round-robin so that noise hits all alike, and reads snmpd's own CPU
time (utime+stime from /proc) around every poll."""
import argparse, json, os, subprocess, sys, threading, time, urllib.request

IFX = "1.3.6.1.2.1.31.1.1.1."
COLUMNS = [IFX + "1", IFX + "6", IFX + "7", IFX + "8", IFX + "9", IFX + "10", IFX + "11",
           IFX + "12", IFX + "13", IFX + "15", IFX + "19", "1.3.6.1.2.1.2.2.1.8"]
SYSUPTIME = "1.3.6.1.2.1.1.3.0"
TICK = os.sysconf("SC_CLK_TCK")


def pct(xs, p):
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(round(p / 100.0 * len(s) + 0.5)) - 1))
    return s[k]


def cpu_s(pids):
    t = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        t += int(fields[11]) + int(fields[12])
    return t / TICK


def netns(ns, argv):
    return ["ip", "netns", "exec", ns] + argv


def write_config(path, community, devices, interval=30):
    """devices: [(name, address, [interfaces])]"""
    links, devs, k = [], [], 0
    for name, addr, ifs in devices:
        devs.append({"name": name, "site": "nyc", "snmp": {
            "address": addr, "version": "2c", "community_file": community,
            "timeout_ms": 5000, "retries": 1, "interval_seconds": interval}})
        for i in ifs:
            k += 1
            links.append({"device": name, "interface": i, "site": "nyc", "peer_site": "chi",
                          "circuit": f"c{k}"})
    cfg = {"sites": [{"name": "nyc", "prefixes": ["10.1.0.0/16"]},
                     {"name": "chi", "prefixes": ["10.2.0.0/16"]}],
           "devices": devs, "links": links}
    with open(path, "w") as f:
        json.dump(cfg, f)


def write_exporter_module(path):
    lookup = [{"labels": ["ifIndex"], "labelname": "ifName", "oid": IFX + "1",
               "type": "DisplayString"}]
    metrics = [{"name": "sysUpTime", "oid": "1.3.6.1.2.1.1.3", "type": "gauge"}]
    for c in COLUMNS:
        m = {"name": "c_" + c.replace(".", "_"), "oid": c,
             "type": "DisplayString" if c == IFX + "1" else "gauge",
             "indexes": [{"labelname": "ifIndex", "type": "gauge"}]}
        if c != IFX + "1":
            m["lookups"] = lookup
        metrics.append(m)
    # snmp_exporter 0.21 (Debian 12): modules at the top level, auth inside the module
    mod = {"wl_if": {"walk": COLUMNS, "get": [SYSUPTIME], "metrics": metrics,
                                 "version": 2, "max_repetitions": 50, "retries": 1,
                                 "timeout": "10s", "auth": {"community": "public"}}}
    with open(path, "w") as f:
        json.dump(mod, f)  # JSON is YAML


def run(argv, expect_out=None):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return r.stdout


def cli_poll(ns, target):
    run(netns(ns, ["snmpget", "-v2c", "-c", "public", "-On", target, SYSUPTIME]))
    n = 0
    for c in COLUMNS:
        out = run(netns(ns, ["snmpbulkwalk", "-v2c", "-c", "public", "-On", "-Cr50", target, c]))
        n += out.count(b"\n")
    return n


def scrape(port, target):
    url = f"http://127.0.0.1:{port}/snmp?target={target}&module=wl_if"
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read()


def start_exporter(ns, d, port):
    cfg = os.path.join(d, "snmp_exporter.yml")
    write_exporter_module(cfg)
    p = subprocess.Popen(netns(ns, ["prometheus-snmp-exporter", "--config.file=" + cfg,
                                    f"--web.listen-address=127.0.0.1:{port}"]),
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "exp.log"), "w"))
    with open(os.path.join(d, "exporter.pid"), "w") as f:
        f.write(str(p.pid))
    return p


def wait_exporter(ns, port):
    for _ in range(100):
        r = subprocess.run(netns(ns, ["curl", "-sf", f"http://127.0.0.1:{port}/"]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode == 0:
            return
        time.sleep(0.1)
    sys.exit("bench: prometheus-snmp-exporter did not start")


def report(title, results, cpu, base):
    print(f"\n{title}")
    print(f"| poller | polls | p50 s | p99 s | max s | p50 vs {base} | snmpd CPU/poll p50 (mean) |")
    print("|---|---|---|---|---|---|---|")
    b = pct(results[base], 50)
    results = dict(results)
    for name, xs in results.items():
        c = cpu[name]
        print(f"| {name} | {len(xs)} | {pct(xs, 50):.3f} | {pct(xs, 99):.3f} | {max(xs):.3f} | "
              f"{pct(xs, 50) / b:.2f}x | {pct(c, 50) * 1000:.0f} ms ({sum(c) / len(c) * 1000:.0f} ms) |")


def main():
    ap = argparse.ArgumentParser()
    for a in ("--dir", "--wl", "--ns", "--hub"):
        ap.add_argument(a, required=True)
    for a in ("--polls", "--pairs", "--ndev", "--devpairs"):
        ap.add_argument(a, type=int, required=True)
    o = ap.parse_args()
    d = o.dir
    community = os.path.join(d, "community")
    with open(community, "w") as f:
        f.write("public\n")
    os.chmod(community, 0o600)  # secret files may not be group/world readable

    # ---- one device, 1,000 interfaces ----
    big_ifs = [f"v{i}" for i in range(1, o.pairs + 1)] + [f"w{i}" for i in range(1, o.pairs + 1)]
    big_cfg = os.path.join(d, "big.json")
    write_config(big_cfg, community, [("big", "udp:127.0.0.1:16161", big_ifs)])
    with open(os.path.join(d, "big.pid")) as f:
        big_pid = [int(f.read())]
    exp = start_exporter(o.ns, d, 9116)
    wait_exporter(o.ns, 9116)
    target = "127.0.0.1:16161"
    ours = netns(o.ns, [o.wl, "--config", big_cfg, "poll", "--once", "--stdout"])
    # validate once: every tool sees all 1,000 interfaces
    n_ours = run(ours).count(b'"device":"big"')
    n_cli = cli_poll(o.ns, target)
    body = subprocess.run(netns(o.ns, ["curl", "-sf",
                                       f"http://127.0.0.1:9116/snmp?target={target}&module=wl_if"]),
                          stdout=subprocess.PIPE).stdout
    n_exp = body.count(b"c_1_3_6_1_2_1_31_1_1_1_6{")
    print(f"check: wanledger {n_ours} samples, CLI {n_cli} values "
          f"({len(COLUMNS)} columns x {len(big_ifs) + 1} rows), exporter {n_exp} ifHCInOctets series")
    if n_ours != len(big_ifs) or n_exp < len(big_ifs):
        sys.exit("bench: a tool did not see every interface")

    tools = {
        "wanledger poll --once": lambda: run(ours),
        "snmpget + 12 x snmpbulkwalk -Cr50": lambda: cli_poll(o.ns, target),
        "prometheus-snmp-exporter (numeric module)": lambda: subprocess.run(
            netns(o.ns, ["curl", "-sf", "-o", "/dev/null",
                         f"http://127.0.0.1:9116/snmp?target={target}&module=wl_if"]), check=True),
    }
    res = {k: [] for k in tools}
    cpu = {k: [] for k in tools}
    for _ in range(o.polls):
        for name, fn in tools.items():
            c0, t0 = cpu_s(big_pid), time.perf_counter()
            fn()
            t1, c1 = time.perf_counter(), cpu_s(big_pid)
            res[name].append(t1 - t0)
            cpu[name].append(c1 - c0)
    exp.terminate()
    exp.wait()
    # steady state: the running poller (names resolved once), every 1 s, from its own log line
    steady_cfg = os.path.join(d, "steady.json")
    write_config(steady_cfg, community, [("big", "udp:127.0.0.1:16161", big_ifs)], interval=1)
    log = os.path.join(d, "steady.log")
    c0 = cpu_s(big_pid)
    p = subprocess.Popen(netns(o.ns, [o.wl, "-v", "--config", steady_cfg, "poll", "--stdout"]),
                         stdout=subprocess.DEVNULL, stderr=open(log, "w"))
    steady = []
    for _ in range(600):
        time.sleep(0.1)
        with open(log) as f:
            steady = [float(l.split(" in ")[1].split(" ms")[0]) / 1000 for l in f
                      if "interface(s) in" in l]
        if len(steady) >= o.polls + 1:
            break
    p.terminate()
    p.wait()
    c1 = cpu_s(big_pid)
    steady = steady[1:o.polls + 1]  # the first includes the ifName walk
    res["wanledger poll, running (steady state)"] = steady
    cpu["wanledger poll, running (steady state)"] = [(c1 - c0) / (len(steady) + 1)] * len(steady)
    report(f"One poll of {len(big_ifs)} interfaces ({len(COLUMNS)} columns + sysUpTime), "
           f"one snmpd, cache reloads off; seconds per poll (process start included for the CLI "
           f"tools and wanledger; the exporter is a running server)", res, cpu,
           "wanledger poll --once")

    # ---- 20 devices at once ----
    devs = [(f"d{i}", f"udp:10.88.{i}.2:161",
             [f"v{j}" for j in range(1, o.devpairs + 1)] + [f"w{j}" for j in range(1, o.devpairs + 1)])
            for i in range(1, o.ndev + 1)]
    multi_cfg = os.path.join(d, "multi.json")
    write_config(multi_cfg, community, devs)
    pids = []
    for i in range(1, o.ndev + 1):
        with open(os.path.join(d, f"d{i}.pid")) as f:
            pids.append(int(f.read()))
    exp = start_exporter(o.hub, d, 9117)
    wait_exporter(o.hub, 9117)
    all_once = netns(o.hub, [o.wl, "--config", multi_cfg, "poll", "--once", "--stdout"])
    n = run(all_once).count(b'"device":"d')
    print(f"\ncheck: wanledger {n} samples from {o.ndev} devices")

    def one_each():
        worst = 0.0
        for name, _, _ in devs:
            t0 = time.perf_counter()
            run(netns(o.hub, [o.wl, "--config", multi_cfg, "poll", "--once", "--stdout",
                              "--device", name]))
            worst = max(worst, time.perf_counter() - t0)
        return worst

    def exporter_parallel():
        ts = [threading.Thread(target=scrape_hub, args=(f"10.88.{i}.2:161",))
              for i in range(1, o.ndev + 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    def scrape_hub(tgt):
        subprocess.run(netns(o.hub, ["curl", "-sf", "-o", "/dev/null",
                                     f"http://127.0.0.1:9117/snmp?target={tgt}&module=wl_if"]),
                       check=True)

    res2 = {"wanledger, 20 devices in one poll": [], "wanledger, slowest device alone": [],
            "wanledger, 20 devices one after another (sum)": [],
            "prometheus-snmp-exporter, 20 scrapes in parallel": []}
    cpu2 = {k: [] for k in res2}
    for _ in range(o.polls):
        c0, t0 = cpu_s(pids), time.perf_counter()
        run(all_once)
        t1, c1 = time.perf_counter(), cpu_s(pids)
        res2["wanledger, 20 devices in one poll"].append(t1 - t0)
        cpu2["wanledger, 20 devices in one poll"].append(c1 - c0)
        c0, t0 = cpu_s(pids), time.perf_counter()
        worst = one_each()
        t1, c1 = time.perf_counter(), cpu_s(pids)
        res2["wanledger, slowest device alone"].append(worst)
        cpu2["wanledger, slowest device alone"].append((c1 - c0) / o.ndev)
        res2["wanledger, 20 devices one after another (sum)"].append(t1 - t0)
        cpu2["wanledger, 20 devices one after another (sum)"].append(c1 - c0)
        c0, t0 = cpu_s(pids), time.perf_counter()
        exporter_parallel()
        t1, c1 = time.perf_counter(), cpu_s(pids)
        res2["prometheus-snmp-exporter, 20 scrapes in parallel"].append(t1 - t0)
        cpu2["prometheus-snmp-exporter, 20 scrapes in parallel"].append(c1 - c0)
    exp.terminate()
    exp.wait()
    report(f"{o.ndev} snmpd instances (devices) of {2 * o.devpairs} interfaces each, each in its "
           f"own network namespace, polled from a hub namespace; snmpd CPU summed over all 20 "
           f"(per device for 'slowest alone')", res2, cpu2, "wanledger, 20 devices in one poll")


if __name__ == "__main__":
    main()
