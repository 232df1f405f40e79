/* The program the NFS VM test runs inside the VM (linked static): `nfsvm mount` mounts NFS with
 * kernel text options; `nfsvm run` starts the NFS probe, runs three workloads with different
 * WANLEDGER_WORKFLOW values on one mount, drains the probe and prints one NFSREC line per record
 * on stdout (the serial console), which the host-side test checks. Invoked as wl-reader,
 * wl-writer, wl-flusher or wl-syncer it is one of the workloads (argv[0] names the process's
 * comm). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "llhist.h"
#include "nfs_probe.h"

#define CHUNK (64 * 1024)
/* The pod workload (nfs_vm_test.c has the same numbers) */
#define POD_WRITE (512 * 1024 + 99)
#define POD_READS 400

static int die(const char *what)
{
    fprintf(stderr, "nfsvm: %s: %s\n", what, strerror(errno));
    return 1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Tells the driver the I/O is over, then waits for stdin to close, so the driver can read this
 * process's environment while it drains. */
static int report_done_and_wait(void)
{
    char c;
    if (write(STDOUT_FILENO, "D", 1) != 1)
        return die("write to driver");
    while (read(STDIN_FILENO, &c, 1) > 0)
        ;
    return 0;
}

static int read_all(const char *path)
{
    char *buf = malloc(CHUNK);
    int fd = open(path, O_RDONLY);
    if (fd < 0 || !buf)
        return die(path);
    ssize_t n;
    while ((n = read(fd, buf, CHUNK)) > 0)
        ;
    free(buf);
    close(fd);
    return n < 0 ? die(path) : 0;
}

/* Faults every page of the file in through a shared mapping. */
static int mmap_all(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st))
        return die(path);
    volatile const char *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return die(path);
    unsigned sum = 0;
    for (off_t i = 0; i < st.st_size; i += 4096)
        sum += (unsigned char)p[i];
    munmap((void *)p, (size_t)st.st_size);
    close(fd);
    return sum == 0xffffffffu; /* keeps the loads */
}

/* readahead(2) pulls the whole file into the cache; the read() after it is served from there. */
static int readahead_all(const char *path)
{
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st))
        return die(path);
    if (readahead(fd, 0, (size_t)st.st_size))
        return die("readahead");
    close(fd);
    return read_all(path);
}

static int write_file(const char *path, long size, int *fd_out)
{
    char *buf = malloc(CHUNK);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || !buf)
        return die(path);
    for (long i = 0; i < CHUNK; i++)
        buf[i] = (char)(i * 7 + 1);
    for (long done = 0; done < size;) {
        long n = size - done < CHUNK ? size - done : CHUNK;
        if (write(fd, buf, (size_t)n) != n)
            return die(path);
        done += n;
    }
    free(buf);
    *fd_out = fd;
    return 0;
}

/* kB of page cache still dirty or under write-back, from /proc/meminfo. */
static long dirty_kb(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    char line[128];
    long total = 0, v;
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Dirty: %ld", &v) == 1 || sscanf(line, "Writeback: %ld", &v) == 1)
            total += v;
    fclose(f);
    return total;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* wl-pod DIR WFILE WSIZE RFILE N LABEL: joins the pod-shaped cgroup $NFSVM_POD_CGROUP (created
 * by vm-init.sh with the kubelet's layout), writes WSIZE bytes and fsync()s, then makes N
 * O_DIRECT reads of one CHUNK each from RFILE (one READ RPC each: rsize >= CHUNK), timing each
 * read() itself; prints "NFSPODLAT label=L n=N p50_us=.. p99_us=.. p999_us=.. max_us=.." (rank
 * ceil(q n) of the sorted timings, as the agent ranks its buckets). */
static int pod_workload(char **argv)
{
    const char *cg = getenv("NFSVM_POD_CGROUP");
    char path[512];
    if (!cg || !*cg) {
        fprintf(stderr, "wl-pod: NFSVM_POD_CGROUP is not set\n");
        return 1;
    }
    snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
    FILE *f = fopen(path, "w");
    if (!f || fprintf(f, "0\n") < 0 || fclose(f) != 0)
        return die(path);
    int fd;
    snprintf(path, sizeof(path), "%s/%s", argv[1], argv[2]);
    if (write_file(path, atol(argv[3]), &fd))
        return 1;
    if (fsync(fd) || close(fd))
        return die("fsync");
    snprintf(path, sizeof(path), "%s/%s", argv[1], argv[4]);
    int n = atoi(argv[5]);
    void *buf = NULL;
    double *t = calloc((size_t)n, sizeof(*t));
    fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0 || !t || n < 1 || posix_memalign(&buf, 4096, CHUNK))
        return die(path);
    for (int i = 0; i < n; i++) {
        off_t off = (off_t)(i % 32) * CHUNK; /* the file is at least 32 chunks */
        double a = now_s();
        if (pread(fd, buf, CHUNK, off) != CHUNK)
            return die("O_DIRECT pread");
        t[i] = (now_s() - a) * 1e6;
    }
    close(fd);
    qsort(t, (size_t)n, sizeof(*t), cmp_double);
    const double qs[] = {0.5, 0.99, 0.999, 1.0};
    double v[4];
    for (int k = 0; k < 4; k++) {
        int rank = (int)(qs[k] * n);
        if ((double)rank < qs[k] * n)
            rank++;
        v[k] = t[(rank < 1 ? 1 : rank) - 1];
    }
    fprintf(stderr, "NFSPODLAT label=%s n=%d p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f\n",
            argv[6], n, v[0], v[1], v[2], v[3]);
    free(buf);
    free(t);
    return report_done_and_wait();
}

static int workload(const char *name, int argc, char **argv)
{
    char path[512];
    if (strcmp(name, "wl-pod") == 0 && argc == 7)
        return pod_workload(argv);
    if (strcmp(name, "wl-reader") == 0 && argc == 2) {
        const char *kind[] = {"read-a", "read-b", "read-c"};
        int (*fn[])(const char *) = {read_all, mmap_all, readahead_all};
        for (int i = 0; i < 3; i++) {
            snprintf(path, sizeof(path), "%s/%s", argv[1], kind[i]);
            if (fn[i](path))
                return 1;
        }
        return report_done_and_wait();
    }
    if (strcmp(name, "wl-writer") == 0 && argc == 4) { /* DIR FILE SIZE: write, close */
        int fd;
        snprintf(path, sizeof(path), "%s/%s", argv[1], argv[2]);
        if (write_file(path, atol(argv[3]), &fd))
            return 1;
        if (close(fd))
            return die("close");
        return report_done_and_wait();
    }
    if (strcmp(name, "wl-flusher") == 0 && argc == 4) { /* DIR FILE SIZE: write, keep open */
        int fd;
        snprintf(path, sizeof(path), "%s/%s", argv[1], argv[2]);
        if (write_file(path, atol(argv[3]), &fd))
            return 1;
        /* The flusher writes it back (dirty_expire_centisecs is short in the VM); the file stays
         * open so that close() does not flush it from here. */
        double start = now_s();
        sleep(1);
        while (dirty_kb() > 64 && now_s() - start < 60)
            usleep(200000);
        fprintf(stderr, "wl-flusher: write-back waited %.1f s, %ld kB still dirty\n",
                now_s() - start, dirty_kb());
        int rc = report_done_and_wait();
        close(fd);
        return rc;
    }
    if (strcmp(name, "wl-syncer") == 0 && argc == 4) { /* DIR FILE SIZE: write, sync() */
        int fd;
        snprintf(path, sizeof(path), "%s/%s", argv[1], argv[2]);
        if (write_file(path, atol(argv[3]), &fd))
            return 1;
        sync(); /* queues the write-back to the flusher kworker and waits for it */
        int rc = report_done_and_wait();
        close(fd);
        return rc;
    }
    fprintf(stderr, "nfsvm: bad workload invocation %s\n", name);
    return 2;
}

/* Alive and not yet a zombie (the agent's parent, the init shell, reaps it later). */
static bool process_running(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

struct child {
    pid_t pid;
    int to_child;   /* closed to let it exit */
    int from_child; /* 'D' when its I/O is over */
    char workflow[64];
};

static int spawn(struct child *c, const char *workflow, char *const argv[])
{
    int in[2], out[2];
    if (pipe(in) || pipe(out))
        return die("pipe");
    snprintf(c->workflow, sizeof(c->workflow), "%s", workflow);
    c->pid = fork();
    if (c->pid < 0)
        return die("fork");
    if (c->pid == 0) {
        dup2(in[0], STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        close(in[1]);
        close(out[0]);
        setenv("WANLEDGER_WORKFLOW", workflow, 1);
        char path[64];
        snprintf(path, sizeof(path), "/bin/%s", argv[0]); /* its name becomes the comm */
        execv(path, argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->to_child = in[1];
    c->from_child = out[0];
    return 0;
}

/* tgid -> workflow, read from /proc/PID/environ while the process lives and remembered after. */
struct wf_cache {
    __u32 tgid[64];
    char workflow[64][64];
    int n;
};

static const char *workflow_of(struct wf_cache *wc, __u32 tgid)
{
    for (int i = 0; i < wc->n; i++)
        if (wc->tgid[i] == tgid)
            return wc->workflow[i];
    char path[64], env[8192];
    snprintf(path, sizeof(path), "/proc/%u/environ", tgid);
    const char *wf = "-";
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, env, sizeof(env) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n > 0) {
        env[n] = '\0';
        for (char *s = env; s < env + n; s += strlen(s) + 1)
            if (strncmp(s, "WANLEDGER_WORKFLOW=", 19) == 0)
                wf = s + 19;
    }
    if (wc->n < 64) {
        wc->tgid[wc->n] = tgid;
        snprintf(wc->workflow[wc->n], sizeof(wc->workflow[0]), "%s", wf);
        return wc->workflow[wc->n++];
    }
    return "-";
}

struct print_ctx {
    const char *label;
    struct wf_cache *wc;
};

static void print_record(const struct nfs_probe_record *r, void *arg)
{
    struct print_ctx *pc = arg;
    struct llhist h = {0};
    llhist_merge_u32(&h, r->latency);
    uint64_t hist_total = llhist_total(&h);
    printf("NFSREC label=%s wf=%s comm=%.16s tgid=%u uid=%u op=%s credit=%s bytes=%llu "
           "ops=%llu errors=%llu hist_total=%llu p50_us=%llu p99_us=%llu server=%s export=%s "
           "mnt=%s fstype=%s\n",
           pc->label, workflow_of(pc->wc, r->owner->tgid), r->owner->comm, r->owner->tgid,
           r->owner->uid, r->op, r->credit, (unsigned long long)r->bytes,
           (unsigned long long)r->ops, (unsigned long long)r->errors,
           (unsigned long long)hist_total, (unsigned long long)llhist_quantile(&h, 0.5, NULL),
           (unsigned long long)llhist_quantile(&h, 0.99, NULL), r->server, r->export, r->mountpoint,
           r->fstype);
}

static int drain(struct nfs_probe *p, struct print_ctx *pc)
{
    char err[256];
    struct nfs_probe_drops d;
    if (nfs_probe_drain(p, print_record, pc, &d, err, sizeof(err))) {
        fprintf(stderr, "nfsvm: drain: %s\n", err);
        return 1;
    }
    printf("NFSDROPS label=%s stats_full=%llu unmatched=%llu\n", pc->label,
           (unsigned long long)d.stats_full, (unsigned long long)d.unmatched);
    fflush(stdout);
    return 0;
}

/* run LABEL DIR WRITE_SIZE FLUSH_SIZE SYNC_SIZE */
static int run(int argc, char **argv)
{
    if (argc != 7) {
        fprintf(stderr, "usage: nfsvm run LABEL DIR WRITE_SIZE FLUSH_SIZE SYNC_SIZE\n");
        return 2;
    }
    const char *label = argv[2], *dir = argv[3];
    char why[512];
    struct nfs_probe *p = nfs_probe_open(why, sizeof(why));
    if (!p) {
        printf("NFSPROBE label=%s %s\n", label, why);
        return 1;
    }
    struct wf_cache wc = {.n = 0};
    struct print_ctx pc = {.label = label, .wc = &wc};
    if (drain(p, &pc)) /* whatever ran before (setup) is not part of this run */
        return 1;
    char wfile[64], ffile[64], sfile[64];
    snprintf(wfile, sizeof(wfile), "close-%s", label);
    snprintf(ffile, sizeof(ffile), "flush-%s", label);
    snprintf(sfile, sizeof(sfile), "sync-%s", label);
    char *reader[] = {"wl-reader", (char *)dir, NULL};
    char *writer[] = {"wl-writer", (char *)dir, wfile, argv[4], NULL};
    char *flusher[] = {"wl-flusher", (char *)dir, ffile, argv[5], NULL};
    char *syncer[] = {"wl-syncer", (char *)dir, sfile, argv[6], NULL};
    char pfile[64], pwrite[32], pod_n[16];
    snprintf(pfile, sizeof(pfile), "pod-%s", label);
    snprintf(pwrite, sizeof(pwrite), "%d", POD_WRITE);
    snprintf(pod_n, sizeof(pod_n), "%d", POD_READS);
    char *pod[] = {"wl-pod", (char *)dir, pfile, pwrite, "read-a", pod_n, (char *)label, NULL};
    enum { N_KIDS = 5 };
    struct child kids[N_KIDS];
    double start = now_s();
    /* The pod's O_DIRECT reads of read-a start once the reader is done: two identical READs
     * (file, offset, length) in flight at once are credited to the one that started first
     * (agentlib/nfs.bpf.c keys a request by file and offset), so overlapping them made the
     * exact per-workflow check depend on timing (tests/nfs/README.md). */
    if (spawn(&kids[0], "wf-read", reader) || spawn(&kids[1], "wf-close", writer) ||
        spawn(&kids[2], "wf-flush", flusher) || spawn(&kids[3], "wf-sync", syncer))
        return 1;
    for (int i = 0; i < N_KIDS; i++) {
        if (i == 1 && spawn(&kids[4], "wf-pod", pod))
            return 1;
        char c = 0;
        if (read(kids[i].from_child, &c, 1) != 1 || c != 'D') {
            fprintf(stderr, "nfsvm: workload %s failed\n", kids[i].workflow);
            return 1;
        }
        /* What the driver knows from spawning; the NFSREC lines resolve it from /proc. */
        printf("NFSKID label=%s wf=%s tgid=%d done_s=%.2f\n", label, kids[i].workflow,
               (int)kids[i].pid, now_s() - start);
    }
    printf("NFSTIME label=%s workloads_s=%.2f\n", label, now_s() - start);
    fflush(stdout);
    /* A wanledger-agent running beside: make it report now, while the workloads live. */
    const char *agent = getenv("NFSVM_AGENT_PID");
    const char *metrics = getenv("NFSVM_AGENT_METRICS");
    if (agent && *agent && metrics && *metrics) {
        /* Its /metrics: after two more of its 1 s windows it has drained the workloads' I/O,
         * and the scrape holds what its reports so far hold (windows_total says how many). */
        usleep(2500000);
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "wget -q -O - http://%s/metrics | sed 's/^/NFSMETRICS %s /'",
                 metrics, label);
        fflush(stdout);
        if (system(cmd) != 0)
            fprintf(stderr, "nfsvm: scraping the agent's /metrics at %s failed\n", metrics);
        fflush(stdout);
    }
    if (agent && *agent) {
        pid_t apid = (pid_t)atoi(agent);
        kill(apid, SIGTERM);
        for (int i = 0; i < 600 && process_running(apid); i++)
            usleep(100000);
    }
    int rc = drain(p, &pc);
    for (int i = 0; i < N_KIDS; i++)
        close(kids[i].to_child);
    for (int i = 0; i < N_KIDS; i++) {
        int st;
        waitpid(kids[i].pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "nfsvm: workload %s exited with %d\n", kids[i].workflow, st);
            rc = 1;
        }
    }
    sleep(1); /* commits or last requests sent at exit complete */
    rc |= drain(p, &pc);
    printf("NFSRUN label=%s rc=%d\n", label, rc);
    fflush(stdout);
    nfs_probe_close(p);
    return rc;
}

/* Is a socket inode open in any process? Scans /proc/PID/fd links ("socket:[ino]"). */
static int socket_owner(unsigned long ino)
{
    char want[64], path[600], link[64];
    snprintf(want, sizeof(want), "socket:[%lu]", ino);
    DIR *proc = opendir("/proc");
    struct dirent *pe;
    int owner = 0;
    while (proc && !owner && (pe = readdir(proc))) {
        if (pe->d_name[0] < '1' || pe->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/fd", pe->d_name);
        DIR *fds = opendir(path);
        struct dirent *fe;
        while (fds && !owner && (fe = readdir(fds))) {
            snprintf(path, sizeof(path), "/proc/%s/fd/%s", pe->d_name, fe->d_name);
            ssize_t n = readlink(path, link, sizeof(link) - 1);
            if (n > 0 && (link[n] = '\0', strcmp(link, want) == 0))
                owner = atoi(pe->d_name);
        }
        if (fds)
            closedir(fds);
    }
    if (proc)
        closedir(proc);
    return owner;
}

/* sockets LABEL: one NFSSOCK line per TCP socket with port 2049 at either end, with the pid of
 * the process holding it or "-" when only the kernel does (the NFS client's and nfsd's). */
static int list_nfs_sockets(const char *label)
{
    FILE *f = fopen("/proc/net/tcp", "r");
    char line[512];
    if (!f)
        return die("/proc/net/tcp");
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        return 1;
    }
    while (fgets(line, sizeof(line), f)) {
        unsigned lport, rport, st;
        unsigned long ino;
        if (sscanf(line, " %*d: %*x:%x %*x:%x %x %*x:%*x %*x:%*x %*x %*u %*d %lu", &lport, &rport,
                   &st, &ino) != 4 ||
            (lport != 2049 && rport != 2049) || ino == 0)
            continue;
        int owner = socket_owner(ino);
        char who[16] = "-";
        if (owner)
            snprintf(who, sizeof(who), "%d", owner);
        printf("NFSSOCK %s lport=%u rport=%u state=%02x inode=%lu owner=%s\n", label, lport, rport,
               st, ino, who);
    }
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    const char *name = basename(argv[0]);
    if (strncmp(name, "wl-", 3) == 0)
        return workload(name, argc, argv);
    if (argc == 6 && strcmp(argv[1], "mount") == 0) { /* mount SRC DIR FSTYPE OPTIONS */
        mkdir(argv[3], 0755);
        if (mount(argv[2], argv[3], argv[4], 0, argv[5]))
            return die("mount");
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "sockets") == 0)
        return list_nfs_sockets(argv[2]);
    if (argc >= 2 && strcmp(argv[1], "run") == 0)
        return run(argc, argv);
    if (argc == 2 && strcmp(argv[1], "probe") == 0) { /* just says whether the probe opens */
        char why[512];
        struct nfs_probe *p = nfs_probe_open(why, sizeof(why));
        printf("NFSPROBE %s\n", p ? "available" : why);
        nfs_probe_close(p);
        return p ? 0 : 1;
    }
    fprintf(stderr, "usage: nfsvm mount SRC DIR FSTYPE OPTIONS | run LABEL DIR WRITE FLUSH SYNC\n");
    return 2;
}
