"""What the ingest drivers (bench/clickhouse/drive.py, bench/pg_ingest/drive.py) share: the agent
reports they post, the open-loop poster over keep-alive connections, and the CPU accounting of a
process and of a PostgreSQL server's processes from /proc."""
import http.client, json, os, socket, threading, time

FLOWS = 1000
TOKEN = "bench-agent-token-0123456789"


def report_body(r, seq, ws_text, agent="agent-%d"):
    """Agent report r: 1,000 socket flows of host h<r>, JSON as the agent posts it. Posters swap
    the seq in the text (post_all), so one body serves every round."""
    flows = [{"source": "socket", "proto": "tcp",
              "local": "10.1.%d.%d:%d" % (r % 250, k % 250, 20000 + k),
              "remote": "10.2.0.%d:5201" % (k % 200 + 1), "role": "client",
              "tx_bytes": 1000 * r + k, "rx_bytes": k, "pid": 4000 + r, "uid": 1000,
              "user": "u%d" % (r % 50), "program": "python3", "workflow": "wf%d" % (r % 20)}
             for k in range(FLOWS)]
    return json.dumps({"version": 1, "host": "h%d" % r, "agent_id": agent % r, "seq": seq,
                       "window_start": ws_text, "flows": flows}).encode()


def post_all(port, seq, bodies, conns):
    """Posts bodies (built with seq 1, sent as seq) to /v1/attributions over conns keep-alive
    connections, open loop within each (the next as soon as the previous is acknowledged).
    Returns (start, wall seconds, sorted acknowledgement latencies in seconds)."""
    lat, lock = [], threading.Lock()

    def client(part):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        for b in part:
            if seq != 1:
                b = b.replace(b'"seq": 1,', b'"seq": %d,' % seq, 1)
            t = time.monotonic()
            c.request("POST", "/v1/attributions", b, {"Authorization": "Bearer " + TOKEN,
                                                      "Content-Type": "application/json"})
            resp = c.getresponse()
            resp.read()
            if resp.status != 200:
                raise SystemExit("HTTP %d on port %d" % (resp.status, port))
            with lock:
                lat.append(time.monotonic() - t)

    t0 = time.monotonic()
    ts = [threading.Thread(target=client, args=(bodies[i::conns],)) for i in range(conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    lat.sort()
    return t0, time.monotonic() - t0, lat


def cpu_s(pid):
    """CPU seconds (user + system) of pid so far."""
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")


def minflt(pid):
    """Minor page faults of pid so far (/proc/PID/stat field 10)."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def cpu_of(pids):
    """The sum of cpu_s over the pids still alive."""
    t = 0.0
    for p in pids:
        try:
            t += cpu_s(p)
        except OSError:
            pass
    return t


def pg_pids(pg_data):
    """The postmaster of the cluster in pg_data and its children alive now."""
    with open(os.path.join(pg_data, "postmaster.pid")) as f:
        pm = int(f.readline())
    out = [pm]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pm:
                        out.append(int(d))
            except (OSError, ValueError):
                pass
    return out


def wait_port(port):
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("nothing listens on %d" % port)


def load():
    return " ".join(open("/proc/loadavg").read().split()[:3])
