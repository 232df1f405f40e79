/* bpffs pins of the socket probe's skeleton (see sockpin.h). */
#include "sockpin.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <linux/magic.h>

#define BPFFS_ROOT "/sys/fs/bpf"

static struct bpf_map_skeleton *map_at(struct bpf_object_skeleton *s, int i)
{
    return (struct bpf_map_skeleton *)((char *)s->maps + (size_t)i * (size_t)s->map_skel_sz);
}

static struct bpf_prog_skeleton *prog_at(struct bpf_object_skeleton *s, int i)
{
    return (struct bpf_prog_skeleton *)((char *)s->progs + (size_t)i * (size_t)s->prog_skel_sz);
}

static int ensure_bpffs(char *err, size_t errlen)
{
    struct statfs fs;
    if (statfs(BPFFS_ROOT, &fs) == 0 && fs.f_type == BPF_FS_MAGIC)
        return 0;
    if (mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700") != 0) {
        snprintf(err, errlen, "%s is not a bpffs and mounting one failed: %s", BPFFS_ROOT,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int sockpin_mkdir(const char *dir, char *err, size_t errlen)
{
    char p[PATH_MAX];
    if (strncmp(dir, BPFFS_ROOT "/", strlen(BPFFS_ROOT) + 1) == 0 && ensure_bpffs(err, errlen))
        return -1;
    if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p)) {
        snprintf(err, errlen, "pin directory %.64s...: path too long", dir);
        return -1;
    }
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0700) != 0 && errno != EEXIST) {
            snprintf(err, errlen, "pin directory %s: %s", p, strerror(errno));
            return -1;
        }
        *s = c;
        if (!c)
            break;
    }
    return 0;
}

int sockpin_clear(const char *dir, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return errno == ENOENT ? 0 : (snprintf(err, errlen, "%s: %s", dir, strerror(errno)), -1);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char p[PATH_MAX];
        if (strncmp(e->d_name, "map_", 4) != 0 && strncmp(e->d_name, "link_", 5) != 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
        if (unlink(p) != 0) {
            snprintf(err, errlen, "unpinning %s: %s", p, strerror(errno));
            closedir(d);
            return -1;
        }
        n++;
    }
    closedir(d);
    rmdir(dir);
    return n;
}

/* dir/KIND_NAME; bpffs refuses names with a dot, so "socket.bss" becomes "map_socket_bss". */
static int pin_path(char *out, size_t len, const char *dir, const char *kind, const char *name)
{
    int n = snprintf(out, len, "%s/%s_%s", dir, kind, name);
    if (n < 0 || n >= (int)len)
        return -1;
    for (char *p = out + strlen(dir) + 1; *p; p++)
        if (*p == '.')
            *p = '_';
    return 0;
}

int sockpin_set_map_paths(struct bpf_object_skeleton *s, const char *dir, char *err, size_t errlen)
{
    for (int i = 0; i < s->map_cnt; i++) {
        struct bpf_map *m = *map_at(s, i)->map;
        char p[PATH_MAX];
        if (pin_path(p, sizeof(p), dir, "map", bpf_map__name(m)) ||
            bpf_map__set_pin_path(m, p) != 0) {
            snprintf(err, errlen, "pin path for map %s in %s: too long or out of memory",
                     bpf_map__name(m), dir);
            return -1;
        }
    }
    return 0;
}

bool sockpin_maps_present(struct bpf_object_skeleton *s, const char *dir)
{
    for (int i = 0; i < s->map_cnt; i++) {
        char p[PATH_MAX];
        if (pin_path(p, sizeof(p), dir, "map", bpf_map__name(*map_at(s, i)->map)) ||
            access(p, F_OK) != 0)
            return false;
    }
    return true;
}

int sockpin_pin_all(struct bpf_object_skeleton *s, const char *dir, char *err, size_t errlen)
{
    char p[PATH_MAX];
    for (int i = 0; i < s->map_cnt; i++) {
        struct bpf_map *m = *map_at(s, i)->map;
        int e;
        if (pin_path(p, sizeof(p), dir, "map", bpf_map__name(m)) || (e = bpf_map__pin(m, p)) != 0) {
            snprintf(err, errlen, "pinning map %s at %s: %s", bpf_map__name(m), p, strerror(-e));
            return -1;
        }
    }
    for (int i = 0; i < s->prog_cnt; i++) {
        struct bpf_prog_skeleton *ps = prog_at(s, i);
        struct bpf_link *l = *ps->link;
        int e;
        if (!l)
            continue;
        if (pin_path(p, sizeof(p), dir, "link", ps->name) || (e = bpf_link__pin(l, p)) != 0) {
            snprintf(err, errlen, "pinning link %s at %s: %s", ps->name, p, strerror(-e));
            return -1;
        }
    }
    return 0;
}

int sockpin_count_links(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    char want[64];
    int n = 0;
    if (!d)
        return 0;
    snprintf(want, sizeof(want), "link_%s", prefix);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, want, strlen(want)) == 0;
    closedir(d);
    return n;
}

void sockpin_disconnect_links(struct bpf_object_skeleton *s)
{
    for (int i = 0; i < s->prog_cnt; i++) {
        struct bpf_link *l = *prog_at(s, i)->link;
        if (l)
            bpf_link__disconnect(l);
    }
}
