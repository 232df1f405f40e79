/* Reads the server-side JSON configuration into struct cfg and checks every field. All errors are
 * collected (not just the first) with the JSON path of the offending value. */
#include "config.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct pctx {
    const char *file;
    char *dir; /* directory of file, for relative secret paths */
    struct cfg_errors *errs;
    struct cfg *cfg;
};

__attribute__((format(printf, 3, 4))) static void err_add(struct pctx *c, const char *jpath,
                                                          const char *fmt, ...)
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
static const char *jp_key(char *buf, size_t len, const char *base, const char *key)
{
    if (snprintf(buf, len, "%s.%s", base, key) >= (int)len)
        buf[len - 1] = '\0'; /* paths are short; truncation only shortens a message */
    return buf;
}

static const char *jp_idx(char *buf, size_t len, const char *base, int i)
{
    if (snprintf(buf, len, "%s[%d]", base, i) >= (int)len)
        buf[len - 1] = '\0';
    return buf;
}

static const char *type_name(const cJSON *v)
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
static void check_keys(struct pctx *c, const cJSON *obj, const char *path,
                       const char *const *allowed)
{
    char p[256];
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (const char *const *a = allowed; *a; a++)
            if (strcmp(*a, it->string) == 0)
                ok = 1;
        jp_key(p, sizeof(p), path, it->string);
        if (!ok) {
            if (strstr(it->string, "password") || strcmp(it->string, "community") == 0 ||
                strstr(it->string, "token") || strstr(it->string, "secret"))
                err_add(c, p,
                        "secrets are not accepted in the configuration file; name a file "
                        "(e.g. \"%s_file\") or use the environment",
                        it->string);
            else
                err_add(c, p, "unknown key \"%s\"", it->string);
        }
        for (const cJSON *jt = obj->child; jt != it; jt = jt->next)
            if (strcmp(jt->string, it->string) == 0) {
                err_add(c, p, "duplicate key \"%s\"", it->string);
                break;
            }
    }
}

static char *get_str(struct pctx *c, const cJSON *obj, const char *key, const char *path,
                     int required, const char *def)
{
    char p[256];
    jp_key(p, sizeof(p), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            err_add(c, p, "missing: expected a string");
        return def ? strdup(def) : NULL;
    }
    if (!cJSON_IsString(v) || !v->valuestring) {
        err_add(c, p, "expected a string, got %s", type_name(v));
        return def ? strdup(def) : NULL;
    }
    if (required && !*v->valuestring) {
        err_add(c, p, "expected a non-empty string");
        return def ? strdup(def) : NULL;
    }
    return strdup(v->valuestring);
}

/* Integer-valued number in [lo, hi]. */
static double get_num(struct pctx *c, const cJSON *obj, const char *key, const char *path,
                      double lo, double hi, double def, int integer)
{
    char p[256];
    jp_key(p, sizeof(p), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return def;
    if (!cJSON_IsNumber(v)) {
        err_add(c, p, "expected %s, got %s", integer ? "an integer" : "a number", type_name(v));
        return def;
    }
    double d = v->valuedouble;
    if (integer && d != floor(d)) {
        err_add(c, p, "expected an integer, got %g", d);
        return def;
    }
    if (!(d >= lo && d <= hi)) {
        err_add(c, p, "expected a value in [%.15g, %.15g], got %.15g", lo, hi, d);
        return def;
    }
    return d;
}

static int get_bool(struct pctx *c, const cJSON *obj, const char *key, const char *path, int def)
{
    char p[256];
    jp_key(p, sizeof(p), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v)
        return def;
    if (!cJSON_IsBool(v)) {
        err_add(c, p, "expected true or false, got %s", type_name(v));
        return def;
    }
    return cJSON_IsTrue(v);
}

/* An optional member of one JSON type (object or array); reports a type error and returns NULL
 * when it is something else. */
static const cJSON *get_typed(struct pctx *c, const cJSON *obj, const char *key, const char *path,
                              int required, cJSON_bool (*is)(const cJSON *), const char *what)
{
    char p[256];
    jp_key(p, sizeof(p), path, key);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            err_add(c, p, "missing: expected %s", what);
        return NULL;
    }
    if (!is(v)) {
        err_add(c, p, "expected %s, got %s", what, type_name(v));
        return NULL;
    }
    return v;
}

static const cJSON *get_obj(struct pctx *c, const cJSON *obj, const char *key, const char *path,
                            int required)
{
    return get_typed(c, obj, key, path, required, cJSON_IsObject, "an object");
}

static const cJSON *get_arr(struct pctx *c, const cJSON *obj, const char *key, const char *path,
                            int required)
{
    return get_typed(c, obj, key, path, required, cJSON_IsArray, "an array");
}

/* Array of strings; *n set. */
static char **get_str_list(struct pctx *c, const cJSON *arr, const char *path, size_t *n)
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
            err_add(c, jp_idx(p, sizeof(p), path, i), "expected a non-empty string, got %s",
                    type_name(it));
            continue;
        }
        out[(*n)++] = strdup(it->valuestring);
    }
    return out;
}

static uint16_t *get_port_list(struct pctx *c, const cJSON *arr, const char *path, size_t *n)
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
            err_add(c, jp_idx(p, sizeof(p), path, i), "expected a port number 1..65535");
            continue;
        }
        out[(*n)++] = (uint16_t)it->valuedouble;
    }
    return out;
}

char *cfg_read_secret(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                errno = ENOMEM;
                return NULL;
            }
            buf = nb;
        }
        size_t r = fread(buf + len, 1, 4096, f);
        len += r;
        if (r < 4096)
            break;
    }
    int ferr = ferror(f);
    fclose(f);
    if (ferr) {
        free(buf);
        errno = EIO;
        return NULL;
    }
    buf[len] = '\0';
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        buf[--len] = '\0';
    return buf;
}

static char *resolve_path(struct pctx *c, const char *p)
{
    if (!p || p[0] == '/' || !c->dir)
        return p ? strdup(p) : NULL;
    size_t n = strlen(c->dir) + strlen(p) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%s/%s", c->dir, p);
    return out;
}

/* Reads the secret file named by obj.key (path relative to the config file); NULL if absent. */
static char *load_secret(struct pctx *c, const cJSON *obj, const char *key, const char *path,
                         char **file_out)
{
    char p[256];
    jp_key(p, sizeof(p), path, key);
    char *f = get_str(c, obj, key, path, 0, NULL);
    if (!f)
        return NULL;
    char *full = resolve_path(c, f);
    free(f);
    char *s = cfg_read_secret(full);
    if (!s)
        err_add(c, p, "cannot read secret file %s: %s", full, strerror(errno));
    else if (!*s) {
        err_add(c, p, "secret file %s is empty", full);
        free(s);
        s = NULL;
    }
    if (file_out)
        *file_out = full;
    else
        free(full);
    return s;
}

static int prefixes_overlap(const struct cfg_prefix *a, const struct cfg_prefix *b)
{
    if (a->family != b->family)
        return 0;
    int len = a->len < b->len ? a->len : b->len;
    for (int i = 0; i < len; i++) {
        int ba = (a->addr[i >> 3] >> (7 - (i & 7))) & 1;
        int bb = (b->addr[i >> 3] >> (7 - (i & 7))) & 1;
        if (ba != bb)
            return 0;
    }
    return 1;
}

static void parse_sites(struct pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->sites = calloc(n ? n : 1, sizeof(*cfg->sites));
    static const char *const keys[] = {"name", "prefixes", NULL};
    char p[256], pp[256], ppp[256];
    int i = 0;
    for (const cJSON *s = arr->child; s; s = s->next, i++) {
        jp_idx(p, sizeof(p), "$.sites", i);
        if (!cJSON_IsObject(s)) {
            err_add(c, p, "expected a site object, got %s", type_name(s));
            continue;
        }
        check_keys(c, s, p, keys);
        struct cfg_site *site = &cfg->sites[cfg->n_sites];
        site->name = get_str(c, s, "name", p, 1, NULL);
        if (!site->name)
            continue;
        for (size_t j = 0; j < cfg->n_sites; j++)
            if (strcmp(cfg->sites[j].name, site->name) == 0)
                err_add(c, jp_key(pp, sizeof(pp), p, "name"),
                        "duplicate site name \"%s\" (also $.sites[%zu])", site->name, j);
        const cJSON *pre = get_arr(c, s, "prefixes", p, 1);
        if (pre) {
            int np = cJSON_GetArraySize(pre);
            site->prefixes = calloc(np ? np : 1, sizeof(*site->prefixes));
            int k = 0;
            jp_key(pp, sizeof(pp), p, "prefixes");
            for (const cJSON *x = pre->child; x; x = x->next, k++) {
                jp_idx(ppp, sizeof(ppp), pp, k);
                struct cfg_prefix *cp = &site->prefixes[site->n_prefixes];
                if (!cJSON_IsString(x) ||
                    sm_parse_prefix(x->valuestring, &cp->family, cp->addr, &cp->len) != 0) {
                    err_add(c, ppp,
                            "expected an address prefix like \"10.1.0.0/16\" or \"fd00:1::/48\" "
                            "with no host bits set, got %s%s%s",
                            cJSON_IsString(x) ? "\"" : type_name(x),
                            cJSON_IsString(x) ? x->valuestring : "", cJSON_IsString(x) ? "\"" : "");
                    continue;
                }
                /* overlaps with other sites' prefixes (nested prefixes within one site are
                 * allowed; across sites they would make a site's traffic ambiguous) */
                for (size_t j = 0; j < cfg->n_sites; j++)
                    for (size_t q = 0; q < cfg->sites[j].n_prefixes; q++)
                        if (prefixes_overlap(cp, &cfg->sites[j].prefixes[q]))
                            err_add(c, ppp,
                                    "prefix %s overlaps $.sites[%zu].prefixes[%zu] of site "
                                    "\"%s\"",
                                    x->valuestring, j, q, cfg->sites[j].name);
                site->n_prefixes++;
            }
            if (site->n_prefixes == 0 && np == 0)
                err_add(c, pp, "expected at least one prefix");
        }
        cfg->n_sites++;
    }
    if (n == 0)
        err_add(c, "$.sites", "expected at least one site");
}

static void parse_snmp(struct pctx *c, const cJSON *o, const char *p, struct cfg_snmp *sn)
{
    static const char *const keys[] = {"address",
                                       "version",
                                       "community_file",
                                       "user",
                                       "auth_protocol",
                                       "auth_password_file",
                                       "priv_protocol",
                                       "priv_password_file",
                                       "security_level",
                                       "interval_seconds",
                                       "timeout_ms",
                                       "retries",
                                       NULL};
    char pp[256];
    check_keys(c, o, p, keys);
    sn->address = get_str(c, o, "address", p, 1, NULL);
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(o, "version");
    jp_key(pp, sizeof(pp), p, "version");
    sn->version = 2;
    if (ver) {
        const char *vs = cJSON_IsString(ver) ? ver->valuestring : NULL;
        if (vs && (strcmp(vs, "1") == 0))
            sn->version = 1;
        else if (vs && (strcmp(vs, "2c") == 0 || strcmp(vs, "2") == 0))
            sn->version = 2;
        else if (vs && strcmp(vs, "3") == 0)
            sn->version = 3;
        else
            err_add(c, pp, "expected \"1\", \"2c\" or \"3\"");
    }
    sn->interval_seconds = (int)get_num(c, o, "interval_seconds", p, 1, 86400, 30, 1);
    sn->timeout_ms = (int)get_num(c, o, "timeout_ms", p, 10, 600000, 2000, 1);
    sn->retries = (int)get_num(c, o, "retries", p, 0, 10, 1, 1);
    if (sn->version < 3) {
        sn->community = load_secret(c, o, "community_file", p, &sn->community_file);
        if (!sn->community_file) {
            const char *env = getenv("WANLEDGER_SNMP_COMMUNITY");
            if (env && *env)
                sn->community = strdup(env);
            else
                err_add(c, jp_key(pp, sizeof(pp), p, "community_file"),
                        "missing: SNMP v1/v2c needs a community file (or "
                        "$WANLEDGER_SNMP_COMMUNITY)");
        }
        return;
    }
    sn->user = get_str(c, o, "user", p, 1, NULL);
    sn->security_level = get_str(c, o, "security_level", p, 0, "authPriv");
    sn->auth_protocol = get_str(c, o, "auth_protocol", p, 0, "SHA");
    sn->priv_protocol = get_str(c, o, "priv_protocol", p, 0, "AES");
    static const char *const auths[] = {"MD5",     "SHA",     "SHA-224", "SHA-256",
                                        "SHA-384", "SHA-512", NULL};
    static const char *const privs[] = {"DES", "AES", "AES-192", "AES-256", NULL};
    int ok = 0;
    for (const char *const *a = auths; *a; a++)
        ok |= strcmp(*a, sn->auth_protocol) == 0;
    if (!ok)
        err_add(c, jp_key(pp, sizeof(pp), p, "auth_protocol"),
                "expected one of MD5, SHA, SHA-224, SHA-256, SHA-384, SHA-512");
    ok = 0;
    for (const char *const *a = privs; *a; a++)
        ok |= strcmp(*a, sn->priv_protocol) == 0;
    if (!ok)
        err_add(c, jp_key(pp, sizeof(pp), p, "priv_protocol"),
                "expected one of DES, AES, AES-192, AES-256");
    int lvl = strcmp(sn->security_level, "noAuthNoPriv") == 0 ? 0
              : strcmp(sn->security_level, "authNoPriv") == 0 ? 1
              : strcmp(sn->security_level, "authPriv") == 0   ? 2
                                                              : -1;
    if (lvl < 0)
        err_add(c, jp_key(pp, sizeof(pp), p, "security_level"),
                "expected \"noAuthNoPriv\", \"authNoPriv\" or \"authPriv\"");
    if (lvl >= 1) {
        sn->auth_password = load_secret(c, o, "auth_password_file", p, &sn->auth_password_file);
        if (!sn->auth_password_file)
            err_add(c, jp_key(pp, sizeof(pp), p, "auth_password_file"),
                    "missing: %s needs an authentication password file", sn->security_level);
        else if (sn->auth_password && strlen(sn->auth_password) < 8)
            err_add(c, jp_key(pp, sizeof(pp), p, "auth_password_file"),
                    "SNMPv3 passwords must be at least 8 characters");
    }
    if (lvl == 2) {
        sn->priv_password = load_secret(c, o, "priv_password_file", p, &sn->priv_password_file);
        if (!sn->priv_password_file)
            err_add(c, jp_key(pp, sizeof(pp), p, "priv_password_file"),
                    "missing: authPriv needs a privacy password file");
        else if (sn->priv_password && strlen(sn->priv_password) < 8)
            err_add(c, jp_key(pp, sizeof(pp), p, "priv_password_file"),
                    "SNMPv3 passwords must be at least 8 characters");
    }
}

static int valid_hostport(const char *s);

/* A device's "flows" section: {"listen": "HOST:PORT", "protocol": "ipfix"|"netflow9"|"sflow"}. */
static void parse_flows(struct pctx *c, const cJSON *o, const char *p, struct cfg_flows *fl)
{
    static const char *const keys[] = {"listen", "protocol", NULL};
    char pp[256];
    check_keys(c, o, p, keys);
    fl->listen = get_str(c, o, "listen", p, 1, NULL);
    if (fl->listen && !valid_hostport(fl->listen))
        err_add(c, jp_key(pp, sizeof(pp), p, "listen"), "expected HOST:PORT, got \"%s\"",
                fl->listen);
    char *proto = get_str(c, o, "protocol", p, 1, NULL);
    if (proto) {
        if (strcmp(proto, "ipfix") == 0)
            fl->protocol = CFG_FLOW_IPFIX;
        else if (strcmp(proto, "netflow9") == 0)
            fl->protocol = CFG_FLOW_NETFLOW9;
        else if (strcmp(proto, "sflow") == 0)
            fl->protocol = CFG_FLOW_SFLOW;
        else
            err_add(c, jp_key(pp, sizeof(pp), p, "protocol"),
                    "expected \"ipfix\", \"netflow9\" or \"sflow\", got \"%s\"", proto);
    }
    free(proto);
}

static void parse_devices(struct pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->devices = calloc(n ? n : 1, sizeof(*cfg->devices));
    static const char *const keys[] = {"name", "site", "snmp", "gnmi", "flows", NULL};
    char p[256], pp[256];
    int i = 0;
    for (const cJSON *d = arr->child; d; d = d->next, i++) {
        jp_idx(p, sizeof(p), "$.devices", i);
        if (!cJSON_IsObject(d)) {
            err_add(c, p, "expected a device object, got %s", type_name(d));
            continue;
        }
        check_keys(c, d, p, keys);
        struct cfg_device *dev = &cfg->devices[cfg->n_devices];
        dev->name = get_str(c, d, "name", p, 1, NULL);
        dev->site = get_str(c, d, "site", p, 1, NULL);
        dev->site_idx = -1;
        if (!dev->name || !dev->site) {
            free(dev->name);
            free(dev->site);
            memset(dev, 0, sizeof(*dev));
            continue;
        }
        for (size_t j = 0; j < cfg->n_devices; j++)
            if (strcmp(cfg->devices[j].name, dev->name) == 0)
                err_add(c, jp_key(pp, sizeof(pp), p, "name"),
                        "duplicate device name \"%s\" (also $.devices[%zu])", dev->name, j);
        dev->site_idx = cfg_site_index(cfg, dev->site);
        if (dev->site_idx < 0)
            err_add(c, jp_key(pp, sizeof(pp), p, "site"),
                    "expected a site name from $.sites, got "
                    "\"%s\"",
                    dev->site);
        const cJSON *sn = get_obj(c, d, "snmp", p, 0);
        if (sn) {
            dev->has_snmp = true;
            parse_snmp(c, sn, jp_key(pp, sizeof(pp), p, "snmp"), &dev->snmp);
        }
        const cJSON *gn = get_obj(c, d, "gnmi", p, 0);
        if (gn) {
            static const char *const gkeys[] = {"source", NULL};
            jp_key(pp, sizeof(pp), p, "gnmi");
            check_keys(c, gn, pp, gkeys);
            dev->has_gnmi = true;
            dev->gnmi_source = get_str(c, gn, "source", pp, 0, dev->name);
        }
        const cJSON *fl = get_obj(c, d, "flows", p, 0);
        if (fl) {
            dev->has_flows = true;
            parse_flows(c, fl, jp_key(pp, sizeof(pp), p, "flows"), &dev->flows);
        }
        if (!dev->has_snmp && !dev->has_gnmi && !dev->has_flows &&
            cJSON_GetObjectItemCaseSensitive(d, "snmp") == NULL &&
            cJSON_GetObjectItemCaseSensitive(d, "gnmi") == NULL &&
            cJSON_GetObjectItemCaseSensitive(d, "flows") == NULL)
            err_add(c, p,
                    "expected an \"snmp\", \"gnmi\" or \"flows\" object: how is this "
                    "device polled?");
        cfg->n_devices++;
    }
}

static void parse_links(struct pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->links = calloc(n ? n : 1, sizeof(*cfg->links));
    static const char *const keys[] = {"device",  "interface",    "site", "peer_site",
                                       "circuit", "capacity_bps", NULL};
    char p[256], pp[256];
    int i = 0;
    for (const cJSON *l = arr->child; l; l = l->next, i++) {
        jp_idx(p, sizeof(p), "$.links", i);
        if (!cJSON_IsObject(l)) {
            err_add(c, p, "expected a link object, got %s", type_name(l));
            continue;
        }
        check_keys(c, l, p, keys);
        struct cfg_link *lk = &cfg->links[cfg->n_links];
        lk->device = get_str(c, l, "device", p, 1, NULL);
        lk->interface = get_str(c, l, "interface", p, 1, NULL);
        lk->site = get_str(c, l, "site", p, 0, NULL);
        lk->peer_site = get_str(c, l, "peer_site", p, 1, NULL);
        lk->circuit = get_str(c, l, "circuit", p, 1, NULL);
        lk->capacity_bps = (uint64_t)get_num(c, l, "capacity_bps", p, 0, 1.0e15, 0, 1);
        lk->device_idx = lk->device ? cfg_device_index(cfg, lk->device) : -1;
        if (lk->device && lk->device_idx < 0)
            err_add(c, jp_key(pp, sizeof(pp), p, "device"),
                    "expected a device name from $.devices, got \"%s\"", lk->device);
        if (!lk->site && lk->device_idx >= 0)
            lk->site = strdup(cfg->devices[lk->device_idx].site);
        lk->site_idx = lk->site ? cfg_site_index(cfg, lk->site) : -1;
        if (lk->site && lk->site_idx < 0)
            err_add(c, jp_key(pp, sizeof(pp), p, "site"),
                    "expected a site name from $.sites, got \"%s\"", lk->site);
        else if (lk->site && lk->device_idx >= 0 &&
                 strcmp(lk->site, cfg->devices[lk->device_idx].site) != 0)
            err_add(c, jp_key(pp, sizeof(pp), p, "site"),
                    "device \"%s\" is at site \"%s\", not \"%s\"", lk->device,
                    cfg->devices[lk->device_idx].site, lk->site);
        lk->peer_site_idx = lk->peer_site ? cfg_site_index(cfg, lk->peer_site) : -1;
        if (lk->peer_site && lk->peer_site_idx < 0)
            err_add(c, jp_key(pp, sizeof(pp), p, "peer_site"),
                    "expected a site name from $.sites, got \"%s\"", lk->peer_site);
        else if (lk->peer_site_idx >= 0 && lk->peer_site_idx == lk->site_idx)
            err_add(c, jp_key(pp, sizeof(pp), p, "peer_site"),
                    "a WAN link joins two different sites; both ends are \"%s\"", lk->site);
        if (lk->device && lk->interface)
            for (size_t j = 0; j < cfg->n_links; j++)
                if (cfg->links[j].device && cfg->links[j].interface &&
                    strcmp(cfg->links[j].device, lk->device) == 0 &&
                    strcmp(cfg->links[j].interface, lk->interface) == 0)
                    err_add(c, jp_key(pp, sizeof(pp), p, "interface"),
                            "interface \"%s\" of \"%s\" is already $.links[%zu]", lk->interface,
                            lk->device, j);
        if (lk->circuit) {
            /* a circuit has at most two ends, and they must mirror each other */
            int ends = 0;
            for (size_t j = 0; j < cfg->n_links; j++) {
                struct cfg_link *o = &cfg->links[j];
                if (!o->circuit || strcmp(o->circuit, lk->circuit) != 0)
                    continue;
                ends++;
                if (ends == 1 &&
                    (o->site_idx != lk->peer_site_idx || o->peer_site_idx != lk->site_idx))
                    err_add(c, jp_key(pp, sizeof(pp), p, "circuit"),
                            "circuit \"%s\" joins %s-%s at $.links[%zu], but this end says %s-%s",
                            lk->circuit, o->site ? o->site : "?", o->peer_site ? o->peer_site : "?",
                            j, lk->site ? lk->site : "?", lk->peer_site ? lk->peer_site : "?");
            }
            if (ends >= 2)
                err_add(c, jp_key(pp, sizeof(pp), p, "circuit"),
                        "circuit \"%s\" already has two ends; a circuit has at most two",
                        lk->circuit);
        }
        cfg->n_links++;
    }
}

static int sites_linked(const struct cfg *cfg, int a, int b)
{
    for (size_t i = 0; i < cfg->n_links; i++) {
        const struct cfg_link *l = &cfg->links[i];
        if ((l->site_idx == a && l->peer_site_idx == b) ||
            (l->site_idx == b && l->peer_site_idx == a))
            return 1;
    }
    return 0;
}

static void parse_routes(struct pctx *c, const cJSON *arr)
{
    struct cfg *cfg = c->cfg;
    int n = cJSON_GetArraySize(arr);
    cfg->routes = calloc(n ? n : 1, sizeof(*cfg->routes));
    static const char *const keys[] = {"src", "dst", "via", NULL};
    char p[256], pp[256], ppp[256];
    int i = 0;
    for (const cJSON *r = arr->child; r; r = r->next, i++) {
        jp_idx(p, sizeof(p), "$.routes", i);
        if (!cJSON_IsObject(r)) {
            err_add(c, p, "expected a route object, got %s", type_name(r));
            continue;
        }
        check_keys(c, r, p, keys);
        struct cfg_route *rt = &cfg->routes[cfg->n_routes];
        rt->src = get_str(c, r, "src", p, 1, NULL);
        rt->dst = get_str(c, r, "dst", p, 1, NULL);
        rt->src_idx = rt->src ? cfg_site_index(cfg, rt->src) : -1;
        rt->dst_idx = rt->dst ? cfg_site_index(cfg, rt->dst) : -1;
        if (rt->src && rt->src_idx < 0)
            err_add(c, jp_key(pp, sizeof(pp), p, "src"), "expected a site name, got \"%s\"",
                    rt->src);
        if (rt->dst && rt->dst_idx < 0)
            err_add(c, jp_key(pp, sizeof(pp), p, "dst"), "expected a site name, got \"%s\"",
                    rt->dst);
        const cJSON *via = get_arr(c, r, "via", p, 1);
        jp_key(pp, sizeof(pp), p, "via");
        rt->via = get_str_list(c, via, pp, &rt->n_via);
        rt->via_idx = calloc(rt->n_via ? rt->n_via : 1, sizeof(int));
        int ok = rt->src_idx >= 0 && rt->dst_idx >= 0;
        for (size_t k = 0; k < rt->n_via; k++) {
            rt->via_idx[k] = cfg_site_index(cfg, rt->via[k]);
            if (rt->via_idx[k] < 0) {
                err_add(c, jp_idx(ppp, sizeof(ppp), pp, (int)k), "expected a site name, got \"%s\"",
                        rt->via[k]);
                ok = 0;
            }
        }
        if (ok && rt->src_idx == rt->dst_idx)
            err_add(c, p, "a route joins two different sites");
        else if (ok) {
            /* every hop src -> via... -> dst must be a linked pair */
            int prev = rt->src_idx;
            for (size_t k = 0; k <= rt->n_via; k++) {
                int next = k < rt->n_via ? rt->via_idx[k] : rt->dst_idx;
                if (!sites_linked(cfg, prev, next)) {
                    err_add(c, pp, "route %s->%s does not connect: no link joins \"%s\" and \"%s\"",
                            rt->src, rt->dst, cfg->sites[prev].name, cfg->sites[next].name);
                    break;
                }
                prev = next;
            }
        }
        for (size_t j = 0; j < cfg->n_routes; j++)
            if (ok && cfg->routes[j].src_idx == rt->src_idx &&
                cfg->routes[j].dst_idx == rt->dst_idx)
                err_add(c, p, "duplicate route %s->%s (also $.routes[%zu])", rt->src, rt->dst, j);
        cfg->n_routes++;
    }
}

static void parse_dedup(struct pctx *c, const cJSON *o)
{
    struct cfg *cfg = c->cfg;
    static const char *const keys[] = {"nfs_ports", "services", NULL};
    static const char *const skeys[] = {"name", "ports", "users", NULL};
    check_keys(c, o, "$.dedup", keys);
    const cJSON *np = get_arr(c, o, "nfs_ports", "$.dedup", 0);
    if (np) {
        free(cfg->nfs_ports);
        cfg->nfs_ports = get_port_list(c, np, "$.dedup.nfs_ports", &cfg->n_nfs_ports);
    }
    const cJSON *sv = get_arr(c, o, "services", "$.dedup", 0);
    if (!sv)
        return;
    int n = cJSON_GetArraySize(sv);
    cfg->services = calloc(n ? n : 1, sizeof(*cfg->services));
    char p[256], pp[256];
    int i = 0;
    for (const cJSON *s = sv->child; s; s = s->next, i++) {
        jp_idx(p, sizeof(p), "$.dedup.services", i);
        if (!cJSON_IsObject(s)) {
            err_add(c, p, "expected a service object, got %s", type_name(s));
            continue;
        }
        check_keys(c, s, p, skeys);
        struct cfg_service *svc = &cfg->services[cfg->n_services++];
        svc->name = get_str(c, s, "name", p, 1, "");
        svc->ports = get_port_list(c, get_arr(c, s, "ports", p, 0),
                                   jp_key(pp, sizeof(pp), p, "ports"), &svc->n_ports);
        svc->users = get_str_list(c, get_arr(c, s, "users", p, 0),
                                  jp_key(pp, sizeof(pp), p, "users"), &svc->n_users);
        if (!svc->n_ports && !svc->n_users)
            err_add(c, p, "a service needs \"ports\" or \"users\" to be left out of socket counts");
    }
}

static int valid_hostport(const char *s)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s)
        return 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    return *end == '\0' && port > 0 && port < 65536;
}

static int valid_http_url(const char *s)
{
    if (strncmp(s, "http://", 7) != 0)
        return 0;
    const char *host = s + 7;
    return *host && *host != '/' && *host != ':';
}

static void parse_tokens(struct pctx *c)
{
    struct cfg *cfg = c->cfg;
    char *full = resolve_path(c, cfg->tokens_file);
    free(cfg->tokens_file);
    cfg->tokens_file = full;
    char *text = cfg_read_secret(full);
    if (!text) {
        err_add(c, "$.tokens_file", "cannot read tokens file %s: %s", full, strerror(errno));
        return;
    }
    cJSON *j = cJSON_Parse(text);
    free(text);
    if (!j || !cJSON_IsObject(j)) {
        err_add(c, "$.tokens_file", "tokens file %s: expected a JSON object of role -> [tokens]",
                full);
        cJSON_Delete(j);
        return;
    }
    struct pctx tc = *c; /* errors inside the tokens file name the file and its own paths */
    static const char *const roles[] = {"agent", "poller", "service", "reader", NULL};
    char base[512];
    snprintf(base, sizeof(base), "%s: $", full);
    check_keys(&tc, j, base, roles);
    char p[600], pk[600];
    size_t *ns[] = {&cfg->tokens.n_agent, &cfg->tokens.n_poller, &cfg->tokens.n_service,
                    &cfg->tokens.n_reader};
    char ***ls[] = {&cfg->tokens.agent, &cfg->tokens.poller, &cfg->tokens.service,
                    &cfg->tokens.reader};
    for (int r = 0; roles[r]; r++) {
        const cJSON *a = get_arr(&tc, j, roles[r], base, 0);
        *ls[r] = get_str_list(&tc, a, jp_key(p, sizeof(p), base, roles[r]), ns[r]);
        for (size_t k = 0; k < *ns[r]; k++)
            if (strlen((*ls[r])[k]) < 16)
                err_add(&tc, jp_idx(pk, sizeof(pk), jp_key(p, sizeof(p), base, roles[r]), (int)k),
                        "tokens must be at least 16 characters");
    }
    cJSON_Delete(j);
}

static const char *const top_keys[] = {"window_seconds",   "grace_seconds",
                                       "tick_seconds",     "max_future_seconds",
                                       "database",         "database_password_file",
                                       "listen",           "tokens_file",
                                       "reconciler_url",   "public_url",
                                       "open_on_loopback", "sites",
                                       "devices",          "links",
                                       "routes",           "dedup",
                                       "overhead",         "thresholds",
                                       "alerts",           "limits",
                                       "poller",           NULL};

static void parse_root(struct pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    check_keys(c, root, "$", top_keys);
    cfg->window_seconds = (int)get_num(c, root, "window_seconds", "$", 1, 86400, 60, 1);
    if (86400 % cfg->window_seconds != 0)
        err_add(c, "$.window_seconds",
                "expected a divisor of 86400 so windows align with days, got %d",
                cfg->window_seconds);
    cfg->grace_seconds = (int)get_num(c, root, "grace_seconds", "$", 0, 86400, 90, 1);
    cfg->tick_seconds = (int)get_num(c, root, "tick_seconds", "$", 1, 3600, 5, 1);
    cfg->max_future_seconds = (int)get_num(c, root, "max_future_seconds", "$", 0, 86400, 120, 1);
    cfg->database = get_str(c, root, "database", "$", 0,
                            "host=127.0.0.1 port=5432 dbname=wanledger user=wanledger");
    if (cJSON_GetObjectItemCaseSensitive(root, "database_password_file")) {
        char *pw =
            load_secret(c, root, "database_password_file", "$", &cfg->database_password_file);
        free(pw); /* read again at connect time; checked here only */
    }
    cfg->listen = get_str(c, root, "listen", "$", 0, "127.0.0.1:7070");
    if (cfg->listen && !valid_hostport(cfg->listen))
        err_add(c, "$.listen", "expected HOST:PORT, got \"%s\"", cfg->listen);
    cfg->tokens_file = get_str(c, root, "tokens_file", "$", 0, NULL);
    if (cfg->tokens_file)
        parse_tokens(c);
    cfg->reconciler_url = get_str(c, root, "reconciler_url", "$", 0, NULL);
    if (!cfg->reconciler_url && cfg->listen) {
        size_t n = strlen(cfg->listen) + 8;
        cfg->reconciler_url = malloc(n);
        snprintf(cfg->reconciler_url, n, "http://%s", cfg->listen);
    } else if (cfg->reconciler_url && !valid_http_url(cfg->reconciler_url))
        err_add(c, "$.reconciler_url", "expected an http:// URL, got \"%s\"", cfg->reconciler_url);
    cfg->public_url = get_str(c, root, "public_url", "$", 0, cfg->reconciler_url);
    cfg->open_on_loopback = get_bool(c, root, "open_on_loopback", "$", 0);

    const cJSON *sites = get_arr(c, root, "sites", "$", 1);
    if (sites)
        parse_sites(c, sites);
    const cJSON *devs = get_arr(c, root, "devices", "$", 0);
    if (devs)
        parse_devices(c, devs);
    const cJSON *links = get_arr(c, root, "links", "$", 0);
    if (links)
        parse_links(c, links);
    const cJSON *routes = get_arr(c, root, "routes", "$", 0);
    if (routes)
        parse_routes(c, routes);

    cfg->nfs_ports = calloc(1, sizeof(uint16_t));
    cfg->nfs_ports[0] = 2049;
    cfg->n_nfs_ports = 1;
    const cJSON *dd = get_obj(c, root, "dedup", "$", 0);
    if (dd)
        parse_dedup(c, dd);

    const cJSON *ov = get_obj(c, root, "overhead", "$", 0);
    cfg->bytes_per_packet = 66;
    cfg->ratio_without_packets = 0.95;
    if (ov) {
        static const char *const k[] = {"bytes_per_packet", "ratio_without_packets", NULL};
        check_keys(c, ov, "$.overhead", k);
        cfg->bytes_per_packet = get_num(c, ov, "bytes_per_packet", "$.overhead", 0, 1500, 66, 0);
        cfg->ratio_without_packets =
            get_num(c, ov, "ratio_without_packets", "$.overhead", 0.01, 1, 0.95, 0);
    }

    const cJSON *th = get_obj(c, root, "thresholds", "$", 0);
    cfg->green = 0.95;
    cfg->red = 0.80;
    cfg->min_gap_bytes = 100000000;
    cfg->over = 1.05;
    cfg->alert_windows = 3;
    cfg->resolve_windows = 3;
    cfg->saturation = 0.90;
    if (th) {
        static const char *const k[] = {
            "green",      "red", "min_gap_bytes", "over", "alert_windows", "resolve_windows",
            "saturation", NULL};
        const char *p = "$.thresholds";
        check_keys(c, th, p, k);
        cfg->green = get_num(c, th, "green", p, 0, 1, 0.95, 0);
        cfg->red = get_num(c, th, "red", p, 0, 1, 0.80, 0);
        cfg->min_gap_bytes = (uint64_t)get_num(c, th, "min_gap_bytes", p, 0, 1e18, 1e8, 1);
        cfg->over = get_num(c, th, "over", p, 1, 100, 1.05, 0);
        cfg->alert_windows = (int)get_num(c, th, "alert_windows", p, 1, 1000, 3, 1);
        cfg->resolve_windows = (int)get_num(c, th, "resolve_windows", p, 1, 1000, 3, 1);
        cfg->saturation = get_num(c, th, "saturation", p, 0.01, 10, 0.90, 0);
        if (cfg->red > cfg->green)
            err_add(c, "$.thresholds.red", "expected red (%g) <= green (%g)", cfg->red, cfg->green);
    }

    const cJSON *al = get_obj(c, root, "alerts", "$", 0);
    cfg->resend_seconds = 300;
    if (al) {
        static const char *const k[] = {"webhooks", "resend_seconds", NULL};
        check_keys(c, al, "$.alerts", k);
        cfg->webhooks = get_str_list(c, get_arr(c, al, "webhooks", "$.alerts", 0),
                                     "$.alerts.webhooks", &cfg->n_webhooks);
        char p[256];
        for (size_t i = 0; i < cfg->n_webhooks; i++)
            if (!valid_http_url(cfg->webhooks[i]))
                err_add(c, jp_idx(p, sizeof(p), "$.alerts.webhooks", (int)i),
                        "expected an http:// URL, got \"%s\"", cfg->webhooks[i]);
        cfg->resend_seconds = (int)get_num(c, al, "resend_seconds", "$.alerts", 1, 86400, 300, 1);
    }

    const cJSON *li = get_obj(c, root, "limits", "$", 0);
    cfg->max_body_bytes = 64ull << 20;
    cfg->max_flow_bps = 400000000000ull;
    if (li) {
        static const char *const k[] = {"max_body_bytes", "max_flow_bps", NULL};
        check_keys(c, li, "$.limits", k);
        cfg->max_body_bytes =
            (uint64_t)get_num(c, li, "max_body_bytes", "$.limits", 1024, 4294967296.0, 64 << 20, 1);
        cfg->max_flow_bps = (uint64_t)get_num(c, li, "max_flow_bps", "$.limits", 1, 1e15, 400e9, 1);
    }

    const cJSON *po = get_obj(c, root, "poller", "$", 0);
    cfg->spool_max_bytes = 256ull << 20;
    if (po) {
        static const char *const k[] = {"spool_dir", "spool_max_bytes", "gnmi_tcp_listen",
                                        "gnmi_udp_listen", NULL};
        check_keys(c, po, "$.poller", k);
        cfg->spool_dir = get_str(c, po, "spool_dir", "$.poller", 0, NULL);
        cfg->spool_max_bytes =
            (uint64_t)get_num(c, po, "spool_max_bytes", "$.poller", 4096, 1e13, 256 << 20, 1);
        cfg->gnmi_tcp_listen = get_str(c, po, "gnmi_tcp_listen", "$.poller", 0, NULL);
        cfg->gnmi_udp_listen = get_str(c, po, "gnmi_udp_listen", "$.poller", 0, NULL);
        if (cfg->gnmi_tcp_listen && !valid_hostport(cfg->gnmi_tcp_listen))
            err_add(c, "$.poller.gnmi_tcp_listen", "expected HOST:PORT");
        if (cfg->gnmi_udp_listen && !valid_hostport(cfg->gnmi_udp_listen))
            err_add(c, "$.poller.gnmi_udp_listen", "expected HOST:PORT");
    }
    if (!cfg->spool_dir)
        cfg->spool_dir = strdup("/var/lib/wanledger/spool");
}

struct cfg *cfg_parse(const char *path, const char *json, struct cfg_errors *errs)
{
    memset(errs, 0, sizeof(*errs));
    struct cfg *cfg = calloc(1, sizeof(*cfg));
    struct pctx c = {.file = path, .errs = errs, .cfg = cfg};
    cfg->path = strdup(path);
    char *pcopy = strdup(path);
    c.dir = strdup(dirname(pcopy));
    free(pcopy);
    const char *endp = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &endp, 1);
    if (!root) {
        int line = 1, col = 1;
        const char *errat = cJSON_GetErrorPtr();
        for (const char *q = json; errat && q < errat && *q; q++) {
            if (*q == '\n') {
                line++;
                col = 1;
            } else
                col++;
        }
        err_add(&c, "$", "not valid JSON (syntax error at line %d, column %d)", line, col);
    } else if (!cJSON_IsObject(root)) {
        err_add(&c, "$", "expected a JSON object, got %s", type_name(root));
    } else {
        parse_root(&c, root);
    }
    cJSON_Delete(root);
    free(c.dir);
    if (errs->n == 0) {
        cfg->sitemap = sm_new();
        for (size_t i = 0; i < cfg->n_sites; i++)
            for (size_t k = 0; k < cfg->sites[i].n_prefixes; k++) {
                struct cfg_prefix *p = &cfg->sites[i].prefixes[k];
                if (sm_add(cfg->sitemap, p->family, p->addr, p->len, (int)i) != 0) {
                    char jp[128];
                    snprintf(jp, sizeof(jp), "$.sites[%zu].prefixes[%zu]", i, k);
                    err_add(&c, jp, "prefix listed twice");
                }
            }
    }
    if (errs->n) {
        cfg_free(cfg);
        return NULL;
    }
    return cfg;
}

struct cfg *cfg_load(const char *path, struct cfg_errors *errs)
{
    memset(errs, 0, sizeof(*errs));
    char *text = cfg_read_secret(path);
    if (!text) {
        errs->items = calloc(1, sizeof(*errs->items));
        errs->items[0].jpath = strdup("$");
        char msg[512];
        snprintf(msg, sizeof(msg), "cannot read the configuration file: %s", strerror(errno));
        errs->items[0].msg = strdup(msg);
        errs->n = 1;
        return NULL;
    }
    struct cfg *cfg = cfg_parse(path, text, errs);
    free(text);
    return cfg;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

void cfg_free(struct cfg *cfg)
{
    if (!cfg)
        return;
    free(cfg->path);
    free(cfg->database);
    free(cfg->database_password_file);
    free(cfg->listen);
    free(cfg->tokens_file);
    free_list(cfg->tokens.agent, cfg->tokens.n_agent);
    free_list(cfg->tokens.poller, cfg->tokens.n_poller);
    free_list(cfg->tokens.service, cfg->tokens.n_service);
    free_list(cfg->tokens.reader, cfg->tokens.n_reader);
    free(cfg->reconciler_url);
    free(cfg->public_url);
    for (size_t i = 0; i < cfg->n_sites; i++) {
        free(cfg->sites[i].name);
        free(cfg->sites[i].prefixes);
    }
    free(cfg->sites);
    for (size_t i = 0; i < cfg->n_devices; i++) {
        struct cfg_device *d = &cfg->devices[i];
        struct cfg_snmp *s = &d->snmp;
        free(d->name);
        free(d->site);
        free(d->gnmi_source);
        free(d->flows.listen);
        free(s->address);
        free(s->community);
        free(s->community_file);
        free(s->user);
        free(s->auth_protocol);
        free(s->auth_password);
        free(s->auth_password_file);
        free(s->priv_protocol);
        free(s->priv_password);
        free(s->priv_password_file);
        free(s->security_level);
    }
    free(cfg->devices);
    for (size_t i = 0; i < cfg->n_links; i++) {
        struct cfg_link *l = &cfg->links[i];
        free(l->device);
        free(l->interface);
        free(l->site);
        free(l->peer_site);
        free(l->circuit);
    }
    free(cfg->links);
    for (size_t i = 0; i < cfg->n_routes; i++) {
        struct cfg_route *r = &cfg->routes[i];
        free(r->src);
        free(r->dst);
        free_list(r->via, r->n_via);
        free(r->via_idx);
    }
    free(cfg->routes);
    free(cfg->nfs_ports);
    for (size_t i = 0; i < cfg->n_services; i++) {
        free(cfg->services[i].name);
        free(cfg->services[i].ports);
        free_list(cfg->services[i].users, cfg->services[i].n_users);
    }
    free(cfg->services);
    free_list(cfg->webhooks, cfg->n_webhooks);
    free(cfg->spool_dir);
    free(cfg->gnmi_tcp_listen);
    free(cfg->gnmi_udp_listen);
    sm_free(cfg->sitemap);
    free(cfg);
}

void cfg_errors_free(struct cfg_errors *errs)
{
    for (size_t i = 0; i < errs->n; i++) {
        free(errs->items[i].jpath);
        free(errs->items[i].msg);
    }
    free(errs->items);
    errs->items = NULL;
    errs->n = 0;
}

void cfg_errors_print(const struct cfg *unused, const char *file, const struct cfg_errors *errs,
                      void *fp)
{
    (void)unused;
    FILE *f = fp;
    for (size_t i = 0; i < errs->n; i++)
        fprintf(f, "%s: %s: %s\n", file, errs->items[i].jpath, errs->items[i].msg);
}

int cfg_site_index(const struct cfg *cfg, const char *name)
{
    if (!name)
        return -1;
    for (size_t i = 0; i < cfg->n_sites; i++)
        if (cfg->sites[i].name && strcmp(cfg->sites[i].name, name) == 0)
            return (int)i;
    return -1;
}

int cfg_device_index(const struct cfg *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->n_devices; i++)
        if (cfg->devices[i].name && strcmp(cfg->devices[i].name, name) == 0)
            return (int)i;
    return -1;
}

int cfg_site_of_addr(const struct cfg *cfg, const char *addr)
{
    return cfg->sitemap ? sm_lookup_str(cfg->sitemap, addr) : -1;
}

int cfg_service_of_port(const struct cfg *cfg, uint16_t port)
{
    for (size_t i = 0; i < cfg->n_services; i++)
        for (size_t k = 0; k < cfg->services[i].n_ports; k++)
            if (cfg->services[i].ports[k] == port)
                return (int)i;
    return -1;
}

int cfg_service_of_user(const struct cfg *cfg, const char *user)
{
    if (!user)
        return -1;
    for (size_t i = 0; i < cfg->n_services; i++)
        for (size_t k = 0; k < cfg->services[i].n_users; k++)
            if (strcmp(cfg->services[i].users[k], user) == 0)
                return (int)i;
    return -1;
}

int cfg_is_dedup_port(const struct cfg *cfg, uint16_t port)
{
    for (size_t i = 0; i < cfg->n_nfs_ports; i++)
        if (cfg->nfs_ports[i] == port)
            return 1;
    return cfg_service_of_port(cfg, port) >= 0;
}

size_t cfg_path(const struct cfg *cfg, int src, int dst, int *out, size_t max)
{
    if (src < 0 || dst < 0 || max < 2)
        return 0;
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const struct cfg_route *r = &cfg->routes[i];
        if (r->src_idx != src || r->dst_idx != dst)
            continue;
        if (r->n_via + 2 > max)
            return 0;
        size_t n = 0;
        out[n++] = src;
        for (size_t k = 0; k < r->n_via; k++)
            out[n++] = r->via_idx[k];
        out[n++] = dst;
        return n;
    }
    if (sites_linked(cfg, src, dst)) {
        out[0] = src;
        out[1] = dst;
        return 2;
    }
    return 0;
}

void cfg_print_summary(const struct cfg *cfg, void *fp)
{
    FILE *f = fp;
    fprintf(f, "%s: valid\n", cfg->path);
    fprintf(f, "windows: %d s, grace %d s, tick %d s; listen %s; reconciler %s\n",
            cfg->window_seconds, cfg->grace_seconds, cfg->tick_seconds, cfg->listen,
            cfg->reconciler_url);
    fprintf(f,
            "thresholds: green >= %.2f, red < %.2f, over > %.2f, idle below %llu bytes, "
            "alert after %d windows, resolve after %d, saturation %.0f%%\n",
            cfg->green, cfg->red, cfg->over, (unsigned long long)cfg->min_gap_bytes,
            cfg->alert_windows, cfg->resolve_windows, cfg->saturation * 100);
    fprintf(f, "sites (%zu):\n", cfg->n_sites);
    for (size_t i = 0; i < cfg->n_sites; i++) {
        fprintf(f, "  %-12s", cfg->sites[i].name);
        for (size_t k = 0; k < cfg->sites[i].n_prefixes; k++) {
            const struct cfg_prefix *p = &cfg->sites[i].prefixes[k];
            char buf[INET6_ADDRSTRLEN];
            inet_ntop(p->family, p->addr, buf, sizeof(buf));
            fprintf(f, " %s/%d", buf, p->len);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "devices (%zu):\n", cfg->n_devices);
    for (size_t i = 0; i < cfg->n_devices; i++) {
        const struct cfg_device *d = &cfg->devices[i];
        fprintf(f, "  %-16s site %-8s", d->name, d->site);
        if (d->has_snmp)
            fprintf(f, " snmp v%s %s every %d s",
                    d->snmp.version == 2   ? "2c"
                    : d->snmp.version == 3 ? "3"
                                           : "1",
                    d->snmp.address, d->snmp.interval_seconds);
        if (d->has_gnmi)
            fprintf(f, " gnmi source \"%s\"", d->gnmi_source);
        if (d->has_flows)
            fprintf(f, " flows %s on %s",
                    d->flows.protocol == CFG_FLOW_SFLOW      ? "sflow"
                    : d->flows.protocol == CFG_FLOW_NETFLOW9 ? "netflow9"
                                                             : "ipfix",
                    d->flows.listen);
        fprintf(f, "\n");
    }
    fprintf(f, "links (%zu):\n", cfg->n_links);
    for (size_t i = 0; i < cfg->n_links; i++) {
        const struct cfg_link *l = &cfg->links[i];
        fprintf(f, "  %-12s %s -> %s  %s %s", l->circuit, l->site, l->peer_site, l->device,
                l->interface);
        if (l->capacity_bps)
            fprintf(f, "  %.3g Gbit/s", l->capacity_bps / 1e9);
        fprintf(f, "\n");
    }
    fprintf(f, "routes (%zu):\n", cfg->n_routes);
    for (size_t i = 0; i < cfg->n_routes; i++) {
        const struct cfg_route *r = &cfg->routes[i];
        fprintf(f, "  %s", r->src);
        for (size_t k = 0; k < r->n_via; k++)
            fprintf(f, " -> %s", r->via[k]);
        fprintf(f, " -> %s\n", r->dst);
    }
    fprintf(f, "dedup: nfs ports");
    for (size_t i = 0; i < cfg->n_nfs_ports; i++)
        fprintf(f, " %u", cfg->nfs_ports[i]);
    for (size_t i = 0; i < cfg->n_services; i++) {
        fprintf(f, "; service %s ports", cfg->services[i].name);
        for (size_t k = 0; k < cfg->services[i].n_ports; k++)
            fprintf(f, " %u", cfg->services[i].ports[k]);
    }
    fprintf(f, "\nalerts: %zu webhook(s), resend every %d s\n", cfg->n_webhooks,
            cfg->resend_seconds);
}

static cJSON *str_array(char **items, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(items[i]));
    return a;
}

static cJSON *port_array(const uint16_t *ports, size_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(ports[i]));
    return a;
}

static void add_str(cJSON *o, const char *k, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, k, v);
}

char *cfg_to_json(const struct cfg *cfg)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "window_seconds", cfg->window_seconds);
    cJSON_AddNumberToObject(r, "grace_seconds", cfg->grace_seconds);
    cJSON_AddNumberToObject(r, "tick_seconds", cfg->tick_seconds);
    cJSON_AddNumberToObject(r, "max_future_seconds", cfg->max_future_seconds);
    add_str(r, "database", cfg->database);
    add_str(r, "database_password_file", cfg->database_password_file);
    add_str(r, "listen", cfg->listen);
    add_str(r, "tokens_file", cfg->tokens_file);
    add_str(r, "reconciler_url", cfg->reconciler_url);
    add_str(r, "public_url", cfg->public_url);
    cJSON_AddBoolToObject(r, "open_on_loopback", cfg->open_on_loopback);
    cJSON *sites = cJSON_AddArrayToObject(r, "sites");
    for (size_t i = 0; i < cfg->n_sites; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddStringToObject(s, "name", cfg->sites[i].name);
        cJSON *pre = cJSON_AddArrayToObject(s, "prefixes");
        for (size_t k = 0; k < cfg->sites[i].n_prefixes; k++) {
            const struct cfg_prefix *p = &cfg->sites[i].prefixes[k];
            char a[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 8];
            inet_ntop(p->family, p->addr, a, sizeof(a));
            snprintf(buf, sizeof(buf), "%s/%d", a, p->len);
            cJSON_AddItemToArray(pre, cJSON_CreateString(buf));
        }
        cJSON_AddItemToArray(sites, s);
    }
    cJSON *devs = cJSON_AddArrayToObject(r, "devices");
    for (size_t i = 0; i < cfg->n_devices; i++) {
        const struct cfg_device *d = &cfg->devices[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", d->name);
        cJSON_AddStringToObject(o, "site", d->site);
        if (d->has_snmp) {
            const struct cfg_snmp *s = &d->snmp;
            cJSON *so = cJSON_AddObjectToObject(o, "snmp");
            cJSON_AddStringToObject(so, "address", s->address);
            cJSON_AddStringToObject(so, "version",
                                    s->version == 1   ? "1"
                                    : s->version == 2 ? "2c"
                                                      : "3");
            add_str(so, "community_file", s->community_file);
            add_str(so, "user", s->user);
            add_str(so, "security_level", s->security_level);
            add_str(so, "auth_protocol", s->auth_protocol);
            add_str(so, "auth_password_file", s->auth_password_file);
            add_str(so, "priv_protocol", s->priv_protocol);
            add_str(so, "priv_password_file", s->priv_password_file);
            cJSON_AddNumberToObject(so, "interval_seconds", s->interval_seconds);
            cJSON_AddNumberToObject(so, "timeout_ms", s->timeout_ms);
            cJSON_AddNumberToObject(so, "retries", s->retries);
        }
        if (d->has_flows) {
            static const char *const fp[] = {"ipfix", "netflow9", "sflow"};
            cJSON *fo = cJSON_AddObjectToObject(o, "flows");
            add_str(fo, "listen", d->flows.listen);
            add_str(fo, "protocol", fp[d->flows.protocol]);
        }
        if (d->has_gnmi) {
            cJSON *g = cJSON_AddObjectToObject(o, "gnmi");
            add_str(g, "source", d->gnmi_source);
        }
        cJSON_AddItemToArray(devs, o);
    }
    cJSON *links = cJSON_AddArrayToObject(r, "links");
    for (size_t i = 0; i < cfg->n_links; i++) {
        const struct cfg_link *l = &cfg->links[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "device", l->device);
        cJSON_AddStringToObject(o, "interface", l->interface);
        cJSON_AddStringToObject(o, "site", l->site);
        cJSON_AddStringToObject(o, "peer_site", l->peer_site);
        cJSON_AddStringToObject(o, "circuit", l->circuit);
        cJSON_AddNumberToObject(o, "capacity_bps", (double)l->capacity_bps);
        cJSON_AddItemToArray(links, o);
    }
    cJSON *routes = cJSON_AddArrayToObject(r, "routes");
    for (size_t i = 0; i < cfg->n_routes; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "src", cfg->routes[i].src);
        cJSON_AddStringToObject(o, "dst", cfg->routes[i].dst);
        cJSON_AddItemToObject(o, "via", str_array(cfg->routes[i].via, cfg->routes[i].n_via));
        cJSON_AddItemToArray(routes, o);
    }
    cJSON *dd = cJSON_AddObjectToObject(r, "dedup");
    cJSON_AddItemToObject(dd, "nfs_ports", port_array(cfg->nfs_ports, cfg->n_nfs_ports));
    cJSON *svcs = cJSON_AddArrayToObject(dd, "services");
    for (size_t i = 0; i < cfg->n_services; i++) {
        const struct cfg_service *s = &cfg->services[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", s->name);
        cJSON_AddItemToObject(o, "ports", port_array(s->ports, s->n_ports));
        cJSON_AddItemToObject(o, "users", str_array(s->users, s->n_users));
        cJSON_AddItemToArray(svcs, o);
    }
    cJSON *ov = cJSON_AddObjectToObject(r, "overhead");
    cJSON_AddNumberToObject(ov, "bytes_per_packet", cfg->bytes_per_packet);
    cJSON_AddNumberToObject(ov, "ratio_without_packets", cfg->ratio_without_packets);
    cJSON *th = cJSON_AddObjectToObject(r, "thresholds");
    cJSON_AddNumberToObject(th, "green", cfg->green);
    cJSON_AddNumberToObject(th, "red", cfg->red);
    cJSON_AddNumberToObject(th, "min_gap_bytes", (double)cfg->min_gap_bytes);
    cJSON_AddNumberToObject(th, "over", cfg->over);
    cJSON_AddNumberToObject(th, "alert_windows", cfg->alert_windows);
    cJSON_AddNumberToObject(th, "resolve_windows", cfg->resolve_windows);
    cJSON_AddNumberToObject(th, "saturation", cfg->saturation);
    cJSON *al = cJSON_AddObjectToObject(r, "alerts");
    cJSON_AddItemToObject(al, "webhooks", str_array(cfg->webhooks, cfg->n_webhooks));
    cJSON_AddNumberToObject(al, "resend_seconds", cfg->resend_seconds);
    cJSON *li = cJSON_AddObjectToObject(r, "limits");
    cJSON_AddNumberToObject(li, "max_body_bytes", (double)cfg->max_body_bytes);
    cJSON_AddNumberToObject(li, "max_flow_bps", (double)cfg->max_flow_bps);
    cJSON *po = cJSON_AddObjectToObject(r, "poller");
    add_str(po, "spool_dir", cfg->spool_dir);
    cJSON_AddNumberToObject(po, "spool_max_bytes", (double)cfg->spool_max_bytes);
    add_str(po, "gnmi_tcp_listen", cfg->gnmi_tcp_listen);
    add_str(po, "gnmi_udp_listen", cfg->gnmi_udp_listen);
    char *out = cJSON_Print(r);
    cJSON_Delete(r);
    return out;
}
