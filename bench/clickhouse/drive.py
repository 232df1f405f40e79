#!/usr/bin/env python3
"""The driver of bench/clickhouse/run.sh, in one run:
 1. PostgreSQL only (run after 2, 3, 4 and 6): posts REPORTS agent reports of 1,000 flows each to a
    `wanledger reconcile` without analytics (flows COPY'd into flow_records): the
    acknowledgement latency to keep;
 2. ClickHouse mode (run first): the same reports to `wanledger reconcile` with analytics.clickhouse; times
    the acknowledgements and until every flow is in ClickHouse (no report pending, ClickHouse's
    FINAL count equal to what was acknowledged);
 3. backlog: ClickHouse frozen (SIGSTOP) while the same reports arrive again as seq 2, then
    thawed: how fast the outbox drains (what an outage's backlog costs);
 4. clickhouse-client inserting the rows of step 2 (exported from ClickHouse as TabSeparated)
    into an identical table;
 5. psql \copy of step 1's rows (exported with COPY ... TO STDOUT) into a table LIKE
    flow_records INCLUDING ALL with the old table's NOT NULLs and BRIN index, one COPY: the tool
    a user would otherwise load PostgreSQL with.
 6. with --rounds R (run after 4, before 1): steps 2 and 4 again, R times, alternating which goes first (seq 10, 11, …
    through wanledger into its table emptied first; the same TabSeparated file through
    clickhouse-client into a fresh table like step 4's): the ratio per round and its median, because on a
    shared 2-core host one pair of runs moves with the host (±30 %) more than with the build.
Reports are posted over --conns keep-alive connections (default 2), closed loop within each (the
next as soon as the previous is acknowledged)."""
import argparse, base64, http.client, os, resource, signal, subprocess, sys, time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ingestlib import FLOWS, cpu_of, cpu_s, load, minflt, post_all as post, report_body, wait_port
import ingestlib

ap = argparse.ArgumentParser()
for a in ("--port", "--pg-port", "--wl-pid", "--wlpg-pid", "--reports"):
    ap.add_argument(a, type=int, required=True)
ap.add_argument("--conns", type=int, default=2)
ap.add_argument("--rounds", type=int, default=0)
for a in ("--conninfo", "--ch", "--tcp", "--ch-pids", "--password", "--dir", "--pg-data"):
    ap.add_argument(a, required=True)
o = ap.parse_args()
ch_http = o.ch.split()
ch_tcp = o.tcp.split()
ch_pids = [int(p) for p in o.ch_pids.split()]
auth = "Basic " + base64.b64encode(("default:" + o.password).encode()).decode()


def chq(sql, node=0):
    rq = urllib.request.Request("http://127.0.0.1:%s/" % ch_http[node], data=sql.encode(),
                                headers={"Authorization": auth})
    with urllib.request.urlopen(rq, timeout=120) as r:
        return r.read().decode()


def psql(sql, conninfo=None):
    return subprocess.run(["psql", conninfo or o.conninfo, "-Atc", sql], check=True,
                          capture_output=True, text=True).stdout.strip()


def pg_pids():
    return ingestlib.pg_pids(o.pg_data)


def path_cpu(wl_pid):
    """CPU seconds so far of everything on the path: wanledger, PostgreSQL's processes (the
    backends alive now), the ClickHouse servers."""
    return cpu_s(wl_pid) + cpu_of(pg_pids()) + cpu_of(ch_pids)


wait_port(o.port)
wait_port(o.pg_port)
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
bodies = [report_body(r, 1, ws_text) for r in range(o.reports)]
n_rows = o.reports * FLOWS


def post_all(port, seq):
    return post(port, seq, bodies, o.conns)


def pct(lat):
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
    return "p50 %.1f ms, p99 %.1f ms, max %.1f ms (n=%d)" % (p(0.5), p(0.99), lat[-1] * 1000, len(lat))


def outbox_reports():
    """wanledger_clickhouse_outbox_reports from /metrics (one keep-alive connection: polling
    with psql would start a PostgreSQL backend per poll)."""
    c = http.client.HTTPConnection("127.0.0.1", o.port, timeout=60)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    c.close()
    for line in body.splitlines():
        if line.startswith("wanledger_clickhouse_outbox_reports "):
            return int(line.split()[1])
    raise SystemExit("no wanledger_clickhouse_outbox_reports in /metrics")


def wait_empty():
    while outbox_reports() != 0:
        time.sleep(0.05)


def check_count(want):
    got = int(chq("SELECT count() FROM wanledger.flow_records FINAL"))
    assert got == want, (got, want)


print("machine: %d cores; load at start: %s" % (os.cpu_count(), load()))
print(ingestlib.describe())
# 2. ClickHouse mode (first: PostgreSQL's autovacuum of step 1's flow_records would count here)
perf = None
if os.environ.get("PERF_ALL"): # PERF_ALL=FILE: a system-wide perf profile of step 2 only
    perf = subprocess.Popen(["perf", "record", "-F", os.environ.get("PERF_FREQ", "499"), "-a", "-g", "-o",
                             os.environ["PERF_ALL"]], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    time.sleep(1)
cpu0 = cpu_s(o.wl_pid)
flt0 = minflt(o.wl_pid)
pg0, ch0 = cpu_of(pg_pids()), cpu_of(ch_pids)
split0 = ingestlib.pg_split(o.pg_data)
c0 = path_cpu(o.wl_pid)
t0, t_ack, lat_ch = post_all(o.port, 1)
cpu_sender = ingestlib.sender_cpu_s
wait_empty()
t_ch = time.monotonic() - t0
cpu_wl = cpu_s(o.wl_pid) - cpu0
flt_wl = minflt(o.wl_pid) - flt0
cpu_path = path_cpu(o.wl_pid) - c0
cpu_pg_in_ch, cpu_ch_in_ch = cpu_of(pg_pids()) - pg0, cpu_of(ch_pids) - ch0
load_ch = load()
split_ch = ingestlib.pg_split_delta(split0, ingestlib.pg_split(o.pg_data))
if perf:
    perf.send_signal(signal.SIGINT)
    perf.wait()
    print("perf: PostgreSQL pids %s" % ",".join(str(p) for p in pg_pids()))
check_count(n_rows)
table = "flow_records_local" if len(ch_http) > 1 else "flow_records"
on_disk = sum(int(chq("SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database ="
                      " 'wanledger' AND table = '%s'" % table, n).strip() or 0)
              for n in range(len(ch_http)))
# 3. backlog while ClickHouse is frozen, drained after
for p in ch_pids:
    os.kill(p, signal.SIGSTOP)
try:
    _, t_ack2, lat_bl = post_all(o.port, 2)
    depth = psql("SELECT count(*), sum(n_rows), sum(octet_length(block)), sum(raw_bytes)"
                 " FROM ch_outbox").split("|")
finally:
    for p in ch_pids:
        os.kill(p, signal.SIGCONT)
t2 = time.monotonic()
wait_empty()
t_replay = time.monotonic() - t2
check_count(2 * n_rows)
load_bl = load()
# 4. the rows of step 2 through clickhouse-client into an identical table (on every shard)
tsv = os.path.join(o.dir, "rows.tsv")
with open(tsv, "w") as f:
    f.write(chq("SELECT * FROM wanledger.flow_records FINAL WHERE seq = 1 FORMAT TabSeparated"))


def cc_table(name):
    """wanledger.<name>_local, like wanledger's own table, on every shard, and with shards the
    Distributed wanledger.<name> over them: where clickhouse-client inserts."""
    for n in range(len(ch_http)):
        chq("CREATE TABLE wanledger.%s_local AS wanledger.%s" % (name, table), n)
    if len(ch_http) == 1:
        return "wanledger.%s_local" % name
    chq("CREATE TABLE wanledger.%s AS wanledger.%s_local ENGINE = Distributed(bench, wanledger,"
        " %s_local, cityHash64(agent_id, seq))" % (name, name, name))
    return "wanledger.%s" % name


def cc_insert(into):
    """The TabSeparated file through clickhouse-client into `into` (`--insert_distributed_sync=1`
    with shards, like wanledger's inserts): wall seconds, and CPU seconds of the client and the
    servers (and the servers' part of it); every row counted after."""
    settings = ["--insert_distributed_sync=1"] if len(ch_http) > 1 else []
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    c0 = cpu_of(ch_pids)
    t1 = time.monotonic()
    with open(tsv) as f:
        subprocess.run(["clickhouse-client", "--port", ch_tcp[0], "--password", o.password] +
                       settings + ["--query", "INSERT INTO %s FORMAT TabSeparated" % into],
                       stdin=f, check=True)
    t = time.monotonic() - t1
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    servers = cpu_of(ch_pids) - c0
    cpu = (ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime) + servers
    got = int(chq("SELECT count() FROM %s" % into))
    assert got == n_rows, (into, got, n_rows)
    return t, cpu, servers


t_cc, cpu_cc, _ = cc_insert(cc_table("cc"))
load_cc = load()

# 6. steps 2 and 4 alternated --rounds times in this run (see the docstring)
def empty_wl():
    for n in range(len(ch_http)):
        chq("TRUNCATE TABLE wanledger.%s" % table, n)


def quiet_merges():
    """Until no ClickHouse merge runs on any shard (at most 60 s): a turn starts on a quiet
    server whichever side went before."""
    for _ in range(600):
        if all(chq("SELECT count() FROM system.merges", n).strip() == "0"
               for n in range(len(ch_http))):
            return
        time.sleep(0.1)


def round_wl(seq):
    """wanledger into its table emptied (as in step 2), emptied again after the count, as
    clickhouse-client's table is dropped after its count: no merge of one side's rows runs
    during the other side's turn. Then VACUUM of wanledger's database, so that autovacuum of this
    turn's outbox churn does not land in a later turn; its CPU is wanledger's, printed apart."""
    empty_wl()
    quiet_merges()
    c0 = (cpu_s(o.wl_pid), cpu_of(pg_pids()), cpu_of(ch_pids))
    t0, _, _ = post_all(o.port, seq)
    wait_empty()
    t = time.monotonic() - t0
    split = (cpu_s(o.wl_pid) - c0[0], cpu_of(pg_pids()) - c0[1], cpu_of(ch_pids) - c0[2])
    cpu = sum(split)
    got = int(chq("SELECT count() FROM wanledger.flow_records FINAL WHERE seq = %d" % seq))
    assert got == n_rows, (seq, got, n_rows)
    empty_wl()
    v0 = cpu_of(pg_pids())
    psql("VACUUM")
    return t, cpu, cpu_of(pg_pids()) - v0, split


def round_cc(k):
    """clickhouse-client into fresh tables like step 4's (a ReplacingMergeTree: the same rows
    again into the same table would be merged away), dropped after the count."""
    into = cc_table("cc%d" % k)
    quiet_merges()
    t, cpu, servers = cc_insert(into)
    if len(ch_http) > 1:
        chq("DROP TABLE %s" % into)
    for n in range(len(ch_http)):
        chq("DROP TABLE wanledger.cc%d_local" % k, n)
    return t, cpu, servers


rounds = []
for k in range(o.rounds):
    if k % 2 == 0:
        wl, cc = round_wl(10 + k), round_cc(k)
    else:
        cc, wl = round_cc(k), round_wl(10 + k)
    rounds.append((wl, cc, load()))

# 1. PostgreSQL only (run after 2, 3, 4 and 6: its autovacuum must not land in their CPU figures)
c0 = cpu_s(o.wlpg_pid) + cpu_of(pg_pids())
_, t_pg, lat_pg = post_all(o.pg_port, 1)
cpu_pg = cpu_s(o.wlpg_pid) + cpu_of(pg_pids()) - c0
load_pg = load()

# 5. the rows of step 1 through psql \copy into an identical table of the PostgreSQL-only database
pg_only = o.conninfo.replace("dbname=wanledger", "dbname=wl_pgonly")
copy_file = os.path.join(o.dir, "rows.copy")
subprocess.run(["psql", pg_only, "-qc", "\\copy (SELECT * FROM flow_records) TO '%s'" % copy_file],
               check=True)
# flow_records is a view since sql/024: the old table's NOT NULLs and BRIN index added to the copy
psql("CREATE TABLE copy_rows (LIKE flow_records INCLUDING ALL); ALTER TABLE copy_rows " +
     ", ".join("ALTER COLUMN %s SET NOT NULL" % c for c in (
         "window_start", "agent_id", "seq", "idx", "host", "source", "tx_bytes", "rx_bytes",
         "nfs_bytes", "nfs_ops", "namespace", "pod", "container_name")) +
     "; CREATE INDEX ON copy_rows USING brin (window_start)", pg_only)
t1 = time.monotonic()
subprocess.run(["psql", pg_only, "-qc", "\\copy copy_rows FROM '%s'" % copy_file], check=True)
t_copy = time.monotonic() - t1
got_copy = int(psql("SELECT count(*) FROM copy_rows", pg_only))
assert got_copy == n_rows, (got_copy, n_rows)
load_copy = load()


print("shards: %d, n = %d flow records per step (%d reports x %d, %d connections),"
      " TabSeparated %.1f MiB" % (len(ch_http), n_rows, o.reports, FLOWS, o.conns,
                                 os.path.getsize(tsv) / 2**20))
print("| step | wall (s) | flow records/s | load after |")
print("|---|---|---|---|")
print("| 1. PostgreSQL only: POST -> flow_records COPY + commit + 200 | %.2f | %.0f | %s |" % (t_pg, n_rows / t_pg, load_pg))
print("| 2. ClickHouse mode: POST -> commit (report + outbox block) + 200 | %.2f | %.0f | |" % (t_ack, n_rows / t_ack))
print("| 2. ClickHouse mode: POST -> in ClickHouse (none pending, FINAL count) | %.2f | %.0f | %s |" % (t_ch, n_rows / t_ch, load_ch))
print("| 3. backlog acknowledged while ClickHouse is frozen | %.2f | %.0f | |" % (t_ack2, n_rows / t_ack2))
print("| 3. backlog drained after the thaw | %.2f | %.0f | %s |" % (t_replay, n_rows / t_replay, load_bl))
print("| 4. clickhouse-client INSERT of the same rows | %.2f | %.0f | %s |" % (t_cc, n_rows / t_cc, load_cc))
print("ratio to clickhouse-client: end to end %.2fx, backlog drain %.2fx" % (t_cc / t_ch, t_cc / t_replay))
print("| 5. psql \\copy of step 1's rows into a table LIKE flow_records | %.2f | %.0f | %s |" %
      (t_copy, n_rows / t_copy, load_copy))
print("ratio to psql \\copy: PostgreSQL only end to end %.2fx, ClickHouse mode acknowledged"
      " %.2fx" % (t_copy / t_pg, t_copy / t_ack))
print("outbox at the end of step 3: %s blocks, %s flows, %.1f MiB stored (%.1f MiB decoded)" %
      (depth[0], depth[1], int(depth[2]) / 2**20, int(depth[3]) / 2**20))
print("ClickHouse on disk after step 2: %.1f MiB, %.1f bytes per flow record" %
      (on_disk / 2**20, on_disk / n_rows))
print("the sender's CPU in step 2 (bench_post, not counted anywhere above or below): %.3f us per"
      " flow record" % (cpu_sender / n_rows * 1e6))
print("PostgreSQL's CPU in step 2 by process: " + split_ch)
print("wanledger minor page faults in step 2: %.1f per report (n = %d reports)" %
      (flt_wl / o.reports, o.reports))
print("ack latency per report, PostgreSQL only: " + pct(lat_pg))
print("ack latency per report, ClickHouse mode: " + pct(lat_ch))
print("ack latency per report, ClickHouse frozen: " + pct(lat_bl))
us = lambda c: c / n_rows * 1e6
print("CPU per flow record, every process on the path: PostgreSQL only (wanledger + PostgreSQL)"
      " %.2f us; ClickHouse mode (wanledger + PostgreSQL + ClickHouse) %.2f us (%.2f + %.2f +"
      " %.2f); clickhouse-client + ClickHouse %.2f us; ratio %.2fx" %
      (us(cpu_pg), us(cpu_path), us(cpu_wl), us(cpu_pg_in_ch), us(cpu_ch_in_ch), us(cpu_cc),
       cpu_cc / cpu_path))

if rounds:
    med = lambda xs: sorted(xs)[len(xs) // 2] if len(xs) % 2 else \
        (sorted(xs)[len(xs) // 2 - 1] + sorted(xs)[len(xs) // 2]) / 2
    print("alternated rounds (6), n = %d flow records each way per round:" % n_rows)
    print("| round | first | wanledger POST -> in ClickHouse (s) | clickhouse-client (s) | ratio |"
          " path CPU us/flow (wanledger + PostgreSQL + ClickHouse; VACUUM after) | CPU us/flow (client + servers) | CPU ratio (without"
          " VACUUM) | load after |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k, ((tw, cw, vw, sp), (tc, cc, ccs), ld) in enumerate(rounds):
        print("| %d | %s | %.2f | %.2f | %.2fx | %.2f (%.2f + %.2f + %.2f; + %.2f VACUUM) |"
              " %.2f (%.2f + %.2f) | %.2fx | %s |" %
              (k + 1, "wanledger" if k % 2 == 0 else "clickhouse-client", tw, tc, tc / tw,
               us(cw), us(sp[0]), us(sp[1]), us(sp[2]), us(vw), us(cc), us(cc - ccs), us(ccs),
               cc / cw, ld))
    r = [tc / tw for (tw, _, _, _), (tc, _, _), _ in rounds]
    rc = [cc / cw for (_, cw, _, _), (_, cc, _), _ in rounds]
    print("ClickHouse servers' CPU per flow record over the rounds: median %.2f us for wanledger's"
          " inserts, %.2f us for clickhouse-client's" %
          (med([us(sp[2]) for (_, _, _, sp), _, _ in rounds]),
           med([us(ccs) for _, (_, _, ccs), _ in rounds])))
    print("ratio end to end over %d rounds: median %.2fx (min %.2fx, max %.2fx), %d of %d >= 0.7x;"
          " CPU ratio median %.2fx (min %.2fx, max %.2fx)" %
          (len(r), med(r), min(r), max(r), sum(x >= 0.7 for x in r), len(r), med(rc), min(rc),
           max(rc)))
