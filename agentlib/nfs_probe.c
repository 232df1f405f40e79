/* NFS probe, user side: load/attach, per-window drain by generation flip, mountinfo join. */
#include "nfs_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "nfs.skel.h"

#define MOUNTINFO_PATH "/proc/self/mountinfo"
/* After flipping the generation, the kernel programs that read the old one finish within
 * microseconds (they run with preemption off); wait this long before reading the old records. */
#define DRAIN_GRACE_NS 2000000L

struct nfs_probe {
    struct nfs *skel;
    int mountinfo_fd; /* kept open: poll() says POLLPRI when the mount table changes */
    bool mounts_loaded;
    struct nfs_probe_mount *mounts;
    size_t n_mounts;
    uint64_t drops_seen[NFS_DROP_NSLOTS];
};

static const char *const op_names[NFS_OP_COUNT] = {"read", "write", "commit"};
static const char *const credit_names[] = {"task", "dirtier", "kernel"};

static bool path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* The nfs tracepoints in tracefs, wherever it is mounted. */
static bool nfs_tracepoints_present(void)
{
    return path_exists("/sys/kernel/tracing/events/nfs/nfs_initiate_read") ||
           path_exists("/sys/kernel/debug/tracing/events/nfs/nfs_initiate_read");
}

static bool tracefs_mounted(void)
{
    return path_exists("/sys/kernel/tracing/events") ||
           path_exists("/sys/kernel/debug/tracing/events");
}

struct nfs_probe *nfs_probe_open(char *why, size_t why_len)
{
    struct nfs_probe *p = NULL;
    int err;

    /* The records are CO-RE-relocated against the nfs module's BTF (or vmlinux's when NFS is
     * built in, in which case its tracepoints are in tracefs). */
    bool module_btf = path_exists("/sys/kernel/btf/nfs");
    if (!module_btf && !nfs_tracepoints_present()) {
        snprintf(why, why_len,
                 "unavailable: this kernel has no NFS client (no /sys/kernel/btf/nfs and no "
                 "nfs:nfs_initiate_read tracepoint%s)",
                 tracefs_mounted() ? "" : "; tracefs is not mounted either");
        return NULL;
    }
    if (!tracefs_mounted()) {
        snprintf(why, why_len,
                 "unavailable: tracefs is not mounted (mount -t tracefs nodev "
                 "/sys/kernel/tracing), so the nfs tracepoints cannot be attached");
        return NULL;
    }
    p = calloc(1, sizeof(*p));
    if (!p) {
        snprintf(why, why_len, "unavailable: out of memory");
        return NULL;
    }
    p->mountinfo_fd = -1;
    p->skel = nfs__open();
    if (!p->skel) {
        snprintf(why, why_len, "unavailable: opening the BPF object failed: %s", strerror(errno));
        goto cleanup;
    }
    err = nfs__load(p->skel);
    if (err) {
        snprintf(why, why_len,
                 "unavailable: loading the NFS probe failed (%s): the kernel rejected it or its "
                 "nfs BTF does not match the tracepoint records",
                 strerror(-err));
        goto cleanup;
    }
    struct {
        struct bpf_program *prog;
        struct bpf_link **link;
    } tps[] = {
        {p->skel->progs.nfs_initiate_read, &p->skel->links.nfs_initiate_read},
        {p->skel->progs.nfs_readpage_done, &p->skel->links.nfs_readpage_done},
        {p->skel->progs.nfs_initiate_write, &p->skel->links.nfs_initiate_write},
        {p->skel->progs.nfs_writeback_done, &p->skel->links.nfs_writeback_done},
        {p->skel->progs.nfs_initiate_commit, &p->skel->links.nfs_initiate_commit},
        {p->skel->progs.nfs_commit_done, &p->skel->links.nfs_commit_done},
    };
    for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
        *tps[i].link = bpf_program__attach(tps[i].prog);
        if (!*tps[i].link) {
            snprintf(why, why_len, "unavailable: attaching %s failed: %s",
                     bpf_program__section_name(tps[i].prog), strerror(errno));
            goto cleanup;
        }
    }
    /* Dirtying is traced under either name; without it worker write-back is credited to the
     * kernel (reported as credit "kernel"), so it is not a reason to give up. */
    p->skel->links.nfs_dirty_folio = bpf_program__attach(p->skel->progs.nfs_dirty_folio);
    if (!p->skel->links.nfs_dirty_folio)
        p->skel->links.nfs_dirty_page = bpf_program__attach(p->skel->progs.nfs_dirty_page);
    if (!p->skel->links.nfs_dirty_folio && !p->skel->links.nfs_dirty_page) {
        snprintf(why, why_len,
                 "unavailable: attaching writeback_dirty_folio/writeback_dirty_page failed: %s",
                 strerror(errno));
        goto cleanup;
    }
    p->mountinfo_fd = open(MOUNTINFO_PATH, O_RDONLY | O_CLOEXEC);
    return p;

cleanup:
    nfs_probe_close(p);
    return NULL;
}

void nfs_probe_close(struct nfs_probe *p)
{
    if (!p)
        return;
    nfs__destroy(p->skel);
    if (p->mountinfo_fd >= 0)
        close(p->mountinfo_fd);
    free(p->mounts);
    free(p);
}

/* Copies one space-separated mountinfo field, undoing the \ooo octal escapes of paths. Returns
 * the position after the field, or NULL when there is none. */
static const char *next_field(const char *s, char *out, size_t out_len)
{
    size_t n = 0;
    while (*s == ' ')
        s++;
    if (*s == '\0' || *s == '\n')
        return NULL;
    while (*s && *s != ' ' && *s != '\n') {
        char c = *s++;
        if (c == '\\' && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' &&
            s[2] <= '7') {
            c = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
            s += 3;
        }
        if (n + 1 < out_len)
            out[n++] = c;
    }
    if (out_len)
        out[n] = '\0';
    return s;
}

/* Copies len bytes of src (cut to fit) and a NUL. */
static void copy_str(char *dst, size_t dst_len, const char *src, size_t len)
{
    if (len >= dst_len)
        len = dst_len - 1;
    memcpy(dst, src, len);
    dst[len] = '\0';
}

/* The value of option name in a comma-separated list, exact name match ("addr" is not
 * "mountaddr"). */
static bool find_option(const char *opts, const char *name, char *out, size_t out_len)
{
    size_t name_len = strlen(name);
    const char *s = opts;
    while (*s) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        if (len > name_len && strncmp(s, name, name_len) == 0 && s[name_len] == '=') {
            size_t vlen = len - name_len - 1;
            if (vlen >= out_len)
                vlen = out_len - 1;
            memcpy(out, s + name_len + 1, vlen);
            out[vlen] = '\0';
            return true;
        }
        if (!end)
            break;
        s = end + 1;
    }
    return false;
}

int nfs_probe_parse_mountinfo_line(const char *line, struct nfs_probe_mount *m)
{
    char field[1024], devs[32], root[8], fstype[32], source[512], superopts[1024];
    const char *s = line;
    unsigned maj, min;

    memset(m, 0, sizeof(*m));
    /* mount id, parent id, major:minor, root, mount point, options, optional..., "-" */
    if (!(s = next_field(s, field, sizeof(field))) || !(s = next_field(s, field, sizeof(field))) ||
        !(s = next_field(s, devs, sizeof(devs))) || !(s = next_field(s, root, sizeof(root))) ||
        !(s = next_field(s, m->mountpoint, sizeof(m->mountpoint))) ||
        !(s = next_field(s, field, sizeof(field))))
        return -1;
    for (;;) {
        if (!(s = next_field(s, field, sizeof(field))))
            return -1;
        if (strcmp(field, "-") == 0)
            break;
    }
    if (!(s = next_field(s, fstype, sizeof(fstype))) ||
        !(s = next_field(s, source, sizeof(source))))
        return -1;
    if (!next_field(s, superopts, sizeof(superopts)))
        superopts[0] = '\0';
    if (sscanf(devs, "%u:%u", &maj, &min) != 2)
        return -1;
    if (strcmp(fstype, "nfs") != 0 && strcmp(fstype, "nfs4") != 0)
        return 0;
    m->dev = (uint32_t)(maj << 20 | (min & 0xfffff));
    copy_str(m->fstype, sizeof(m->fstype), fstype, strlen(fstype));

    /* source is "host:/export" or "[v6addr]:/export". */
    const char *colon = source[0] == '[' ? strstr(source, "]:") : strchr(source, ':');
    if (colon && source[0] == '[')
        colon++;
    const char *export = colon ? colon + 1 : source;
    copy_str(m->export, sizeof(m->export), export, strlen(export));

    /* The server address the client talks to is addr=; port= only when not 2049. */
    char addr[48] = "", port[8] = "2049";
    if (!find_option(superopts, "addr", addr, sizeof(addr))) {
        size_t hlen = colon ? (size_t)(colon - source) : strlen(source);
        if (hlen >= sizeof(addr))
            hlen = sizeof(addr) - 1;
        memcpy(addr, source, hlen);
        addr[hlen] = '\0';
    }
    find_option(superopts, "port", port, sizeof(port));
    if (strcmp(port, "0") == 0)
        snprintf(port, sizeof(port), "2049");
    if (strchr(addr, ':') && addr[0] != '[')
        snprintf(m->server, sizeof(m->server), "[%s]:%s", addr, port);
    else
        snprintf(m->server, sizeof(m->server), "%s:%s", addr, port);
    return 1;
}

/* Rereads the NFS mounts. Superblocks that disappeared stay known (their last records may still
 * be in the kernel maps); a reappearing dev takes the new mount's names. */
static int load_mounts(struct nfs_probe *p, char *err, size_t err_len)
{
    FILE *f = fopen(MOUNTINFO_PATH, "re");
    if (!f) {
        snprintf(err, err_len, "%s: %s", MOUNTINFO_PATH, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    int rc = 0;
    while (getline(&line, &cap, f) > 0) {
        struct nfs_probe_mount m;
        if (nfs_probe_parse_mountinfo_line(line, &m) != 1)
            continue;
        size_t i;
        for (i = 0; i < p->n_mounts && p->mounts[i].dev != m.dev; i++)
            ;
        if (i < p->n_mounts) {
            p->mounts[i] = m; /* bind mounts of one superblock: the last line wins */
            continue;
        }
        struct nfs_probe_mount *grown = realloc(p->mounts, (p->n_mounts + 1) * sizeof(m));
        if (!grown) {
            snprintf(err, err_len, "%s: out of memory", MOUNTINFO_PATH);
            rc = -1;
            break;
        }
        p->mounts = grown;
        p->mounts[p->n_mounts++] = m;
    }
    free(line);
    fclose(f);
    if (rc == 0)
        p->mounts_loaded = true;
    return rc;
}

static bool mounts_changed(struct nfs_probe *p)
{
    if (p->mountinfo_fd < 0)
        return true;
    struct pollfd pfd = {.fd = p->mountinfo_fd, .events = POLLPRI};
    if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & (POLLPRI | POLLERR)))
        return false;
    /* Rearm: the next change is reported after a reread from the start. */
    char buf[4096];
    lseek(p->mountinfo_fd, 0, SEEK_SET);
    while (read(p->mountinfo_fd, buf, sizeof(buf)) > 0)
        ;
    return true;
}

static const struct nfs_probe_mount *find_mount(const struct nfs_probe *p, uint32_t dev)
{
    for (size_t i = 0; i < p->n_mounts; i++)
        if (p->mounts[i].dev == dev)
            return &p->mounts[i];
    return NULL;
}

static int read_drops(struct nfs_probe *p, struct nfs_probe_drops *out, char *err, size_t err_len)
{
    uint64_t now[NFS_DROP_NSLOTS] = {0};
    int fd = bpf_map__fd(p->skel->maps.drops);
    for (uint32_t i = 0; i < NFS_DROP_NSLOTS; i++) {
        if (bpf_map_lookup_elem(fd, &i, &now[i])) {
            snprintf(err, err_len, "reading the NFS drop counters: %s", strerror(errno));
            return -1;
        }
    }
    if (out) {
        out->stats_full = now[NFS_DROP_STATS_FULL] - p->drops_seen[NFS_DROP_STATS_FULL];
        out->unmatched = now[NFS_DROP_UNMATCHED] - p->drops_seen[NFS_DROP_UNMATCHED];
    }
    memcpy(p->drops_seen, now, sizeof(now));
    return 0;
}

int nfs_probe_drain(struct nfs_probe *p, nfs_probe_record_fn fn, void *arg,
                    struct nfs_probe_drops *drops, char *err, size_t err_len)
{
    struct nfs_stat_key *keys = NULL;
    size_t n_keys = 0;
    int rc = -1;

    if ((!p->mounts_loaded || mounts_changed(p)) && load_mounts(p, err, err_len))
        return -1;

    /* Flip: new updates go to the other generation; drain this one once it is quiet. */
    uint8_t old = (uint8_t)(p->skel->bss->gen & 1);
    __atomic_store_n(&p->skel->bss->gen, (uint32_t)(old ^ 1), __ATOMIC_SEQ_CST);
    struct timespec grace = {.tv_sec = 0, .tv_nsec = DRAIN_GRACE_NS};
    nanosleep(&grace, NULL);

    int fd = bpf_map__fd(p->skel->maps.stats);
    keys = calloc(NFS_STATS_ENTRIES, sizeof(*keys));
    if (!keys) {
        snprintf(err, err_len, "draining NFS records: out of memory");
        goto cleanup;
    }
    /* Collect first, delete after: deleting while walking restarts get_next_key. */
    struct nfs_stat_key cur, next;
    const void *prev = NULL;
    while (n_keys < NFS_STATS_ENTRIES && bpf_map_get_next_key(fd, prev, &next) == 0) {
        if (next.gen == old)
            keys[n_keys++] = next;
        cur = next;
        prev = &cur;
    }
    bool reloaded = false;
    for (size_t i = 0; i < n_keys; i++) {
        struct nfs_stat_val v;
        if (bpf_map_lookup_elem(fd, &keys[i], &v))
            continue;
        if (bpf_map_delete_elem(fd, &keys[i]) && errno != ENOENT) {
            snprintf(err, err_len, "deleting a drained NFS record: %s", strerror(errno));
            goto cleanup;
        }
        const struct nfs_probe_mount *m = find_mount(p, keys[i].dev);
        if (!m && !reloaded) { /* mounted since the last read: one reread per drain */
            reloaded = true;
            if (load_mounts(p, err, err_len))
                goto cleanup;
            m = find_mount(p, keys[i].dev);
        }
        struct nfs_probe_record rec = {
            .owner = &keys[i].owner,
            .dev = keys[i].dev,
            .op = keys[i].op < NFS_OP_COUNT ? op_names[keys[i].op] : "unknown",
            .credit =
                keys[i].credit <= NFS_CREDIT_KERNEL ? credit_names[keys[i].credit] : "unknown",
            .server = m ? m->server : "",
            .export = m ? m->export : "",
            .mountpoint = m ? m->mountpoint : "",
            .fstype = m ? m->fstype : "",
            .bytes = v.bytes,
            .ops = v.ops,
            .errors = v.errors,
            .latency = v.latency,
        };
        fn(&rec, arg);
    }
    rc = read_drops(p, drops, err, err_len);

cleanup:
    free(keys);
    return rc;
}

/* agent_nfs_hook adapter. */

static void *hook_open(const struct agent_opts *opts, char *why, size_t why_len)
{
    (void)opts;
    return nfs_probe_open(why, why_len);
}

_Static_assert(NFS_LAT_SLOTS == LLHIST_SLOTS, "nfs.h and llhist.h histograms differ");

struct hook_drain_ctx {
    struct flowset *out;
    struct nfsops *ops; /* NULL: the agent does not want them */
    uint64_t lost;      /* records the flowset had no room for */
    /* (out index, ops index) of each flow with its detail in ops: the detail array may move
     * while the drain adds to it, so the flows' latency pointers are set after it */
    size_t (*pairs)[2];
    size_t n_pairs, cap_pairs;
};

static void fill_flow(struct flow_rec *f, const struct nfs_probe_record *rec)
{
    f->source = FLOW_SRC_NFS;
    f->owner.pid = rec->owner->tgid;
    f->owner.ppid = rec->owner->ppid;
    f->owner.uid = rec->owner->uid;
    f->owner.cgroup_id = rec->owner->cgroup_id;
    f->owner.start_ns = rec->owner->start_ns;
    memcpy(f->owner.comm, rec->owner->comm, sizeof(f->owner.comm));
    f->owner.comm[sizeof(f->owner.comm) - 1] = '\0';
    copy_str(f->server, sizeof(f->server), rec->server, strlen(rec->server));
    copy_str(f->export_path, sizeof(f->export_path), rec->export, strlen(rec->export));
    copy_str(f->op, sizeof(f->op), rec->op, strlen(rec->op));
    f->bytes = rec->bytes;
    f->ops = rec->ops;
}

static void hook_add_flow(const struct nfs_probe_record *rec, void *arg)
{
    struct hook_drain_ctx *ctx = arg;
    bool detail = false;
    if (ctx->ops) {
        struct nfsop_detail *d;
        struct flow_rec *f = nfsops_add(ctx->ops, &d);
        if (f) { /* /metrics only: a record it cannot keep is not a report's loss */
            fill_flow(f, rec);
            d->errors = rec->errors;
            llhist_merge_u32(&d->latency, rec->latency);
            detail = true;
        }
    }
    if (strcmp(rec->op, "commit") == 0)
        return;
    struct flow_rec *f = flowset_add(ctx->out);
    if (!f) {
        ctx->lost++;
        return;
    }
    fill_flow(f, rec);
    if (detail && ctx->n_pairs == ctx->cap_pairs) {
        size_t cap = ctx->cap_pairs ? 2 * ctx->cap_pairs : 64;
        size_t(*p)[2] = realloc(ctx->pairs, cap * sizeof(*p));
        if (p) {
            ctx->pairs = p;
            ctx->cap_pairs = cap;
        }
    }
    if (detail && ctx->n_pairs < ctx->cap_pairs) { /* else the flow goes without latency */
        ctx->pairs[ctx->n_pairs][0] = ctx->out->n - 1;
        ctx->pairs[ctx->n_pairs][1] = ctx->ops->recs.n - 1;
        ctx->n_pairs++;
    }
}

static int hook_drain(void *h, struct flowset *out, struct nfsops *ops, uint64_t *dropped,
                      char *err, size_t err_len)
{
    struct nfs_probe_drops d = {0};
    struct hook_drain_ctx ctx = {.out = out, .ops = ops, .lost = 0};
    int rc = nfs_probe_drain(h, hook_add_flow, &ctx, &d, err, err_len);
    for (size_t i = 0; i < ctx.n_pairs; i++) {
        out->v[ctx.pairs[i][0]].latency = &ops->detail[ctx.pairs[i][1]].latency;
        out->v[ctx.pairs[i][0]].errors = ops->detail[ctx.pairs[i][1]].errors;
    }
    free(ctx.pairs);
    if (rc)
        return -1;
    *dropped += d.stats_full + d.unmatched + ctx.lost;
    return 0;
}

static void hook_close(void *h)
{
    nfs_probe_close(h);
}

const struct agent_nfs_hook nfs_probe_hook = {
    .name = "nfs",
    .open = hook_open,
    .drain = hook_drain,
    .close = hook_close,
};
