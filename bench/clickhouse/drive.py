#!/usr/bin/env python3
"""The driver of bench/clickhouse/run.sh: posts REPORTS agent reports of 1,000 flows each to
`wanledger reconcile` over 2 keep-alive connections, times until every flow is in ClickHouse
(the outbox empty and ClickHouse's FINAL count equal to what was acknowledged), then inserts the
same rows (exported from ClickHouse as TabSeparated) with clickhouse-client into an identical
table, and prints both side by side."""
import argparse, base64, http.client, json, os, subprocess, threading, time, urllib.request

FLOWS = 1000
TOKEN = "bench-agent-token-0123456789"

ap = argparse.ArgumentParser()
for a in ("--port", "--wl-pid", "--reports"):
    ap.add_argument(a, type=int, required=True)
for a in ("--conninfo", "--ch", "--tcp", "--password", "--dir"):
    ap.add_argument(a, required=True)
o = ap.parse_args()
ch_http = o.ch.split()
ch_tcp = o.tcp.split()
auth = "Basic " + base64.b64encode(("default:" + o.password).encode()).decode()


def chq(sql, node=0):
    rq = urllib.request.Request("http://127.0.0.1:%s/" % ch_http[node], data=sql.encode(),
                                headers={"Authorization": auth})
    with urllib.request.urlopen(rq, timeout=120) as r:
        return r.read().decode()


def psql(sql):
    return subprocess.run(["psql", o.conninfo, "-Atc", sql], check=True, capture_output=True,
                          text=True).stdout.strip()


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


# the flusher creates its tables at start; with shards, the same local table on every other one
for _ in range(300):
    if chq("EXISTS TABLE wanledger.flow_records").strip() == "1":
        break
    time.sleep(0.1)
if len(ch_http) > 1:
    ddl = chq("SHOW CREATE TABLE wanledger.flow_records_local FORMAT TSVRaw").strip()
    for n in range(1, len(ch_http)):
        chq("CREATE DATABASE IF NOT EXISTS wanledger", n)
        chq(ddl.replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1), n)

now = time.time()
ws = int(now // 60) * 60 - 120
ws_text = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ws))
bodies = []
for r in range(o.reports):
    flows = [{"source": "socket", "proto": "tcp", "local": "10.1.%d.%d:%d" % (r % 250, k % 250, 20000 + k),
              "remote": "10.2.0.%d:5201" % (k % 200 + 1), "role": "client", "tx_bytes": 1000 * r + k,
              "rx_bytes": k, "pid": 4000 + r, "uid": 1000, "user": "u%d" % (r % 50),
              "program": "python3", "workflow": "wf%d" % (r % 20)} for k in range(FLOWS)]
    bodies.append(json.dumps({"version": 1, "host": "h%d" % r, "agent_id": "agent-%d" % r, "seq": 1,
                              "window_start": ws_text, "flows": flows}).encode())
n_rows = o.reports * FLOWS
lat = []
lock = threading.Lock()


def client(part):
    c = http.client.HTTPConnection("127.0.0.1", o.port, timeout=120)
    for b in part:
        t = time.monotonic()
        c.request("POST", "/v1/attributions", b, {"Authorization": "Bearer " + TOKEN,
                                                  "Content-Type": "application/json"})
        resp = c.getresponse()
        resp.read()
        if resp.status != 200:
            raise SystemExit("HTTP %d" % resp.status)
        with lock:
            lat.append(time.monotonic() - t)


cpu0 = cpu_s(o.wl_pid)
t0 = time.monotonic()
ts = [threading.Thread(target=client, args=(bodies[i::2],)) for i in range(2)]
for t in ts:
    t.start()
for t in ts:
    t.join()
t_ack = time.monotonic() - t0
while psql("SELECT count(*) FROM flow_reports WHERE ch_pending") != "0":
    time.sleep(0.02)
t_ch = time.monotonic() - t0
cpu_wl = cpu_s(o.wl_pid) - cpu0
got = int(chq("SELECT count() FROM wanledger.flow_records FINAL"))
assert got == n_rows, (got, n_rows)

# the outbox alone (an outage's replay): every report pending again, the flusher re-sends them
# (ReplacingMergeTree keeps one copy); includes up to 0.2 s of the idle flusher's poll
psql("UPDATE flow_reports SET ch_pending = true")
t2 = time.monotonic()
while psql("SELECT count(*) FROM flow_reports WHERE ch_pending") != "0":
    time.sleep(0.02)
t_replay = time.monotonic() - t2
assert int(chq("SELECT count() FROM wanledger.flow_records FINAL")) == n_rows

# the same rows through clickhouse-client into an identical table (on every shard)
tsv = os.path.join(o.dir, "rows.tsv")
with open(tsv, "w") as f:
    f.write(chq("SELECT * FROM wanledger.flow_records FINAL FORMAT TabSeparated"))
local = "flow_records_local" if len(ch_http) > 1 else "flow_records"
for n in range(len(ch_http)):
    chq("CREATE TABLE wanledger.cc_local AS wanledger.%s" % local, n)
target = "wanledger.cc_local"
settings = []
if len(ch_http) > 1:
    chq("CREATE TABLE wanledger.cc AS wanledger.cc_local ENGINE = Distributed(bench, wanledger,"
        " cc_local, cityHash64(agent_id, seq))")
    target = "wanledger.cc"
    settings = ["--insert_distributed_sync=1"]
t1 = time.monotonic()
with open(tsv) as f:
    subprocess.run(["clickhouse-client", "--port", ch_tcp[0], "--password", o.password] + settings +
                   ["--query", "INSERT INTO %s FORMAT TabSeparated" % target], stdin=f, check=True)
t_cc = time.monotonic() - t1
got_cc = int(chq("SELECT count() FROM %s" % target))
assert got_cc == n_rows, (got_cc, n_rows)

lat.sort()
pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
print("shards: %d, n = %d flow records (%d reports x %d), TabSeparated %.1f MiB" %
      (len(ch_http), n_rows, o.reports, FLOWS, os.path.getsize(tsv) / 2**20))
print("| path | wall (s) | flow records/s |")
print("|---|---|---|")
print("| wanledger: POST -> PostgreSQL commit + 200 (all acknowledged) | %.2f | %.0f |" % (t_ack, n_rows / t_ack))
print("| wanledger: POST -> in ClickHouse (outbox empty) | %.2f | %.0f |" % (t_ch, n_rows / t_ch))
print("| wanledger outbox replay: PostgreSQL -> ClickHouse | %.2f | %.0f |" % (t_replay, n_rows / t_replay))
print("| clickhouse-client INSERT of the same rows | %.2f | %.0f |" % (t_cc, n_rows / t_cc))
print("ratio to clickhouse-client: end to end %.2fx, outbox replay %.2fx" % (t_cc / t_ch, t_cc / t_replay))
print("ack latency per report: p50 %.1f ms, p99 %.1f ms, max %.1f ms (n=%d); wanledger CPU %.2f s"
      " (%.2f us/flow)" % (pct(0.5), pct(0.99), lat[-1] * 1000, len(lat), cpu_wl, cpu_wl / n_rows * 1e6))
print("load after: " + open("/proc/loadavg").read().strip())
