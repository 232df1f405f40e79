/* Pod namespace, name and container names from the kubelet's log directories (kubepods.h). */
#include "kubepods.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_CTRS_PER_POD 16

struct kpod {
    char uid[40];
    char ns[64];
    char name[254];
    char ctr[MAX_CTRS_PER_POD][64];
    size_t n_ctr;
};

struct kctr {
    char id[65];
    char uid[40];
    char name[64];
};

struct kubepods {
    char root[256];
    struct kpod *pods;
    size_t n_pods;
    struct kctr *ctrs;
    size_t n_ctrs;
    double last_scan; /* monotonic seconds; < 0: never */
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct kubepods *kubepods_new(const char *log_root)
{
    struct kubepods *k = calloc(1, sizeof(*k));
    if (!k)
        return NULL;
    snprintf(k->root, sizeof(k->root), "%s", log_root && *log_root ? log_root : "/var/log");
    k->pods = calloc(KUBEPODS_MAX_PODS, sizeof(*k->pods));
    k->ctrs = calloc(KUBEPODS_MAX_CTRS, sizeof(*k->ctrs));
    if (!k->pods || !k->ctrs) {
        kubepods_free(k);
        return NULL;
    }
    k->last_scan = -1;
    return k;
}

void kubepods_free(struct kubepods *k)
{
    if (!k)
        return;
    free(k->pods);
    free(k->ctrs);
    free(k);
}

static bool is_hex64(const char *s, size_t n)
{
    if (n != 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* "<namespace>_<pod>_<uid>": namespace and pod are DNS-1123 names (no '_'), so the first and the
 * last '_' split it. */
static bool parse_pod_dir(const char *d, struct kpod *p)
{
    const char *a = strchr(d, '_'), *b = strrchr(d, '_');
    if (!a || a == b || a == d || b == a + 1)
        return false;
    size_t nl = (size_t)(a - d), pl = (size_t)(b - a - 1), ul = strlen(b + 1);
    if (nl >= sizeof(p->ns) || pl >= sizeof(p->name) || ul < 32 || ul >= sizeof(p->uid))
        return false;
    memcpy(p->ns, d, nl);
    p->ns[nl] = '\0';
    memcpy(p->name, a + 1, pl);
    p->name[pl] = '\0';
    memcpy(p->uid, b + 1, ul);
    p->uid[ul] = '\0';
    return true;
}

static bool is_dir(const char *dir, const char *name)
{
    char path[1024];
    struct stat st;
    int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= sizeof(path))
        return false; /* longer than any kubelet path: not one of its directories */
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void scan_pods(struct kubepods *k)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/pods", k->root);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while (k->n_pods < KUBEPODS_MAX_PODS && (e = readdir(d))) {
        struct kpod *p = &k->pods[k->n_pods];
        memset(p, 0, sizeof(*p));
        if (e->d_name[0] == '.' || !parse_pod_dir(e->d_name, p) || !is_dir(dir, e->d_name))
            continue;
        char pdir[1024];
        snprintf(pdir, sizeof(pdir), "%s/%s", dir, e->d_name);
        DIR *cd = opendir(pdir);
        struct dirent *c;
        while (cd && p->n_ctr < MAX_CTRS_PER_POD && (c = readdir(cd)))
            if (c->d_name[0] != '.' && strlen(c->d_name) < sizeof(p->ctr[0]) &&
                is_dir(pdir, c->d_name))
                memcpy(p->ctr[p->n_ctr++], c->d_name, strlen(c->d_name) + 1); /* fits: checked */
        if (cd)
            closedir(cd);
        k->n_pods++;
    }
    closedir(d);
}

/* One CRI symlink "<pod>_<ns>_<container>-<id>.log" -> ".../<ns>_<pod>_<uid>/<container>/N.log":
 * the id from the name, uid and container name from the target (the name alone may be cut at
 * 255 bytes; then the id is not 64 hex and the link is skipped). */
static bool parse_ctr_link(const char *dir, const char *name, struct kctr *c)
{
    size_t n = strlen(name);
    if (n < 4 + 65 || strcmp(name + n - 4, ".log") != 0)
        return false;
    const char *id = name + n - 4 - 64;
    if (id[-1] != '-' || !is_hex64(id, 64))
        return false;
    memcpy(c->id, id, 64);
    c->id[64] = '\0';
    char path[1024], target[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    ssize_t t = readlink(path, target, sizeof(target) - 1);
    if (t <= 0)
        return false;
    target[t] = '\0';
    char *slash = strrchr(target, '/'); /* .../<pod dir>/<container>/<N>.log */
    if (!slash)
        return false;
    *slash = '\0';
    char *cname = strrchr(target, '/');
    if (!cname)
        return false;
    *cname++ = '\0';
    char *pdir = strrchr(target, '/');
    pdir = pdir ? pdir + 1 : target;
    struct kpod p;
    if (strlen(cname) >= sizeof(c->name) || !parse_pod_dir(pdir, &p))
        return false;
    snprintf(c->name, sizeof(c->name), "%s", cname);
    snprintf(c->uid, sizeof(c->uid), "%s", p.uid);
    return true;
}

static void scan_ctrs(struct kubepods *k)
{
    char dir[512];
    snprintf(dir, sizeof(dir), "%s/containers", k->root);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while (k->n_ctrs < KUBEPODS_MAX_CTRS && (e = readdir(d)))
        if (e->d_name[0] != '.' && parse_ctr_link(dir, e->d_name, &k->ctrs[k->n_ctrs]))
            k->n_ctrs++;
    closedir(d);
}

void kubepods_rescan(struct kubepods *k)
{
    k->n_pods = 0;
    k->n_ctrs = 0;
    scan_pods(k);
    scan_ctrs(k);
    k->last_scan = now_s();
}

static const struct kpod *find_pod(const struct kubepods *k, const char *uid)
{
    for (size_t i = 0; i < k->n_pods; i++)
        if (strcmp(k->pods[i].uid, uid) == 0)
            return &k->pods[i];
    return NULL;
}

static const struct kctr *find_ctr(const struct kubepods *k, const char *uid, const char *id)
{
    if (!id || !*id)
        return NULL;
    for (size_t i = 0; i < k->n_ctrs; i++)
        if (strcmp(k->ctrs[i].id, id) == 0 && strcmp(k->ctrs[i].uid, uid) == 0)
            return &k->ctrs[i];
    return NULL;
}

bool kubepods_lookup(struct kubepods *k, const char *pod_uid, const char *container_id,
                     struct kube_identity *out)
{
    memset(out, 0, sizeof(*out));
    if (!pod_uid || !*pod_uid)
        return false;
    double now = now_s();
    if (k->last_scan < 0 || now - k->last_scan >= KUBEPODS_REFRESH_S)
        kubepods_rescan(k);
    const struct kpod *p = find_pod(k, pod_uid);
    if (!p && now - k->last_scan >= KUBEPODS_MISS_S) {
        kubepods_rescan(k);
        p = find_pod(k, pod_uid);
    }
    if (!p)
        return false;
    const struct kctr *c = find_ctr(k, p->uid, container_id);
    if (!c && container_id && *container_id && p->n_ctr != 1 &&
        now - k->last_scan >= KUBEPODS_MISS_S) { /* a container started since the last scan */
        kubepods_rescan(k);
        if (!(p = find_pod(k, pod_uid)))
            return false;
        c = find_ctr(k, p->uid, container_id);
    }
    snprintf(out->namespace_, sizeof(out->namespace_), "%s", p->ns);
    snprintf(out->pod, sizeof(out->pod), "%s", p->name);
    if (c)
        snprintf(out->container, sizeof(out->container), "%s", c->name);
    else if (p->n_ctr == 1)
        snprintf(out->container, sizeof(out->container), "%s", p->ctr[0]);
    return true;
}
