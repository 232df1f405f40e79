/* Bounded on-disk FIFO: DIR/NNNNNNNNNNNNNNNNNNNN.json files, written to a temporary name,
 * fsync'd and renamed, so a crash leaves either a whole entry or none. */
#include "spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct spool_entry {
    uint64_t seq;
    uint64_t size;
    int64_t mtime; /* seconds since the epoch, for the oldest-entry age */
};

struct spool {
    char *dir;
    uint64_t max_bytes;
    uint64_t bytes;
    uint64_t dropped, dropped_bytes;
    uint64_t unremoved; /* delivered entries whose file could not be unlinked (read-only) */
    uint64_t next_seq;
    struct spool_entry *ents; /* ring of entries, oldest at head */
    size_t head, n, cap;
};

static int cmp_ent(const void *a, const void *b)
{
    const struct spool_entry *x = a, *y = b;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void ent_path(const struct spool *sp, uint64_t seq, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%020llu.json", sp->dir, (unsigned long long)seq);
}

static int mkdirs(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int ents_push(struct spool *sp, struct spool_entry e)
{
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? sp->cap * 2 : 64;
        struct spool_entry *ne = malloc(cap * sizeof(*ne));
        if (!ne)
            return -1;
        for (size_t i = 0; i < sp->n; i++)
            ne[i] = sp->ents[(sp->head + i) % sp->cap];
        free(sp->ents);
        sp->ents = ne;
        sp->cap = cap;
        sp->head = 0;
    }
    sp->ents[(sp->head + sp->n) % sp->cap] = e;
    sp->n++;
    return 0;
}

struct spool *spool_open(const char *dir, uint64_t max_bytes, char *err, size_t errlen)
{
    if (mkdirs(dir) != 0) {
        snprintf(err, errlen, "spool %s: cannot create: %s", dir, strerror(errno));
        return NULL;
    }
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "spool %s: cannot open: %s", dir, strerror(errno));
        return NULL;
    }
    struct spool *sp = calloc(1, sizeof(*sp));
    sp->dir = strdup(dir);
    sp->max_bytes = max_bytes;
    sp->next_seq = 1;
    struct dirent *de;
    struct spool_entry *tmp = NULL;
    size_t nt = 0, ct = 0;
    while ((de = readdir(d))) {
        unsigned long long seq;
        char extra;
        if (strlen(de->d_name) != 25 || sscanf(de->d_name, "%20llu.jso%c", &seq, &extra) != 2 ||
            extra != 'n')
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        if (nt == ct) {
            ct = ct ? ct * 2 : 64;
            tmp = realloc(tmp, ct * sizeof(*tmp));
        }
        tmp[nt++] = (struct spool_entry){seq, (uint64_t)st.st_size, (int64_t)st.st_mtime};
    }
    closedir(d);
    if (nt)
        qsort(tmp, nt, sizeof(*tmp), cmp_ent);
    for (size_t i = 0; i < nt; i++) {
        ents_push(sp, tmp[i]);
        sp->bytes += tmp[i].size;
        sp->next_seq = tmp[i].seq + 1;
    }
    free(tmp);
    return sp;
}

void spool_close(struct spool *sp)
{
    if (!sp)
        return;
    free(sp->ents);
    free(sp->dir);
    free(sp);
}

int spool_pop(struct spool *sp)
{
    if (!sp->n)
        return 0;
    struct spool_entry e = sp->ents[sp->head];
    char path[4096];
    ent_path(sp, e.seq, path, sizeof(path));
    /* The entry leaves the queue even when its file cannot be removed (a read-only spool):
     * otherwise the caller would send it again and again. A restart resends it (harmless: the
     * reconciler is idempotent). */
    int rc = unlink(path) != 0 && errno != ENOENT ? -1 : 0;
    sp->head = (sp->head + 1) % sp->cap;
    sp->n--;
    sp->bytes -= e.size;
    if (rc)
        sp->unremoved++;
    return rc;
}

int spool_push(struct spool *sp, const char *body, size_t len, char *err, size_t errlen)
{
    if (len > sp->max_bytes) {
        snprintf(err, errlen, "spool %s: entry of %zu bytes exceeds the bound of %llu bytes",
                 sp->dir, len, (unsigned long long)sp->max_bytes);
        return -1;
    }
    while (sp->n && sp->bytes + len > sp->max_bytes) {
        uint64_t size = sp->ents[sp->head].size;
        if (spool_pop(sp) != 0)
            break;
        sp->dropped++;
        sp->dropped_bytes += size;
    }
    char path[4096], tmp[4200];
    uint64_t seq = sp->next_seq;
    ent_path(sp, seq, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "spool %s: %s", tmp, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, body + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            snprintf(err, errlen, "spool %s: write: %s", tmp, strerror(errno));
            close(fd);
            unlink(tmp);
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        snprintf(err, errlen, "spool %s: fsync: %s", tmp, strerror(errno));
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "spool %s: rename: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    int dfd = open(sp->dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    if (ents_push(sp, (struct spool_entry){seq, len, (int64_t)time(NULL)}) != 0) {
        snprintf(err, errlen, "spool: out of memory");
        return -1;
    }
    sp->next_seq++;
    sp->bytes += len;
    return 0;
}

int spool_peek(struct spool *sp, char **body, size_t *len)
{
    if (!sp->n)
        return 0;
    char path[4096];
    ent_path(sp, sp->ents[sp->head].seq, path, sizeof(path));
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = sp->ents[sp->head].size + 1;
    char *buf = malloc(cap);
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    *body = buf;
    *len = n;
    return 1;
}

size_t spool_count(const struct spool *sp)
{
    return sp->n;
}

uint64_t spool_bytes(const struct spool *sp)
{
    return sp->bytes;
}

uint64_t spool_dropped(const struct spool *sp)
{
    return sp->dropped;
}

uint64_t spool_dropped_bytes(const struct spool *sp)
{
    return sp->dropped_bytes;
}

int64_t spool_oldest_time(const struct spool *sp)
{
    return sp->n ? sp->ents[sp->head].mtime : 0;
}
