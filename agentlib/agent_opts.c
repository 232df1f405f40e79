/* Flags and the optional JSON settings file of wanledger-agent. */
#include "agent_opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "hostport.h"
#include "jsonv.h"

enum {
    OPT_RECONCILER = 256,
    OPT_TOKEN_FILE,
    OPT_WINDOW,
    OPT_K,
    OPT_NETNS,
    OPT_CGROUP,
    OPT_WORKFLOW_ENV,
    OPT_STDOUT,
    OPT_ONCE,
    OPT_METRICS,
    OPT_ATTACH,
    OPT_SPOOL,
    OPT_SPOOL_MAX,
    OPT_AGENT_ID,
    OPT_HOST,
    OPT_EXCLUDE_PORTS,
    OPT_MAP_ENTRIES,
    OPT_PIN_DIR,
    OPT_RELEASE_PINS,
    OPT_KUBE_LOGS,
    OPT_THROTTLE,
    OPT_THROTTLE_INTERVAL,
    OPT_THROTTLE_FAIL_OPEN,
    OPT_SITE,
    OPT_CONFIG,
    OPT_HELP,
    /* delivery (common/deliver.h) */
    OPT_COMPRESS,
    OPT_REPORT_VERSION,
    OPT_CA_FILE,
    OPT_CLIENT_CERT,
    OPT_CLIENT_KEY,
    OPT_ALLOW_PLAIN,
};

static const struct option long_opts[] = {
    {"reconciler", required_argument, NULL, OPT_RECONCILER},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"k", required_argument, NULL, OPT_K},
    {"netns", required_argument, NULL, OPT_NETNS},
    {"cgroup", required_argument, NULL, OPT_CGROUP},
    {"workflow-env", required_argument, NULL, OPT_WORKFLOW_ENV},
    {"stdout", no_argument, NULL, OPT_STDOUT},
    {"once", no_argument, NULL, OPT_ONCE},
    {"metrics", required_argument, NULL, OPT_METRICS},
    {"attach", required_argument, NULL, OPT_ATTACH},
    {"spool", required_argument, NULL, OPT_SPOOL},
    {"kube-logs", required_argument, NULL, OPT_KUBE_LOGS},
    {"spool-max-bytes", required_argument, NULL, OPT_SPOOL_MAX},
    {"agent-id", required_argument, NULL, OPT_AGENT_ID},
    {"host", required_argument, NULL, OPT_HOST},
    {"exclude-ports", required_argument, NULL, OPT_EXCLUDE_PORTS},
    {"map-entries", required_argument, NULL, OPT_MAP_ENTRIES},
    {"pin-dir", required_argument, NULL, OPT_PIN_DIR},
    {"release-pins", no_argument, NULL, OPT_RELEASE_PINS},
    {"throttle", required_argument, NULL, OPT_THROTTLE},
    {"throttle-interval", required_argument, NULL, OPT_THROTTLE_INTERVAL},
    {"throttle-fail-open", required_argument, NULL, OPT_THROTTLE_FAIL_OPEN},
    {"site", required_argument, NULL, OPT_SITE},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"compress", required_argument, NULL, OPT_COMPRESS},
    {"report-version", required_argument, NULL, OPT_REPORT_VERSION},
    {"ca-file", required_argument, NULL, OPT_CA_FILE},
    {"client-cert", required_argument, NULL, OPT_CLIENT_CERT},
    {"client-key", required_argument, NULL, OPT_CLIENT_KEY},
    {"allow-plain-http", required_argument, NULL, OPT_ALLOW_PLAIN},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

void agent_opts_usage(FILE *f)
{
    fprintf(
        f,
        "usage: wanledger-agent [options]\n"
        "  --reconciler URL      reconciler base URL (POST URL/v1/attributions)\n"
        "  --token-file F        file holding the agent bearer token\n"
        "  --window S            window length in seconds (default 60)\n"
        "  --k N                 flows kept per window before priority sampling (1000)\n"
        "  --netns PATH          count only this network namespace (/run/netns/x)\n"
        "  --cgroup PATH         count only this cgroup v2 subtree\n"
        "  --workflow-env A,B    environment variables naming the workflow\n"
        "                        (WANLEDGER_WORKFLOW,SLURM_JOB_ID)\n"
        "  --stdout              print each report as one JSON line instead of posting\n"
        "  --once                stop after the first report\n"
        "  --metrics ADDR:PORT   serve Prometheus text at /metrics\n"
        "  --attach MODE         tp_btf | fentry | kprobe | auto (default auto)\n"
        "  --spool DIR           on-disk spool (/var/lib/wanledger/agent-spool)\n"
        "  --spool-max-bytes N   spool bound (67108864)\n"
        "  --agent-id ID         default: created once in SPOOL/agent_id\n"
        "  --host NAME           default: the host name\n"
        "  --exclude-ports P,Q   ports never counted (at most 16)\n"
        "  --map-entries N       flows per map generation (65536)\n"
        "  --pin-dir DIR|none    bpffs directory keeping the probe across restarts\n"
        "                        (/sys/fs/bpf/wanledger/AGENT_ID)\n"
        "  --release-pins        on exit, remove the pins: the probe stops counting\n"
        "  --kube-logs DIR       the kubelet's log root holding pods/ and containers/\n"
        "                        (/var/log): pod namespace, name, container name\n"
        "  --throttle on|off     apply the reconciler's throttle rules (on; needs root)\n"
        "  --throttle-interval S seconds between rule fetches (5)\n"
        "  --throttle-fail-open S  remove every rule after S seconds without the\n"
        "                        reconciler (60)\n"
        "  --site S              this host's site (throttle rules scoped to a site)\n"
        "  --compress ALG        report bodies as zstd (default), gzip or none\n"
        "  --report-version N    2 (default: each process once) or 1 (its fields in every\n"
        "                        flow), for reconcilers older than version 2\n"
        "  --ca-file F           CA bundle (PEM) an https:// reconciler must chain to\n"
        "  --client-cert F       client certificate (PEM) for mutual TLS\n"
        "  --client-key F        its private key (default: in --client-cert)\n"
        "  --allow-plain-http yes  allow http:// to a non-loopback reconciler (the token\n"
        "                        then crosses the network in clear text)\n"
        "  --config FILE         JSON file with the same keys (reconciler, token_file,\n"
        "                        window_seconds, k, netns, cgroup, workflow_env, metrics,\n"
        "                        attach, spool, spool_max_bytes, agent_id, host,\n"
        "                        exclude_ports, map_entries, pin_dir, kube_logs, throttle,\n"
        "                        throttle_interval, throttle_fail_open, site, compress, ca_file,\n"
        "                        client_cert, client_key, allow_plain_http,\n"
        "                        report_version); flags win\n"
        "  -v, --verbose         debug logging\n");
}

static int set_str(char **dst, const char *v)
{
    char *c = strdup(v);
    if (!c)
        return -1;
    free(*dst);
    *dst = c;
    return 0;
}

static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s[0] || s[0] == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int set_workflow_env(struct agent_opts *o, const char *list, char *err, size_t errlen,
                            const char *where)
{
    for (size_t i = 0; i < o->n_workflow_env; i++)
        free(o->workflow_env[i]);
    o->n_workflow_env = 0;
    char *copy = strdup(list);
    char *save = NULL;
    if (!copy)
        return -1;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->n_workflow_env == AGENT_MAX_WORKFLOW_ENV || strchr(t, '=')) {
            snprintf(err, errlen, "%s: expected at most %d variable names without '=', got \"%s\"",
                     where, AGENT_MAX_WORKFLOW_ENV, list);
            free(copy);
            return -1;
        }
        o->workflow_env[o->n_workflow_env] = strdup(t);
        if (!o->workflow_env[o->n_workflow_env]) {
            free(copy);
            return -1;
        }
        o->n_workflow_env++;
    }
    free(copy);
    return 0;
}

static int set_ports(struct agent_opts *o, const char *list, char *err, size_t errlen,
                     const char *where)
{
    char *copy = strdup(list);
    char *save = NULL;
    if (!copy)
        return -1;
    o->n_excl_ports = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        uint64_t p;
        if (o->n_excl_ports == SOCKPROBE_MAX_EXCL_PORTS || parse_u64(t, 1, 65535, &p)) {
            snprintf(err, errlen, "%s: expected at most %d ports 1-65535, got \"%s\"", where,
                     SOCKPROBE_MAX_EXCL_PORTS, list);
            free(copy);
            return -1;
        }
        o->excl_ports[o->n_excl_ports++] = (uint16_t)p;
    }
    free(copy);
    return 0;
}

/* Applies one setting by its flag id; where names the flag or "FILE: $.key". */
static int apply(struct agent_opts *o, int id, const char *v, const char *where, char *err,
                 size_t errlen)
{
    uint64_t n;
    switch (id) {
    case OPT_RECONCILER:
        if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
            snprintf(err, errlen, "%s: expected an http:// or https:// URL, got \"%s\"", where, v);
            return -1;
        }
        return set_str(&o->reconciler, v);
    case OPT_TOKEN_FILE:
        return set_str(&o->token_file, v);
    case OPT_WINDOW:
        if (parse_u64(v, 1, 86400, &n)) {
            snprintf(err, errlen, "%s: expected seconds 1-86400, got \"%s\"", where, v);
            return -1;
        }
        o->window_seconds = (int)n;
        return 0;
    case OPT_K:
        if (parse_u64(v, 1, 10000000, &n)) {
            snprintf(err, errlen, "%s: expected a flow count 1-10000000, got \"%s\"", where, v);
            return -1;
        }
        o->k = (size_t)n;
        return 0;
    case OPT_NETNS:
        return set_str(&o->netns, v);
    case OPT_CGROUP:
        return set_str(&o->cgroup, v);
    case OPT_WORKFLOW_ENV:
        return set_workflow_env(o, v, err, errlen, where);
    case OPT_METRICS: {
        struct hostport hp;
        char why[300];
        if (hostport_parse(v, strlen(v), 0, &hp, why, sizeof(why)) != 0) {
            snprintf(err, errlen, "%s: expected ADDRESS:PORT, got %s", where, why);
            return -1;
        }
    }
        return set_str(&o->metrics, v);
    case OPT_ATTACH:
        if (sockprobe_parse_mode(v, &o->attach)) {
            snprintf(err, errlen, "%s: expected tp_btf, fentry, kprobe or auto, got \"%s\"", where,
                     v);
            return -1;
        }
        return 0;
    case OPT_SPOOL:
        return set_str(&o->spool_dir, v);
    case OPT_KUBE_LOGS:
        return set_str(&o->kube_logs, v);
    case OPT_SPOOL_MAX:
        if (parse_u64(v, 4096, UINT64_MAX / 2, &o->spool_max_bytes)) {
            snprintf(err, errlen, "%s: expected bytes >= 4096, got \"%s\"", where, v);
            return -1;
        }
        return 0;
    case OPT_AGENT_ID:
        return set_str(&o->agent_id, v);
    case OPT_HOST:
        return set_str(&o->host, v);
    case OPT_SITE:
        return set_str(&o->site, v);
    case OPT_EXCLUDE_PORTS:
        return set_ports(o, v, err, errlen, where);
    case OPT_PIN_DIR:
        if (v[0] != '/' && strcmp(v, "none") != 0) {
            snprintf(err, errlen, "%s: expected an absolute bpffs path or none, got \"%s\"", where,
                     v);
            return -1;
        }
        return set_str(&o->pin_dir, v);
    case OPT_MAP_ENTRIES:
        if (parse_u64(v, 1, 1u << 24, &n)) {
            snprintf(err, errlen, "%s: expected 1-16777216 entries, got \"%s\"", where, v);
            return -1;
        }
        o->map_entries = (uint32_t)n;
        return 0;
    case OPT_COMPRESS:
        if (wl_compress_parse(v, &o->compress)) {
            snprintf(err, errlen, "%s: expected zstd, gzip or none, got \"%s\"", where, v);
            return -1;
        }
        return 0;
    case OPT_REPORT_VERSION:
        if (parse_u64(v, 1, 2, &n)) {
            snprintf(err, errlen, "%s: expected 1 or 2, got \"%s\"", where, v);
            return -1;
        }
        o->report_version = (int)n;
        return 0;
    case OPT_CA_FILE:
        return set_str(&o->ca_file, v);
    case OPT_CLIENT_CERT:
        return set_str(&o->client_cert, v);
    case OPT_CLIENT_KEY:
        return set_str(&o->client_key, v);
    case OPT_ALLOW_PLAIN:
        if (strcmp(v, "yes") && strcmp(v, "true") && strcmp(v, "no") && strcmp(v, "false")) {
            snprintf(err, errlen, "%s: expected yes or no, got \"%s\"", where, v);
            return -1;
        }
        o->allow_plain_http = !strcmp(v, "yes") || !strcmp(v, "true");
        return 0;
    case OPT_THROTTLE:
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
            snprintf(err, errlen, "%s: expected on or off, got \"%s\"", where, v);
            return -1;
        }
        o->throttle_off = strcmp(v, "off") == 0;
        return 0;
    case OPT_THROTTLE_INTERVAL:
        if (parse_u64(v, 1, 60, &n)) {
            snprintf(err, errlen, "%s: expected seconds 1-60, got \"%s\"", where, v);
            return -1;
        }
        o->throttle_interval = (int)n;
        return 0;
    case OPT_THROTTLE_FAIL_OPEN:
        if (parse_u64(v, 2, 86400, &n)) {
            snprintf(err, errlen, "%s: expected seconds 2-86400, got \"%s\"", where, v);
            return -1;
        }
        o->throttle_fail_open = (int)n;
        return 0;
    default:
        return -1;
    }
}

static const struct {
    const char *key;
    int id;
} json_keys[] = {
    {"reconciler", OPT_RECONCILER},
    {"token_file", OPT_TOKEN_FILE},
    {"window_seconds", OPT_WINDOW},
    {"k", OPT_K},
    {"netns", OPT_NETNS},
    {"cgroup", OPT_CGROUP},
    {"workflow_env", OPT_WORKFLOW_ENV},
    {"metrics", OPT_METRICS},
    {"attach", OPT_ATTACH},
    {"spool", OPT_SPOOL},
    {"spool_max_bytes", OPT_SPOOL_MAX},
    {"agent_id", OPT_AGENT_ID},
    {"host", OPT_HOST},
    {"exclude_ports", OPT_EXCLUDE_PORTS},
    {"map_entries", OPT_MAP_ENTRIES},
    {"pin_dir", OPT_PIN_DIR},
    {"compress", OPT_COMPRESS},
    {"report_version", OPT_REPORT_VERSION},
    {"ca_file", OPT_CA_FILE},
    {"client_cert", OPT_CLIENT_CERT},
    {"client_key", OPT_CLIENT_KEY},
    {"allow_plain_http", OPT_ALLOW_PLAIN},
    {"kube_logs", OPT_KUBE_LOGS},
    {"throttle", OPT_THROTTLE},
    {"throttle_interval", OPT_THROTTLE_INTERVAL},
    {"throttle_fail_open", OPT_THROTTLE_FAIL_OPEN},
    {"site", OPT_SITE},
};

/* A JSON value as the flag text: strings as is, integers in decimal (exact), arrays
 * comma-joined. */
static int json_as_text(const struct jv *v, char *buf, size_t len)
{
    uint64_t u;
    if (v->type == JV_STRING) {
        snprintf(buf, len, "%s", v->s);
        return 0;
    }
    if (v->type == JV_NUMBER) {
        if (!jv_u64(v, &u))
            return -1;
        snprintf(buf, len, "%llu", (unsigned long long)u);
        return 0;
    }
    if (v->type == JV_TRUE || v->type == JV_FALSE) {
        snprintf(buf, len, "%s", v->type == JV_TRUE ? "true" : "false");
        return 0;
    }
    if (v->type == JV_ARRAY) {
        size_t off = 0;
        buf[0] = '\0';
        for (const struct jv *e = v->child; e; e = e->next) {
            char one[256];
            if (e->type == JV_ARRAY || json_as_text(e, one, sizeof(one)))
                return -1;
            off +=
                (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s", off ? "," : "", one);
        }
        return off < len ? 0 : -1;
    }
    return -1;
}

static int load_config(struct agent_opts *o, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "re");
    char *text = NULL;
    struct jv_doc *doc = NULL;
    struct jv *root = NULL;
    int rc = -1;
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    const size_t cap = 1 << 16;
    text = malloc(cap);
    if (!text) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t n = fread(text, 1, cap - 1, f);
    fclose(f);
    text[n] = '\0';
    if (n == cap - 1) {
        snprintf(err, errlen, "%s: larger than %zu bytes", path, cap - 1);
        goto cleanup;
    }
    size_t n_values;
    struct jv_error je;
    doc = jv_parse(text, n, false, &root, &n_values, &je);
    if (!doc) {
        snprintf(err, errlen, "%s: %s: %s (byte %zu)", path, je.path, je.msg, je.offset);
        goto cleanup;
    }
    if (root->type != JV_OBJECT) {
        snprintf(err, errlen, "%s: $: expected a JSON object", path);
        goto cleanup;
    }
    for (const struct jv *item = root->child; item; item = item->next) {
        int id = -1;
        char where[512], val[1024];
        for (size_t i = 0; i < sizeof(json_keys) / sizeof(json_keys[0]); i++)
            if (strcmp(item->key, json_keys[i].key) == 0)
                id = json_keys[i].id;
        snprintf(where, sizeof(where), "%s: $.%s", path, item->key);
        if (id < 0) {
            snprintf(err, errlen, "%s: unknown setting", where);
            goto cleanup;
        }
        if (json_as_text(item, val, sizeof(val))) {
            snprintf(err, errlen, "%s: expected a string, a non-negative integer or a list", where);
            goto cleanup;
        }
        if (apply(o, id, val, where, err, errlen)) {
            if (!err[0])
                snprintf(err, errlen, "out of memory");
            goto cleanup;
        }
    }
    rc = 0;
cleanup:
    jv_doc_free(doc);
    free(text);
    return rc;
}

/* The token is a secret: a file that group or others may read is refused (as the reconciler
 * refuses its token and community files), with the mode and the chmod that fixes it. */
static int read_token(struct agent_opts *o, char *err, size_t errlen)
{
    char why[256];
    char *buf = cfg_read_file(o->token_file, 4096, 1, why, sizeof(why));
    if (!buf) {
        snprintf(err, errlen, "--token-file %s: %s", o->token_file, why);
        return -1;
    }
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!buf[0]) {
        free(buf);
        snprintf(err, errlen, "--token-file %s: the file is empty", o->token_file);
        return -1;
    }
    int rc = set_str(&o->token, buf);
    free(buf);
    return rc;
}

int agent_opts_parse(struct agent_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    memset(o, 0, sizeof(*o));
    o->window_seconds = 60;
    o->throttle_interval = 5;
    o->throttle_fail_open = 60;
    o->k = 1000;
    o->report_version = 2;
    o->spool_max_bytes = 64ull << 20;
    err[0] = '\0';
    if (set_workflow_env(o, "WANLEDGER_WORKFLOW,SLURM_JOB_ID", err, errlen, "default"))
        return -1;
    /* the settings file first, so that flags override it */
    for (int i = 1; i < argc; i++) {
        const char *cfg = NULL;
        if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            cfg = argv[i + 1];
        else if (strncmp(argv[i], "--config=", 9) == 0)
            cfg = argv[i] + 9;
        if (cfg && load_config(o, cfg, err, errlen))
            return -1;
    }
    optind = 1;
    opterr = 0;
    for (;;) {
        int idx = 0;
        int c = getopt_long(argc, argv, ":v", long_opts, &idx);
        if (c == -1)
            break;
        if (c == 'v') {
            o->verbose++;
            continue;
        }
        if (c == OPT_HELP) {
            agent_opts_usage(stdout);
            return 1;
        }
        if (c == '?' || c == ':') {
            snprintf(err, errlen, "%s: %s", argv[optind - 1],
                     c == ':' ? "needs a value" : "unknown option (see --help)");
            return -1;
        }
        if (c == OPT_CONFIG)
            continue;
        if (c == OPT_STDOUT) {
            o->to_stdout = true;
            continue;
        }
        if (c == OPT_ONCE) {
            o->once = true;
            continue;
        }
        if (c == OPT_RELEASE_PINS) {
            o->release_pins = true;
            continue;
        }
        char where[64];
        snprintf(where, sizeof(where), "--%s", long_opts[idx].name);
        if (apply(o, c, optarg, where, err, errlen)) {
            if (!err[0])
                snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument \"%s\"", argv[optind]);
        return -1;
    }
    if (!o->to_stdout && !o->reconciler) {
        snprintf(err, errlen, "--reconciler URL (or --stdout) is required");
        return -1;
    }
    if (o->token_file && read_token(o, err, errlen))
        return -1;
    if (!o->spool_dir && set_str(&o->spool_dir, "/var/lib/wanledger/agent-spool"))
        return -1;
    if (!o->host) {
        char h[256];
        if (gethostname(h, sizeof(h)) != 0)
            snprintf(h, sizeof(h), "unknown");
        h[sizeof(h) - 1] = '\0';
        if (set_str(&o->host, h))
            return -1;
    }
    return 0;
}

void agent_opts_free(struct agent_opts *o)
{
    free(o->reconciler);
    free(o->token_file);
    free(o->token);
    free(o->netns);
    free(o->cgroup);
    for (size_t i = 0; i < o->n_workflow_env; i++)
        free(o->workflow_env[i]);
    free(o->metrics);
    free(o->spool_dir);
    free(o->kube_logs);
    free(o->agent_id);
    free(o->host);
    free(o->site);
    free(o->pin_dir);
    free(o->ca_file);
    free(o->client_cert);
    free(o->client_key);
    memset(o, 0, sizeof(*o));
}
