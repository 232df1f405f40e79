/* The agent's drain state files (see drainstate.h). */
#include "drainstate.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_FILE   "drain_state"
#define PENDING_FILE "drain_pending"
#define MAX_PENDING  (1u << 30)

int drainstate_write_file(const char *path, const char *data, size_t len)
{
    char tmp[PATH_MAX + 8];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            errno = w < 0 ? e : EIO;
            return -1;
        }
        off += (size_t)w;
    }
    if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    char d[PATH_MAX];
    snprintf(d, sizeof(d), "%s", path);
    char *slash = strrchr(d, '/');
    if (slash) {
        *slash = '\0';
        int dfd = open(d[0] ? d : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) {
            fsync(dfd);
            close(dfd);
        }
    }
    return 0;
}

static int format_header(char *out, size_t len, const struct drainstate *st)
{
    return snprintf(out, len,
                    "wanledger-drain-state v1 seq=%" PRIu64 " gen=%" PRIu32 " zero_gen=%" PRIu32
                    " drops_seen=%" PRIu64 " window_end_us=%" PRId64 " token=%016" PRIx64
                    " obj=%016" PRIx64 " lost=%" PRId64 "..%" PRId64 " late=%d\n",
                    st->seq, st->gen, st->zero_gen, st->drops_seen, st->window_end_us, st->token,
                    st->obj_hash, st->lost_from_us, st->lost_to_us, st->lost_late ? 1 : 0);
}

static int parse_header(const char *line, struct drainstate *st)
{
    int n = 0;
    memset(st, 0, sizeof(*st));
    if (sscanf(line,
               "wanledger-drain-state v1 seq=%" SCNu64 " gen=%" SCNu32 " zero_gen=%" SCNu32
               " drops_seen=%" SCNu64 " window_end_us=%" SCNd64 " token=%" SCNx64 " obj=%" SCNx64
               " lost=%" SCNd64 "..%" SCNd64 "%n",
               &st->seq, &st->gen, &st->zero_gen, &st->drops_seen, &st->window_end_us, &st->token,
               &st->obj_hash, &st->lost_from_us, &st->lost_to_us, &n) != 9 ||
        st->gen > 1 || st->zero_gen > 1)
        return -1;
    /* " late=0|1" was added later: a state written without it is a restart's loss */
    int late = 0, m = 0;
    if (line[n] == ' ' && sscanf(line + n, " late=%d%n", &late, &m) == 1 &&
        (late == 0 || late == 1)) {
        st->lost_late = late == 1;
        n += m;
    }
    if (line[n] != '\n' && line[n] != '\0')
        return -1;
    return 0;
}

static void path_of(char *out, size_t len, const char *dir, const char *name)
{
    snprintf(out, len, "%s/%s", dir, name);
}

/* Reads a whole file (bounded); 1, 0 absent, -1 error. */
static int read_all(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > MAX_PENDING) {
        snprintf(err, errlen, "%s: not a regular file of at most %u bytes", path, MAX_PENDING);
        fclose(f);
        return -1;
    }
    *buf = malloc((size_t)sb.st_size + 1);
    if (!*buf) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    *len = fread(*buf, 1, (size_t)sb.st_size, f);
    (*buf)[*len] = '\0';
    fclose(f);
    return 1;
}

int drainstate_load(const char *dir, struct drainstate *st, char *err, size_t errlen)
{
    char p[PATH_MAX], *buf = NULL;
    size_t len = 0;
    path_of(p, sizeof(p), dir, STATE_FILE);
    int r = read_all(p, &buf, &len, err, errlen);
    if (r <= 0)
        return r;
    if (parse_header(buf, st) != 0) {
        snprintf(err, errlen, "%s: line 1: not a drain state (\"%.60s\")", p, buf);
        r = -1;
    }
    free(buf);
    return r;
}

int drainstate_save(const char *dir, const struct drainstate *st)
{
    char p[PATH_MAX], line[256];
    path_of(p, sizeof(p), dir, STATE_FILE);
    int n = format_header(line, sizeof(line), st);
    return drainstate_write_file(p, line, (size_t)n);
}

int drainstate_pending_save(const char *dir, const struct drainstate *st, const char *body,
                            size_t len)
{
    char p[PATH_MAX], line[256];
    path_of(p, sizeof(p), dir, PENDING_FILE);
    int n = format_header(line, sizeof(line), st);
    char *all = malloc((size_t)n + len);
    if (!all)
        return -1;
    memcpy(all, line, (size_t)n);
    memcpy(all + n, body, len);
    int r = drainstate_write_file(p, all, (size_t)n + len);
    free(all);
    return r;
}

int drainstate_pending_load(const char *dir, struct drainstate *st, char **body, size_t *len,
                            char *err, size_t errlen)
{
    char p[PATH_MAX], *buf = NULL;
    size_t n = 0;
    path_of(p, sizeof(p), dir, PENDING_FILE);
    int r = read_all(p, &buf, &n, err, errlen);
    if (r <= 0)
        return r;
    char *nl = memchr(buf, '\n', n);
    if (!nl || parse_header(buf, st) != 0) {
        snprintf(err, errlen, "%s: line 1: not a pending drain", p);
        free(buf);
        return -1;
    }
    size_t hl = (size_t)(nl + 1 - buf);
    memmove(buf, nl + 1, n - hl);
    buf[n - hl] = '\0';
    *body = buf;
    *len = n - hl;
    return 1;
}

void drainstate_pending_clear(const char *dir)
{
    char p[PATH_MAX];
    path_of(p, sizeof(p), dir, PENDING_FILE);
    unlink(p);
}
