#!/usr/bin/env python3
"""The driver of bench/pg_ingest/run.sh. Every round posts REPORTS agent reports of 1,000 socket
flows each (shaped like bench/clickhouse/drive.py's, pre-built JSON, seq = the round) over
--conns keep-alive connections (open loop within each: the next as soon as the previous is
acknowledged) to the tested wanledger and to every --other one (rotating which goes first),
then loads the first round's rows (exported with \\copy ... TO) with one `psql \\copy` into a
fresh table LIKE flow_records INCLUDING ALL of the tested database, with the old table's NOT NULLs
and BRIN index (flow_records is a view since sql/024: LIKE copies its columns and defaults only).
Prints per step the wall time, flow records/s, the ratio to the same round's \\copy, the CPU per
flow record of wanledger + every PostgreSQL process, the per-report acknowledgement p50/p99/max
and the load average after it; then the medians."""
import argparse, http.client, os, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ingestlib import FLOWS, cpu_of, cpu_s, load, post_all as post, report_body, wait_port
import ingestlib

# What flow_records had as a table (sql/001, 003, 015) and a LIKE of the view (sql/024) lacks.
OLD_TABLE = ("ALTER TABLE %(t)s " + ", ".join("ALTER COLUMN %s SET NOT NULL" % c for c in (
    "window_start", "agent_id", "seq", "idx", "host", "source", "tx_bytes", "rx_bytes",
    "nfs_bytes", "nfs_ops", "namespace", "pod", "container_name")) +
    "; CREATE INDEX ON %(t)s USING brin (window_start)")
ap = argparse.ArgumentParser()
ap.add_argument("--reports", type=int, required=True)
ap.add_argument("--rounds", type=int, required=True)
ap.add_argument("--conns", type=int, default=2)
for a in ("--conninfo", "--pg-data", "--dir", "--test"):
    ap.add_argument(a, required=True)
ap.add_argument("--other", action="append", default=[])
ap.add_argument("--perf")
o = ap.parse_args()


def target(spec, name=None):
    if name is None:
        name, spec = spec.split(":", 1)
    port, pid, db = spec.split(":")
    return {"name": name, "port": int(port), "pid": int(pid), "db": db,
            "conninfo": o.conninfo.replace("dbname=wanledger", "dbname=" + db)}


paths = [target(o.test, "test")] + [target(x) for x in o.other]


def psql(conninfo, sql):
    return subprocess.run(["psql", conninfo, "-Atqc", sql], check=True, capture_output=True,
                          text=True).stdout.strip()


def pg_pids():
    return ingestlib.pg_pids(o.pg_data)


ws = int(time.time() // 60) * 60 - 120
ws_text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ws))


def body(r, seq, agent="agent-%d"):
    return report_body(r, seq, ws_text, agent)


bodies = [body(r, 1) for r in range(o.reports)]
n_rows = o.reports * FLOWS


def post_all(port, seq, bs):
    _, wall, lat = post(port, seq, bs, o.conns)
    return wall, lat


def pct(lat, q):
    return lat[min(len(lat) - 1, int(q * len(lat)))] * 1000


for p in paths:
    wait_port(p["port"])
    post_all(p["port"], 1, [body(r, 1, "warmup-%d") for r in range(10)])  # partitions, caches
perf = None
if o.perf:
    pids = ",".join(str(x) for x in [p["pid"] for p in paths if p["name"] == "test"] + pg_pids())
    perf = subprocess.Popen(["perf", "record", "-F", "499", "-g", "-p", pids, "-o", o.perf],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1)
print("machine: %d cores; load at start: %s; n = %d flow records per step (%d reports x %d, %d"
      " connections), %d rounds" % (os.cpu_count(), load(), n_rows, o.reports, FLOWS, o.conns,
                                    o.rounds))
print(ingestlib.describe())
print("| round | step | wall (s) | flow records/s | ratio to the round's \\copy | CPU us/flow"
      " (wanledger + every PostgreSQL process; (wanledger + its backends)) | ack p50 / p99 / max (ms) | load after |")
print("|---|---|---|---|---|---|---|---|")
copy_file = os.path.join(o.dir, "rows.copy")
res = {p["name"]: [] for p in paths}
res["copy"] = []
for rnd in range(1, o.rounds + 1):
    k = (rnd - 1) % len(paths)  # rotate which build goes first
    order = paths[k:] + paths[:k]
    rows = []
    for p in order:
        own = [int(x) for x in psql(p["conninfo"], "SELECT pid FROM pg_stat_activity WHERE"
                                    " datname = '%s' AND pid <> pg_backend_pid()" % p["db"]).split()]
        c0, o0, w0 = cpu_s(p["pid"]) + cpu_of(pg_pids()), cpu_of(own), cpu_s(p["pid"])
        wall, lat = post_all(p["port"], rnd, bodies)
        cpu = cpu_s(p["pid"]) + cpu_of(pg_pids()) - c0
        cpu_wl = cpu_s(p["pid"]) - w0
        cpu_own = cpu_of(own) - o0  # its backends
        got = int(psql(p["conninfo"], "SELECT count(*) FROM flow_records WHERE seq = %d AND"
                       " agent_id LIKE 'agent-%%'" % rnd))
        assert got == n_rows, (p["name"], got, n_rows)
        rows.append((p["name"], wall, cpu, cpu_wl, cpu_own, lat, load()))
    t = paths[0]
    if rnd == 1:
        subprocess.run(["psql", t["conninfo"], "-qc", "\\copy (SELECT * FROM flow_records WHERE"
                        " seq = 1 AND agent_id LIKE 'agent-%%') TO '%s'" % copy_file], check=True)
    psql(t["conninfo"], "CREATE TABLE copy_rows_%d (LIKE flow_records INCLUDING ALL); %s"
         % (rnd, OLD_TABLE % {"t": "copy_rows_%d" % rnd}))
    t1 = time.monotonic()
    subprocess.run(["psql", t["conninfo"], "-qc", "\\copy copy_rows_%d FROM '%s'" % (rnd, copy_file)],
                   check=True)
    t_copy = time.monotonic() - t1
    assert int(psql(t["conninfo"], "SELECT count(*) FROM copy_rows_%d" % rnd)) == n_rows
    load_copy = load()
    res["copy"].append(t_copy)
    for name, wall, cpu, cpu_wl, cpu_own, lat, ld in rows:
        us = lambda c: c / n_rows * 1e6
        res[name].append((wall, t_copy / wall, us(cpu), pct(lat, .5), pct(lat, .99), lat[-1],
                          us(cpu_wl), us(cpu_own)))
        print("| %d | %s | %.2f | %.0f | %.2fx | %.2f (%.2f + %.2f) | %.1f / %.1f / %.1f | %s |" %
              (rnd, name, wall, n_rows / wall, t_copy / wall, us(cpu), us(cpu_wl), us(cpu_own),
               pct(lat, .5), pct(lat, .99), lat[-1] * 1000, ld))
    print("| %d | psql \\copy | %.2f | %.0f | 1 | (its backend has exited) | | %s |" %
          (rnd, t_copy, n_rows / t_copy, load_copy))
if perf:
    perf.send_signal(2)
    perf.wait()
for p in paths:
    v = res[p["name"]]
    med = lambda i: statistics.median(x[i] for x in v)
    print("%s: median %.0f flow records/s (range %.0f-%.0f), ratio to \\copy median %.2fx (range"
          " %.2f-%.2f), CPU %.2f us/flow (wanledger %.2f + its backends %.2f), ack p50 %.1f ms, p99"
          " %.1f ms (n = %d rounds)" %
          (p["name"], n_rows / med(0), n_rows / max(x[0] for x in v), n_rows / min(x[0] for x in v),
           med(1), min(x[1] for x in v), max(x[1] for x in v), med(2), med(6), med(7), med(3),
           med(4), len(v)))
for p in paths:  # the grouped commit's sizes (store_group.h), where the build has them
    try:
        c = http.client.HTTPConnection("127.0.0.1", p["port"], timeout=10)
        c.request("GET", "/metrics")
        m = dict(l.rsplit(" ", 1) for l in c.getresponse().read().decode().splitlines()
                 if l.startswith("wanledger_ingest_"))
        if "wanledger_ingest_commit_reports_count" in m:
            print("%s: %s agent reports in %s ingest transactions (<=1: %s, <=2: %s, <=4: %s,"
                  " <=8: %s, <=16: %s), %s grouped commits rolled back (/metrics, every step)" %
                  (p["name"], m["wanledger_ingest_commit_reports_sum"],
                   m["wanledger_ingest_commit_reports_count"],
                   *[m['wanledger_ingest_commit_reports_bucket{le="%d"}' % k]
                     for k in (1, 2, 4, 8, 16)], m["wanledger_ingest_group_fallbacks_total"]))
    except (OSError, KeyError, ValueError) as ex:
        print("%s: no /metrics figures (%s)" % (p["name"], ex))
print("psql \\copy: median %.0f flow records/s (range %.0f-%.0f); load at the end %s" %
      (n_rows / statistics.median(res["copy"]), n_rows / max(res["copy"]),
       n_rows / min(res["copy"]), load()))
