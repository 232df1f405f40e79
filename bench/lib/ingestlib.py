"""What the ingest drivers (bench/clickhouse/drive.py, bench/pg_ingest/drive.py) share: the agent
reports they post, the poster over keep-alive connections (bench_post), and the CPU accounting of a
process and of a PostgreSQL server's processes from /proc."""
import ctypes, json, os, resource, socket, struct, subprocess, tempfile, time

FLOWS = 1000
TOKEN = "bench-agent-token-0123456789"


# WL_BENCH_BODY: "agent" (default) posts what wanledger-agent writes (agentlib/report.c
# report_json, version 2: compact JSON, every member the agent sends, those ingest ignores too:
# tx_calls, rx_calls, ppid, exe, cgroup, unit; the process once in procs[]); "agent1" the same
# in version 1, as agents before version 2 write it (the process's members in every flow);
# "minimal" the form of the sessions before 2026-12-07 (json.dumps' ", " and ": " separators,
# version 1 with the 12 members ingest keeps only).
BODY = os.environ.get("WL_BENCH_BODY", "agent")
if BODY not in ("agent", "agent1", "minimal"):
    raise SystemExit("WL_BENCH_BODY must be agent, agent1 or minimal, not %r" % BODY)
# WL_BENCH_CODING: "zstd" (default: the agent's delivery compresses with zstd at level 3,
# common/compress.c, and says Content-Encoding: zstd) or "identity" (the sessions before
# 2026-12-07). Bodies are compressed before a step's clock starts: agents compress on their hosts.
CODING = os.environ.get("WL_BENCH_CODING", "zstd")
if CODING not in ("zstd", "identity"):
    raise SystemExit("WL_BENCH_CODING must be zstd or identity, not %r" % CODING)
_zstd = None
sender_cpu_s = 0.0  # CPU seconds of the last post_all's sender (bench_post)


def zstd_compress(data, level=3):
    """data compressed by libzstd (ZSTD_compress, one frame), as the agent's compress.c does."""
    global _zstd
    if _zstd is None:
        z = ctypes.CDLL("libzstd.so.1")
        z.ZSTD_compressBound.restype = ctypes.c_size_t
        z.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
        z.ZSTD_compress.restype = ctypes.c_size_t
        z.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p,
                                    ctypes.c_size_t, ctypes.c_int]
        z.ZSTD_isError.restype = ctypes.c_uint
        z.ZSTD_isError.argtypes = [ctypes.c_size_t]
        _zstd = z
    cap = _zstd.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(cap)
    n = _zstd.ZSTD_compress(out, cap, data, len(data), level)
    if _zstd.ZSTD_isError(n):
        raise SystemExit("ZSTD_compress failed")
    return out.raw[:n]


def describe():
    """The bodies' form, for the drivers' headers."""
    return "bodies: %s form, %s" % (BODY, "zstd level 3 (Content-Encoding: zstd)"
                                    if CODING == "zstd" else "not compressed")


def report_body(r, seq, ws_text, agent="agent-%d"):
    """Agent report r: 1,000 socket flows of host h<r>, JSON as the agent posts it (BODY).
    Posters swap the seq in the text (post_all), so one body serves every round."""
    if BODY == "minimal":
        flows = [{"source": "socket", "proto": "tcp",
                  "local": "10.1.%d.%d:%d" % (r % 250, k % 250, 20000 + k),
                  "remote": "10.2.0.%d:5201" % (k % 200 + 1), "role": "client",
                  "tx_bytes": 1000 * r + k, "rx_bytes": k, "pid": 4000 + r, "uid": 1000,
                  "user": "u%d" % (r % 50), "program": "python3", "workflow": "wf%d" % (r % 20)}
                 for k in range(FLOWS)]
        return json.dumps({"version": 1, "host": "h%d" % r, "agent_id": agent % r, "seq": seq,
                           "window_start": ws_text, "flows": flows}).encode()
    # the agent's member order (agentlib/report.c, version 2): the report's one process once in
    # procs[] (procmeta describes a process in a login session's scope: user, exe, workflow,
    # cgroup, unit; no container, pod or Slurm job), each flow naming it with "proc"
    proc = {"pid": 4000 + r, "ppid": 1 + r % 97, "uid": 1000, "program": "python3",
            "user": "u%d" % (r % 50), "exe": "/usr/bin/python3.11", "workflow": "wf%d" % (r % 20),
            "cgroup": "/user.slice/user-1000.slice/session-%d.scope" % (r % 40),
            "unit": "session-%d.scope" % (r % 40)}
    flows = [{"source": "socket", "proto": "tcp",
              "local": "10.1.%d.%d:%d" % (r % 250, k % 250, 20000 + k),
              "remote": "10.2.0.%d:5201" % (k % 200 + 1), "role": "client",
              "tx_bytes": 1000 * r + k, "rx_bytes": k, "tx_calls": k % 7 + 1,
              "rx_calls": k % 5 + 1, "proc": 0}
             for k in range(FLOWS)]
    head = {"version": 2, "host": "h%d" % r, "agent_id": agent % r, "seq": seq,
            "window_start": ws_text, "window_seconds": 60, "dropped_events": 0,
            "sampling": {"k": FLOWS, "threshold": 0, "flows_seen": FLOWS},
            "spool": {"dropped_reports": 0}, "procs": [proc]}
    if BODY == "agent1":  # version 1, as agents before version 2 write it: the process in every flow
        head["version"] = 1
        del head["procs"]
        for f in flows:
            del f["proc"]
            f.update(proc)
    head["flows"] = flows
    return json.dumps(head,
                      separators=(",", ":")).encode()


def payloads(seq, bodies):
    """The bodies (built with seq 1) as sent with seq: the seq swapped, compressed (CODING)."""
    out = []
    for b in bodies:
        if seq != 1:
            sep = b"" if BODY != "minimal" else b" "  # compact JSON but for "minimal"
            swapped = b.replace(b'"seq":%s1,' % sep, b'"seq":%s%d,' % (sep, seq), 1)
            if swapped == b:
                raise SystemExit("payloads: no \"seq\" 1 to swap in a %s body" % BODY)
            b = swapped
        out.append(zstd_compress(b) if CODING == "zstd" else b)
    return out


def post_all(port, seq, bodies, conns):
    """Posts bodies (built with seq 1, sent as seq) to /v1/attributions over conns keep-alive
    connections, closed loop within each (the next as soon as the previous is acknowledged),
    with bench_post (bench/reconciler/bench_post.c; WL_BENCH_POST, which run.sh sets to its
    build's): Python's http.client cost ~0.3 us of CPU per flow record on the cores the server
    runs on. The payloads are made and written before the clock starts. Returns (start, wall
    seconds, sorted acknowledgement latencies in seconds); start is time.monotonic()'s clock."""
    global sender_cpu_s
    poster = os.environ.get("WL_BENCH_POST", "")
    if not os.access(poster, os.X_OK):
        raise SystemExit("WL_BENCH_POST=%r is not an executable: build bench_post (cmake --build"
                         " build/rel --target bench_post)" % poster)
    fd, name = tempfile.mkstemp(prefix="wl-bench-bodies-")
    try:
        with os.fdopen(fd, "wb") as f:
            for b in payloads(seq, bodies):
                f.write(struct.pack("<I", len(b)))
                f.write(b)
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([poster, str(port), str(conns), "/v1/attributions", TOKEN, CODING,
                              name], stdout=subprocess.PIPE, check=True).stdout.split()
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        sender_cpu_s = ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime
    finally:
        os.unlink(name)
    t0, wall = float(out[0]), float(out[1])
    lat = sorted(float(x) for x in out[2:])
    if len(lat) != len(bodies):
        raise SystemExit("bench_post answered %d latencies for %d bodies" % (len(lat), len(bodies)))
    return t0, wall, lat


def proc_stat(pid):
    """/proc/PID/stat's fields after the command name: [0] is field 3 (state), [1] the ppid,
    [7] minflt, [11] utime, [12] stime, [13] cutime, [14] cstime (clock ticks)."""
    with open("/proc/%s/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()


def ticks_s(v, first):
    """Seconds of the two tick fields v[first] + v[first + 1] of proc_stat: 11 the process's own
    user + system CPU, 13 that of its reaped children."""
    return (int(v[first]) + int(v[first + 1])) / os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """CPU seconds (user + system) of pid so far."""
    return ticks_s(proc_stat(pid), 11)


def minflt(pid):
    """Minor page faults of pid so far (/proc/PID/stat field 10)."""
    return int(proc_stat(pid)[7])


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
                if int(proc_stat(d)[1]) == pm:
                    out.append(int(d))
            except (OSError, ValueError):
                pass
    return out


def pg_split(pg_data):
    """CPU seconds so far of the cluster's processes by kind: {kind: seconds}. A backend's kind is
    "backend USER DB" (its process title without the client's address and state), any other
    child's its title ("walwriter", "autovacuum worker", ...); "exited children" is the postmaster's
    cutime + cstime: the CPU of children it has reaped (an autovacuum worker that ran and exited
    between two calls counts only there)."""
    out = {}
    for p in pg_pids(pg_data):
        try:
            v = proc_stat(p)
            with open("/proc/%d/cmdline" % p, "rb") as f:
                title = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if not title.startswith("postgres:"):
            kind = "postmaster"
            out["exited children"] = out.get("exited children", 0) + ticks_s(v, 13)
        else:
            words = title[len("postgres:"):].split()
            if any("(" in w or w == "[local]" for w in words):
                kind = "backend " + " ".join(words[:2])
            else:
                kind = " ".join(w for w in words if not w.endswith(":") or w == words[-1])
        out[kind] = out.get(kind, 0) + ticks_s(v, 11)
    return out


def pg_split_delta(a, b):
    """b - a by kind, largest first, as "kind 1.23 s" joined by ", "."""
    d = {k: b.get(k, 0) - a.get(k, 0) for k in set(a) | set(b)}
    return ", ".join("%s %.2f s" % (k, v) for k, v in sorted(d.items(), key=lambda kv: -kv[1])
                     if v > 0)


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
