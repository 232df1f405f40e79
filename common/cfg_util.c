/* The typed-member readers every section parser uses: each reports a wrong value with its JSON
 * path and returns the default, so one pass collects every error of a file. */
#include "cfg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hostport.h"

void cfg_err(struct cfg_pctx *c, const char *jpath, const char *fmt, ...)
{
    struct cfg_error *items = realloc(c->errs->items, (c->errs->n + 1) * sizeof(*items));
    if (!items)
        return;
    c->errs->items = items;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    items[c->errs->n].jpath = strdup(jpath);
    items[c->errs->n].msg = strdup(msg);
    c->errs->n++;
}

/* Builds "base.key" / "base[i]" paths into a caller buffer. */
const char *cfg_jp_key(char *buf, size_t len, const char *base, const char *key)
{
    if (snprintf(buf, len, "%s.%s", base, key) >= (int)len)
        buf[len - 1] = '\0'; /* paths are short; truncation only shortens a message */
    return buf;
}

const char *cfg_jp_idx(char *buf, size_t len, const char *base, int i)
{
    if (snprintf(buf, len, "%s[%d]", base, i) >= (int)len)
        buf[len - 1] = '\0';
    return buf;
}

const char *cfg_type_name(const cJSON *v)
{
    if (!v)
        return "nothing";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "an array";
    if (cJSON_IsObject(v))
        return "an object";
    return "an unknown value";
}

/* Reports keys of obj that are not in allowed (NULL-terminated) and duplicate keys. */
void cfg_check_keys(struct cfg_pctx *c, const cJSON *obj, const char *path,
                    const char *const *allowed)
{
    char p[256];
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, it->string) == 0)
                ok = 1;
        cfg_jp_key(p, sizeof(p), path, it->string);
        if (!ok) {
            if (strstr(it->string, "password") || strcmp(it->string, "community") == 0 ||
                strstr(it->string, "token") || strstr(it->string, "secret"))
                cfg_err(c, p,
                        "secrets are not accepted in the configuration file; name a file "
                        "(e.g. \"%s_file\") or use the environment",
                        it->string);
            else
                cfg_err(c, p, "unknown key \"%s\"", it->string);
        }
        for (const cJSON *jt = obj->child; jt != it; jt = jt->next)
            if (strcmp(jt->string, it->string) == 0) {
                cfg_err(c, p, "duplicate key \"%s\"", it->string);
                break;
            }
    }
}

char *cfg_get_str(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                  int required, const char *def)
{
    char p[256];
    cfg_jp_key(p, sizeof(p), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            cfg_err(c, p, "missing: expected a string");
        return def ? strdup(def) : NULL;
    }
    if (!cJSON_IsString(v) || !v->valuestring) {
        cfg_err(c, p, "expected a string, got %s", cfg_type_name(v));
        return def ? strdup(def) : NULL;
    }
    if (required && !*v->valuestring) {
        cfg_err(c, p, "expected a non-empty string");
        return def ? strdup(def) : NULL;
    }
    return strdup(v->valuestring);
}

/* Integer-valued number in [lo, hi]. */
double cfg_get_num(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                   double lo, double hi, double def, int integer)
{
    char p[256];
    cfg_jp_key(p, sizeof(p), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return def;
    if (!cJSON_IsNumber(v)) {
        cfg_err(c, p, "expected %s, got %s", integer ? "an integer" : "a number", cfg_type_name(v));
        return def;
    }
    double d = v->valuedouble;
    if (integer && d != floor(d)) {
        cfg_err(c, p, "expected an integer, got %g", d);
        return def;
    }
    if (!(d >= lo && d <= hi)) {
        cfg_err(c, p, "expected a value in [%.15g, %.15g], got %.15g", lo, hi, d);
        return def;
    }
    return d;
}

int cfg_get_bool(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path, int def)
{
    char p[256];
    cfg_jp_key(p, sizeof(p), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return def;
    if (!cJSON_IsBool(v)) {
        cfg_err(c, p, "expected true or false, got %s", cfg_type_name(v));
        return def;
    }
    return cJSON_IsTrue(v);
}

/* An optional member of one JSON type (object or array); reports a type error and returns NULL
 * when it is something else. */
static const cJSON *get_typed(struct cfg_pctx *c, const cJSON *obj, const char *key,
                              const char *path, int required, cJSON_bool (*is)(const cJSON *),
                              const char *what)
{
    char p[256];
    cfg_jp_key(p, sizeof(p), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            cfg_err(c, p, "missing: expected %s", what);
        return NULL;
    }
    if (!is(v)) {
        cfg_err(c, p, "expected %s, got %s", what, cfg_type_name(v));
        return NULL;
    }
    return v;
}

const cJSON *cfg_get_obj(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                         int required)
{
    return get_typed(c, obj, key, path, required, cJSON_IsObject, "an object");
}

const cJSON *cfg_get_arr(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                         int required)
{
    return get_typed(c, obj, key, path, required, cJSON_IsArray, "an array");
}

/* Array of strings; *n set. */
char **cfg_get_str_list(struct cfg_pctx *c, const cJSON *arr, const char *path, size_t *n)
{
    *n = 0;
    if (!arr)
        return NULL;
    int cnt = cJSON_GetArraySize(arr);
    char **out = calloc(cnt ? cnt : 1, sizeof(char *));
    char p[256];
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        if (!cJSON_IsString(it) || !*it->valuestring) {
            cfg_err(c, cfg_jp_idx(p, sizeof(p), path, i), "expected a non-empty string, got %s",
                    cfg_type_name(it));
            continue;
        }
        out[(*n)++] = strdup(it->valuestring);
    }
    return out;
}

uint16_t *cfg_get_port_list(struct cfg_pctx *c, const cJSON *arr, const char *path, size_t *n)
{
    *n = 0;
    if (!arr)
        return NULL;
    int cnt = cJSON_GetArraySize(arr);
    uint16_t *out = calloc(cnt ? cnt : 1, sizeof(uint16_t));
    char p[256];
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
            it->valuedouble < 1 || it->valuedouble > 65535) {
            cfg_err(c, cfg_jp_idx(p, sizeof(p), path, i), "expected a port number 1..65535");
            continue;
        }
        out[(*n)++] = (uint16_t)it->valuedouble;
    }
    return out;
}
/* Reads a whole file of at most max bytes. A FIFO, a device (/dev/zero) or a directory is
 * refused before reading (opened non-blocking, so a FIFO without a writer does not hang), and with
 * secret a file that group or others may read or write is refused with its mode. NULL with errno
 * and, when why is given, the reason. */
char *cfg_read_file(const char *path, size_t max, int secret, char *why, size_t whylen)
{
    char dummy[8];
    if (!why)
        why = dummy, whylen = sizeof(dummy);
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        snprintf(why, whylen, "%s", strerror(e));
        errno = e;
        return NULL;
    }
    struct stat st;
    int err = 0;
    if (fstat(fd, &st) < 0) {
        err = errno;
        snprintf(why, whylen, "%s", strerror(err));
    } else if (!S_ISREG(st.st_mode)) {
        err = EINVAL;
        snprintf(why, whylen, "not a regular file");
    } else if ((uint64_t)st.st_size > max) {
        err = EFBIG;
        snprintf(why, whylen, "larger than %zu bytes", max);
    } else if (secret && (st.st_mode & 077)) {
        err = EACCES;
        snprintf(why, whylen, "mode %04o lets group or others read or write it: chmod 600 %s",
                 (unsigned)(st.st_mode & 07777), path);
    }
    if (err) {
        close(fd);
        errno = err;
        return NULL;
    }
    size_t len = 0;
    char *buf = malloc((size_t)st.st_size + 2);
    while (buf && len <= (size_t)st.st_size) { /* one byte more tells a file that grew */
        ssize_t r = read(fd, buf + len, (size_t)st.st_size + 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0)
                err = EIO;
            break;
        }
        len += (size_t)r;
    }
    close(fd);
    if (!buf || err || len > (size_t)st.st_size) {
        free(buf);
        err = !buf ? ENOMEM : err ? err : EFBIG;
        snprintf(why, whylen, "%s", err == EFBIG ? "changed while being read" : strerror(err));
        errno = err;
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

char *cfg_read_secret(const char *path)
{
    char *buf = cfg_read_file(path, CFG_SECRET_MAX_BYTES, 1, NULL, 0);
    if (!buf)
        return NULL;
    size_t len = strlen(buf);
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        buf[--len] = '\0';
    return buf;
}

char *cfg_resolve_path(struct cfg_pctx *c, const char *p)
{
    if (!p || p[0] == '/' || !c->dir)
        return p ? strdup(p) : NULL;
    size_t n = strlen(c->dir) + strlen(p) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%s/%s", c->dir, p);
    return out;
}

/* Reads the secret file named by obj.key (path relative to the config file); NULL if absent. */
char *cfg_load_secret(struct cfg_pctx *c, const cJSON *obj, const char *key, const char *path,
                      char **file_out)
{
    char p[256];
    cfg_jp_key(p, sizeof(p), path, key);
    char *f = cfg_get_str(c, obj, key, path, 0, NULL);
    if (!f)
        return NULL;
    char *full = cfg_resolve_path(c, f);
    free(f);
    char why[300];
    char *s = cfg_read_file(full, CFG_SECRET_MAX_BYTES, 1, why, sizeof(why));
    if (s) {
        size_t len = strlen(s);
        while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
            s[--len] = '\0';
    }
    if (!s)
        cfg_err(c, p, "cannot read secret file %s: %s", full, why);
    else if (!*s) {
        cfg_err(c, p, "secret file %s is empty", full);
        free(s);
        s = NULL;
    }
    if (file_out)
        *file_out = full;
    else
        free(full);
    return s;
}
int cfg_valid_hostport(const char *s)
{
    struct hostport hp; /* the tree's one HOST:PORT rule (hostport.h) */
    char err[300];
    return hostport_parse(s, strlen(s), 0, &hp, err, sizeof(err)) == 0;
}

int cfg_valid_http_url(const char *s)
{
    size_t skip = strncmp(s, "https://", 8) == 0 ? 8 : 7;
    if (skip == 7 && strncmp(s, "http://", 7) != 0)
        return 0;
    const char *host = s + skip;
    return *host && *host != '/' && *host != ':';
}
