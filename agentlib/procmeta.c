/* Owner metadata per process from /proc and the cgroup tree, cached per (pid, start time). */
#include "procmeta.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NBUCKETS       16384
#define MAX_ENV        16
#define PARENT_DEPTH   16
#define ENV_READ_LIMIT (1 << 20)

/* One per (process, uid, cgroup id) the kernel recorded: a process that changes uid or moves to
 * another cgroup while it talks has flows under each (socket.bpf.c keys them so), and each gets
 * the user name and cgroup path it had. */
struct proc_entry {
    struct proc_entry *next;
    uint32_t pid;
    uint32_t uid;       /* as recorded; UINT32_MAX: looked up from /proc (a parent) */
    uint64_t cgroup_id; /* as recorded; 0: looked up from /proc */
    uint64_t start_ns;
    char comm[16];
    unsigned last_used; /* join counter */
    struct flow_meta m;
};

struct cg_path {
    uint64_t id;
    char *path;
};

struct procmeta {
    char *env[MAX_ENV];
    size_t n_env;
    char proc_root[128];
    char cgroup_root[128];
    long ticks_per_sec;
    struct proc_entry *buckets[NBUCKETS];
    size_t count;
    unsigned joins;
    struct cg_path *cgs;
    size_t n_cgs, cap_cgs;
    unsigned cg_scanned_at; /* join number of the last full cgroup walk */
    struct kubepods *kube;
};

int procmeta_cgroup2_root(char *out, size_t outlen)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[1024];
    int rc = -1;
    if (!f)
        return -1;
    while (rc != 0 && fgets(line, sizeof(line), f)) {
        /* "36 25 0:31 / /sys/fs/cgroup rw,... shared:9 - cgroup2 cgroup2 rw" */
        char mnt[512], fstype[64];
        const char *sep = strstr(line, " - ");
        if (!sep || sscanf(sep + 3, "%63s", fstype) != 1 || strcmp(fstype, "cgroup2") != 0)
            continue;
        if (sscanf(line, "%*s %*s %*s %*s %511s", mnt) == 1) {
            snprintf(out, outlen, "%s", mnt);
            rc = 0;
        }
    }
    fclose(f);
    return rc;
}

struct procmeta *procmeta_new(const char *const *workflow_env, size_t n_env, const char *proc_root,
                              const char *cgroup_root, char *err, size_t errlen)
{
    struct procmeta *pm;
    if (n_env > MAX_ENV) {
        snprintf(err, errlen, "at most %d workflow environment variables, got %zu", MAX_ENV, n_env);
        return NULL;
    }
    pm = calloc(1, sizeof(*pm));
    if (!pm) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n_env; i++) {
        pm->env[i] = strdup(workflow_env[i]);
        if (!pm->env[i]) {
            snprintf(err, errlen, "out of memory");
            procmeta_free(pm);
            return NULL;
        }
        pm->n_env++;
    }
    snprintf(pm->proc_root, sizeof(pm->proc_root), "%s", proc_root ? proc_root : "/proc");
    if (cgroup_root)
        snprintf(pm->cgroup_root, sizeof(pm->cgroup_root), "%s", cgroup_root);
    else if (procmeta_cgroup2_root(pm->cgroup_root, sizeof(pm->cgroup_root)) != 0)
        snprintf(pm->cgroup_root, sizeof(pm->cgroup_root), "/sys/fs/cgroup");
    pm->ticks_per_sec = sysconf(_SC_CLK_TCK);
    if (pm->ticks_per_sec <= 0)
        pm->ticks_per_sec = 100;
    pm->cg_scanned_at = UINT32_MAX;
    if (!(pm->kube = kubepods_new(NULL))) {
        snprintf(err, errlen, "out of memory");
        procmeta_free(pm);
        return NULL;
    }
    return pm;
}

void procmeta_free(struct procmeta *pm)
{
    if (!pm)
        return;
    for (size_t i = 0; i < NBUCKETS; i++) {
        struct proc_entry *e = pm->buckets[i];
        while (e) {
            struct proc_entry *n = e->next;
            free(e);
            e = n;
        }
    }
    for (size_t i = 0; i < pm->n_env; i++)
        free(pm->env[i]);
    for (size_t i = 0; i < pm->n_cgs; i++)
        free(pm->cgs[i].path);
    free(pm->cgs);
    kubepods_free(pm->kube);
    free(pm);
}

int procmeta_set_kube_logs(struct procmeta *pm, const char *log_root)
{
    struct kubepods *k = kubepods_new(log_root);
    if (!k)
        return -1;
    kubepods_free(pm->kube);
    pm->kube = k;
    return 0;
}

/* Namespace, pod and container name of a pod cgroup; retried on later joins while unknown (the
 * kubelet's directories may appear after the process; kubepods rate-limits the rescans). */
static void kube_of(struct procmeta *pm, struct flow_meta *m)
{
    if (m->pod_uid[0] && (!m->kube.namespace_[0] || !m->kube.container[0]))
        kubepods_lookup(pm->kube, m->pod_uid, m->container, &m->kube);
}

static size_t bucket_of(uint32_t pid, uint64_t start_ns)
{
    uint64_t h = (pid * 0x9E3779B97F4A7C15ULL) ^ (start_ns * 0xC2B2AE3D27D4EB4FULL);
    return (size_t)((h ^ (h >> 29)) % NBUCKETS);
}

/* Reads a whole small file (NUL-terminated; *len without the NUL); NULL on error. */
static char *read_file(const char *path, size_t limit, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (fd < 0)
        return NULL;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            if (cap >= limit)
                break;
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                close(fd);
                return NULL;
            }
            buf = nb;
        }
        ssize_t r = read(fd, buf + n, cap - n - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* Start time (ns since boot, tick precision) and parent of a live pid from /proc/PID/stat. */
static int stat_of(const struct procmeta *pm, uint32_t pid, uint64_t *start_ns, uint32_t *ppid)
{
    char path[192];
    snprintf(path, sizeof(path), "%s/%u/stat", pm->proc_root, pid);
    char *s = read_file(path, 8192, NULL);
    if (!s)
        return -1;
    /* comm may contain spaces and ')': fields resume after the last ')' */
    char *p = strrchr(s, ')');
    unsigned long long ticks = 0;
    unsigned parent = 0;
    int field = 2, ok = 0;
    if (p) {
        char *save = NULL;
        for (char *tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
            field++;
            if (field == 4)
                parent = (unsigned)strtoul(tok, NULL, 10);
            if (field == 22) {
                ticks = strtoull(tok, NULL, 10);
                ok = 1;
                break;
            }
        }
    }
    free(s);
    if (!ok)
        return -1;
    *start_ns = ticks * (1000000000ULL / (uint64_t)pm->ticks_per_sec);
    *ppid = parent;
    return 0;
}

/* True when /proc/PID is the same process the kernel recorded (same start, tick precision). */
static bool same_process(const struct procmeta *pm, uint32_t pid, uint64_t start_ns, uint32_t *ppid)
{
    uint64_t s;
    uint64_t tick = 1000000000ULL / (uint64_t)pm->ticks_per_sec;
    if (stat_of(pm, pid, &s, ppid))
        return false;
    uint64_t want = start_ns / tick * tick;
    return s == want || s + tick == want || s == want + tick;
}

static void user_of(uint32_t uid, char *out, size_t outlen)
{
    struct passwd pw, *res = NULL;
    char buf[1024];
    if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
        snprintf(out, outlen, "%s", pw.pw_name);
    else
        snprintf(out, outlen, "%u", uid);
}

/* Workflow from the process's environment: the first configured variable that is set. */
static void workflow_from_env(const struct procmeta *pm, uint32_t pid, char *out, size_t outlen)
{
    char path[192];
    size_t len = 0;
    if (pm->n_env == 0)
        return;
    snprintf(path, sizeof(path), "%s/%u/environ", pm->proc_root, pid);
    char *env = read_file(path, ENV_READ_LIMIT, &len);
    if (!env)
        return;
    for (size_t v = 0; v < pm->n_env && !out[0]; v++) {
        size_t nl = strlen(pm->env[v]);
        for (size_t off = 0; off < len; off += strlen(env + off) + 1) {
            const char *kv = env + off;
            if (strncmp(kv, pm->env[v], nl) == 0 && kv[nl] == '=' && kv[nl + 1]) {
                snprintf(out, outlen, "%s", kv + nl + 1);
                break;
            }
        }
    }
    free(env);
}

static bool is_hex_run(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]))
            return false;
    return true;
}

void procmeta_parse_cgroup(const char *path, struct flow_meta *m)
{
    char buf[512];
    char *save = NULL;
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        size_t n = strlen(c);
        /* container: a 64-hex id, bare (cgroupfs driver) or as docker-/cri-containerd-/crio-
         * <id>.scope (systemd driver) */
        const char *dash = strrchr(c, '-');
        const char *id = dash ? dash + 1 : c;
        size_t idn = strlen(id);
        if (idn >= 6 && strcmp(id + idn - 6, ".scope") == 0)
            idn -= 6;
        if (idn == 64 && is_hex_run(id, 64)) {
            snprintf(m->container, sizeof(m->container), "%.64s", id);
            continue;
        }
        /* Kubernetes pod: "pod<uid>" (cgroupfs) or "kubepods-...-pod<uid with _>.slice" */
        const char *pod = strncmp(c, "pod", 3) == 0 ? c : strstr(c, "-pod");
        if (pod && pod != c)
            pod++;
        if (strstr(path, "kubepods") && pod) {
            char uid[40];
            size_t k = 0;
            for (const char *q = pod + 3; *q && *q != '.' && k + 1 < sizeof(uid); q++)
                uid[k++] = *q == '_' ? '-' : *q;
            uid[k] = '\0';
            if (k >= 32)
                snprintf(m->pod_uid, sizeof(m->pod_uid), "%s", uid);
            continue;
        }
        /* Slurm: ".../job_<id>/step_..." */
        if (strncmp(c, "job_", 4) == 0 && n > 4 && isdigit((unsigned char)c[4])) {
            snprintf(m->slurm_job, sizeof(m->slurm_job), "%s", c + 4);
            continue;
        }
        /* systemd unit: the innermost *.service, else *.scope */
        if (n > 8 && strcmp(c + n - 8, ".service") == 0)
            snprintf(m->unit, sizeof(m->unit), "%s", c);
        else if (n > 6 && strcmp(c + n - 6, ".scope") == 0 && !strstr(m->unit, ".service"))
            snprintf(m->unit, sizeof(m->unit), "%s", c);
    }
}

static void cg_remember(struct procmeta *pm, uint64_t id, const char *path)
{
    for (size_t i = 0; i < pm->n_cgs; i++)
        if (pm->cgs[i].id == id)
            return;
    if (pm->n_cgs == pm->cap_cgs) {
        size_t cap = pm->cap_cgs ? pm->cap_cgs * 2 : 64;
        struct cg_path *v = realloc(pm->cgs, cap * sizeof(*v));
        if (!v)
            return;
        pm->cgs = v;
        pm->cap_cgs = cap;
    }
    char *p = strdup(path);
    if (!p)
        return;
    pm->cgs[pm->n_cgs].id = id;
    pm->cgs[pm->n_cgs].path = p;
    pm->n_cgs++;
}

/* Walks the cgroup v2 tree recording every directory's inode (= cgroup id); paths longer than
 * PATH_MAX are skipped. */
static void cg_walk(struct procmeta *pm, const char *rel, int depth)
{
    char dir[PATH_MAX];
    int len = snprintf(dir, sizeof(dir), "%s%s", pm->cgroup_root, rel);
    if (len < 0 || (size_t)len >= sizeof(dir) || depth > 32)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        char sub[PATH_MAX], full[PATH_MAX];
        struct stat st;
        int a = snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name);
        if (a < 0 || (size_t)a >= sizeof(sub))
            continue;
        int b = snprintf(full, sizeof(full), "%s/%s", dir, de->d_name);
        if (b < 0 || (size_t)b >= sizeof(full))
            continue;
        if (stat(full, &st) == 0)
            cg_remember(pm, (uint64_t)st.st_ino, sub);
        cg_walk(pm, sub, depth + 1);
    }
    closedir(d);
}

/* Path of a cgroup id ("/" for the root); walks the tree at most once per join on a miss. */
static void cgroup_path_of(struct procmeta *pm, uint64_t id, char *out, size_t outlen)
{
    struct stat st;
    if (stat(pm->cgroup_root, &st) == 0 && (uint64_t)st.st_ino == id) {
        snprintf(out, outlen, "/");
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < pm->n_cgs; i++) {
            if (pm->cgs[i].id == id) {
                snprintf(out, outlen, "%s", pm->cgs[i].path);
                return;
            }
        }
        if (pm->cg_scanned_at == pm->joins)
            return;
        pm->cg_scanned_at = pm->joins;
        cg_walk(pm, "", 0);
    }
}

/* The entry of (pid, start_ns) with this uid and cgroup id; uid UINT32_MAX / cgroup_id 0 match
 * any (a parent's lookup). */
static struct proc_entry *find(struct procmeta *pm, uint32_t pid, uint64_t start_ns, uint32_t uid,
                               uint64_t cgroup_id)
{
    for (struct proc_entry *e = pm->buckets[bucket_of(pid, start_ns)]; e; e = e->next)
        if (e->pid == pid && e->start_ns == start_ns && (uid == UINT32_MAX || e->uid == uid) &&
            (cgroup_id == 0 || e->cgroup_id == cgroup_id))
            return e;
    return NULL;
}

static struct proc_entry *resolve(struct procmeta *pm, uint32_t pid, uint64_t start_ns,
                                  uint32_t ppid, uint32_t uid, uint64_t cgroup_id, const char *comm,
                                  int depth);

/* The workflow of a live parent (and its ancestors when it has none). */
static void workflow_from_parent(struct procmeta *pm, uint32_t ppid, char *out, size_t outlen,
                                 int depth)
{
    uint64_t start;
    uint32_t grand;
    if (ppid <= 1 || depth >= PARENT_DEPTH || stat_of(pm, ppid, &start, &grand))
        return;
    struct proc_entry *pe = resolve(pm, ppid, start, grand, UINT32_MAX, 0, NULL, depth + 1);
    if (pe)
        snprintf(out, outlen, "%s", pe->m.workflow);
}

/* Finds or creates the entry of a process. uid UINT32_MAX / cgroup_id 0 / comm NULL: not
 * recorded by the kernel (a parent looked up from /proc): taken from /proc instead. */
static struct proc_entry *resolve(struct procmeta *pm, uint32_t pid, uint64_t start_ns,
                                  uint32_t ppid, uint32_t uid, uint64_t cgroup_id, const char *comm,
                                  int depth)
{
    struct proc_entry *e = find(pm, pid, start_ns, uid, cgroup_id);
    if (e && (!comm || strncmp(e->comm, comm, sizeof(e->comm)) == 0)) {
        e->last_used = pm->joins;
        kube_of(pm, &e->m);
        return e;
    }
    bool fresh = !e;
    if (fresh) {
        e = calloc(1, sizeof(*e));
        if (!e)
            return NULL;
        e->pid = pid;
        e->uid = uid;
        e->cgroup_id = cgroup_id;
        e->start_ns = start_ns;
        size_t b = bucket_of(pid, start_ns);
        e->next = pm->buckets[b];
        pm->buckets[b] = e;
        pm->count++;
    }
    e->last_used = pm->joins;
    if (comm)
        snprintf(e->comm, sizeof(e->comm), "%s", comm);

    /* exec (new comm) or first sight: read what /proc still has of this very process */
    uint32_t live_ppid = 0;
    bool alive = same_process(pm, pid, start_ns, &live_ppid);
    char path[192];
    if (alive) {
        if (!comm) {
            snprintf(path, sizeof(path), "%s/%u/comm", pm->proc_root, pid);
            char *c = read_file(path, 256, NULL);
            if (c) {
                c[strcspn(c, "\n")] = '\0';
                snprintf(e->comm, sizeof(e->comm), "%s", c);
                free(c);
            }
        }
        snprintf(path, sizeof(path), "%s/%u/exe", pm->proc_root, pid);
        ssize_t n = readlink(path, e->m.exe, sizeof(e->m.exe) - 1);
        e->m.exe[n > 0 ? n : 0] = '\0';
        if (uid == UINT32_MAX) {
            struct stat st;
            snprintf(path, sizeof(path), "%s/%u", pm->proc_root, pid);
            if (stat(path, &st) == 0)
                uid = st.st_uid;
        }
        e->m.workflow[0] = '\0';
        workflow_from_env(pm, pid, e->m.workflow, sizeof(e->m.workflow));
        if (ppid == 0)
            ppid = live_ppid;
    }
    if (uid != UINT32_MAX && fresh)
        user_of(uid, e->m.user, sizeof(e->m.user));
    if (fresh) {
        if (cgroup_id) {
            cgroup_path_of(pm, cgroup_id, e->m.cgroup, sizeof(e->m.cgroup));
        } else if (alive) {
            snprintf(path, sizeof(path), "%s/%u/cgroup", pm->proc_root, pid);
            char *c = read_file(path, 65536, NULL);
            char *p = c ? strstr(c, "0::") : NULL;
            if (p) {
                p += 3;
                p[strcspn(p, "\n")] = '\0';
                snprintf(e->m.cgroup, sizeof(e->m.cgroup), "%s", p);
            }
            free(c);
        }
        procmeta_parse_cgroup(e->m.cgroup, &e->m);
    }
    kube_of(pm, &e->m);
    /* else from the cgroup: a Slurm job is what SLURM_JOB_ID would have said */
    if (!e->m.workflow[0] && e->m.slurm_job[0]) {
        for (size_t i = 0; i < pm->n_env; i++)
            if (strcmp(pm->env[i], "SLURM_JOB_ID") == 0)
                snprintf(e->m.workflow, sizeof(e->m.workflow), "%s", e->m.slurm_job);
    }
    /* else the parent's */
    if (!e->m.workflow[0])
        workflow_from_parent(pm, ppid, e->m.workflow, sizeof(e->m.workflow), depth);
    return e;
}

void procmeta_join(struct procmeta *pm, struct flowset *fs)
{
    pm->joins++;
    procmeta_join_more(pm, fs);
}

void procmeta_join_more(struct procmeta *pm, struct flowset *fs)
{
    for (size_t i = 0; i < fs->n; i++) {
        struct flow_rec *r = &fs->v[i];
        struct proc_entry *e = resolve(pm, r->owner.pid, r->owner.start_ns, r->owner.ppid,
                                       r->owner.uid, r->owner.cgroup_id, r->owner.comm, 0);
        r->meta = e ? &e->m : NULL;
    }
}

int procmeta_live(struct procmeta *pm, uint32_t pid, const struct flow_meta **m, char *comm,
                  size_t commlen)
{
    uint64_t start;
    uint32_t ppid;
    char path[192];
    if (stat_of(pm, pid, &start, &ppid))
        return -1;
    snprintf(path, sizeof(path), "%s/%u/comm", pm->proc_root, pid);
    char *c = read_file(path, 256, NULL);
    if (!c)
        return -1;
    c[strcspn(c, "\n")] = '\0';
    /* the current comm: an exec since the last look re-reads the environment */
    struct proc_entry *e = resolve(pm, pid, start, ppid, UINT32_MAX, 0, c, 0);
    snprintf(comm, commlen, "%s", e ? e->comm : c);
    free(c);
    if (!e)
        return -1;
    *m = &e->m;
    return 0;
}

void procmeta_prune(struct procmeta *pm, unsigned windows)
{
    for (size_t b = 0; b < NBUCKETS; b++) {
        struct proc_entry **pp = &pm->buckets[b];
        while (*pp) {
            struct proc_entry *e = *pp;
            if (pm->joins - e->last_used > windows) {
                *pp = e->next;
                free(e);
                pm->count--;
            } else {
                pp = &e->next;
            }
        }
    }
}
