/* Reads the server-side JSON configuration into struct cfg and checks every field. All errors are
 * collected (not just the first) with the JSON path of the offending value. The top-level sections
 * are parsed in the order of the table in parse_root; a new section is a cfg_<name>.c file with
 * one cfg_parse_<name>(c, root) function, a line in that table and its members in cfg_free. */
#include "cell_status.h"
#include "cfg_internal.h"
#include "cfg_names.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The top-level scalars: windows, database, listen address, tokens, URLs. */
static void parse_general(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    cfg->window_seconds = (int)cfg_get_num(c, root, "window_seconds", "$", 1, 86400, 60, 1);
    if (86400 % cfg->window_seconds != 0)
        cfg_err(c, "$.window_seconds",
                "expected a divisor of 86400 so windows align with days, got %d",
                cfg->window_seconds);
    cfg->grace_seconds = (int)cfg_get_num(c, root, "grace_seconds", "$", 0, 86400, 90, 1);
    cfg->tick_seconds = (int)cfg_get_num(c, root, "tick_seconds", "$", 1, 3600, 5, 1);
    cfg->max_future_seconds =
        (int)cfg_get_num(c, root, "max_future_seconds", "$", 0, 86400, 120, 1);
    cfg->database = cfg_get_str(c, root, "database", "$", 0,
                                "host=127.0.0.1 port=5432 dbname=wanledger user=wanledger");
    if (cJSON_GetObjectItemCaseSensitive(root, "database_password_file")) {
        char *pw =
            cfg_load_secret(c, root, "database_password_file", "$", &cfg->database_password_file);
        free(pw); /* read again at connect time; checked here only */
    }
    cfg->listen = cfg_get_str(c, root, "listen", "$", 0, "127.0.0.1:7070");
    if (cfg->listen && !cfg_valid_hostport(cfg->listen))
        cfg_err(c, "$.listen", "expected HOST:PORT, got \"%s\"", cfg->listen);
    cfg->tokens_file = cfg_get_str(c, root, "tokens_file", "$", 0, NULL);
    if (cfg->tokens_file)
        cfg_parse_tokens(c);
    cfg->reconciler_url = cfg_get_str(c, root, "reconciler_url", "$", 0, NULL);
    if (!cfg->reconciler_url && cfg->listen) {
        size_t n = strlen(cfg->listen) + 8;
        cfg->reconciler_url = malloc(n);
        snprintf(cfg->reconciler_url, n, "http://%s", cfg->listen);
    } else if (cfg->reconciler_url && !cfg_valid_http_url(cfg->reconciler_url))
        cfg_err(c, "$.reconciler_url", "expected an http:// or https:// URL, got \"%s\"",
                cfg->reconciler_url);
    cfg->public_url = cfg_get_str(c, root, "public_url", "$", 0, cfg->reconciler_url);
    cfg->open_on_loopback = cfg_get_bool(c, root, "open_on_loopback", "$", 0);
}

static void parse_sites_sec(struct cfg_pctx *c, const cJSON *root)
{
    const cJSON *sites = cfg_get_arr(c, root, "sites", "$", 1);
    if (sites)
        cfg_parse_sites(c, sites);
}

static void parse_devices_sec(struct cfg_pctx *c, const cJSON *root)
{
    const cJSON *devs = cfg_get_arr(c, root, "devices", "$", 0);
    if (devs)
        cfg_parse_devices(c, devs);
}

static void parse_links_sec(struct cfg_pctx *c, const cJSON *root)
{
    const cJSON *links = cfg_get_arr(c, root, "links", "$", 0);
    if (links)
        cfg_parse_links(c, links);
}

static void parse_routes_sec(struct cfg_pctx *c, const cJSON *root)
{
    const cJSON *routes = cfg_get_arr(c, root, "routes", "$", 0);
    if (routes)
        cfg_parse_routes(c, routes);
}

static void parse_endpoints_sec(struct cfg_pctx *c, const cJSON *root)
{
    const cJSON *eps = cfg_get_arr(c, root, "endpoints", "$", 0);
    if (eps)
        cfg_parse_endpoints(c, eps);
}

static void parse_dedup_sec(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    cfg->nfs_ports = calloc(1, sizeof(uint16_t));
    cfg->nfs_ports[0] = 2049;
    cfg->n_nfs_ports = 1;
    const cJSON *dd = cfg_get_obj(c, root, "dedup", "$", 0);
    if (dd)
        cfg_parse_dedup(c, dd);
}

static void parse_overhead(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    const cJSON *ov = cfg_get_obj(c, root, "overhead", "$", 0);
    cfg->bytes_per_packet = 66;
    cfg->ratio_without_packets = 0.95;
    if (ov) {
        static const char *const k[] = {"bytes_per_packet", "ratio_without_packets", NULL};
        cfg_check_keys(c, ov, "$.overhead", k);
        cfg->bytes_per_packet =
            cfg_get_num(c, ov, "bytes_per_packet", "$.overhead", 0, 1500, 66, 0);
        cfg->ratio_without_packets =
            cfg_get_num(c, ov, "ratio_without_packets", "$.overhead", 0.01, 1, 0.95, 0);
    }
}

static void parse_thresholds(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    const cJSON *th = cfg_get_obj(c, root, "thresholds", "$", 0);
    cfg->green = CELL_DEFAULT_GREEN;
    cfg->red = CELL_DEFAULT_RED;
    cfg->min_gap_bytes = CELL_DEFAULT_MIN_GAP_BYTES;
    cfg->over = CELL_DEFAULT_OVER;
    cfg->alert_windows = 3;
    cfg->resolve_windows = 3;
    cfg->saturation = 0.90;
    if (!th)
        return;
    static const char *const k[] = {"green",
                                    "red",
                                    "min_gap_bytes",
                                    "over",
                                    "alert_windows",
                                    "resolve_windows",
                                    "saturation",
                                    "counter_staleness_seconds",
                                    NULL};
    const char *p = "$.thresholds";
    cfg_check_keys(c, th, p, k);
    cfg->green = cfg_get_num(c, th, "green", p, 0, 1, CELL_DEFAULT_GREEN, 0);
    cfg->red = cfg_get_num(c, th, "red", p, 0, 1, CELL_DEFAULT_RED, 0);
    cfg->min_gap_bytes =
        (uint64_t)cfg_get_num(c, th, "min_gap_bytes", p, 0, 1e18, CELL_DEFAULT_MIN_GAP_BYTES, 1);
    cfg->over = cfg_get_num(c, th, "over", p, 1, 100, CELL_DEFAULT_OVER, 0);
    cfg->alert_windows = (int)cfg_get_num(c, th, "alert_windows", p, 1, 1000, 3, 1);
    cfg->resolve_windows = (int)cfg_get_num(c, th, "resolve_windows", p, 1, 1000, 3, 1);
    cfg->saturation = cfg_get_num(c, th, "saturation", p, 0.01, 10, 0.90, 0);
    cfg->counter_staleness_seconds =
        cfg_get_num(c, th, "counter_staleness_seconds", p, 0, 3600, 0, 0);
    if (cfg->window_seconds > 0 && cfg->counter_staleness_seconds >= cfg->window_seconds / 2.0)
        cfg_err(c, "$.thresholds.counter_staleness_seconds",
                "expected less than half a window (%d s): %g s", cfg->window_seconds,
                cfg->counter_staleness_seconds);
    if (cfg->red > cfg->green)
        cfg_err(c, "$.thresholds.red", "expected red (%g) <= green (%g)", cfg->red, cfg->green);
}

static void parse_alerts(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    const cJSON *al = cfg_get_obj(c, root, "alerts", "$", 0);
    cfg->resend_seconds = 60;
    if (!al)
        return;
    static const char *const k[] = {"webhooks", "resend_seconds", NULL};
    cfg_check_keys(c, al, "$.alerts", k);
    cfg->webhooks = cfg_get_str_list(c, cfg_get_arr(c, al, "webhooks", "$.alerts", 0),
                                     "$.alerts.webhooks", &cfg->n_webhooks);
    char p[256];
    for (size_t i = 0; i < cfg->n_webhooks; i++)
        if (!cfg_valid_http_url(cfg->webhooks[i]) ||
            (strncmp(cfg->webhooks[i], "http://", 7) && strncmp(cfg->webhooks[i], "https://", 8)))
            cfg_err(c, cfg_jp_idx(p, sizeof(p), "$.alerts.webhooks", (int)i),
                    "expected an http:// or https:// URL, got \"%s\"", cfg->webhooks[i]);
    cfg->resend_seconds = (int)cfg_get_num(c, al, "resend_seconds", "$.alerts", 1, 86400, 60, 1);
}

static void parse_limits(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    const cJSON *li = cfg_get_obj(c, root, "limits", "$", 0);
    cfg->max_body_bytes = 64ull << 20;
    cfg->max_flow_bps = 400000000000ull;
    cfg_parse_limits_hardening(c, li);
    if (!li)
        return;
    static const char *const k[] = {
        "max_body_bytes", "max_flow_bps",    "max_past_days",    "max_transfer_seconds",
        "max_body_agent", "max_body_poller", "max_body_service", NULL};
    cfg_check_keys(c, li, "$.limits", k);
    cfg->max_body_bytes =
        (uint64_t)cfg_get_num(c, li, "max_body_bytes", "$.limits", 1024, 4294967296.0, 64 << 20, 1);
    cfg->max_flow_bps = (uint64_t)cfg_get_num(c, li, "max_flow_bps", "$.limits", 1, 1e15, 400e9, 1);
}

static void parse_poller(struct cfg_pctx *c, const cJSON *root)
{
    struct cfg *cfg = c->cfg;
    const cJSON *po = cfg_get_obj(c, root, "poller", "$", 0);
    cfg->spool_max_bytes = 256ull << 20;
    if (po) {
        static const char *const k[] = {"spool_dir",
                                        "spool_max_bytes",
                                        "gnmi_tcp_listen",
                                        "gnmi_udp_listen",
                                        "gnmi_delimiter",
                                        "metrics_listen",
                                        NULL};
        cfg_check_keys(c, po, "$.poller", k);
        cfg->spool_dir = cfg_get_str(c, po, "spool_dir", "$.poller", 0, NULL);
        cfg->spool_max_bytes =
            (uint64_t)cfg_get_num(c, po, "spool_max_bytes", "$.poller", 4096, 1e13, 256 << 20, 1);
        cfg->gnmi_tcp_listen = cfg_get_str(c, po, "gnmi_tcp_listen", "$.poller", 0, NULL);
        cfg->gnmi_udp_listen = cfg_get_str(c, po, "gnmi_udp_listen", "$.poller", 0, NULL);
        if (cfg->gnmi_tcp_listen && !cfg_valid_hostport(cfg->gnmi_tcp_listen))
            cfg_err(c, "$.poller.gnmi_tcp_listen", "expected HOST:PORT");
        if (cfg->gnmi_udp_listen && !cfg_valid_hostport(cfg->gnmi_udp_listen))
            cfg_err(c, "$.poller.gnmi_udp_listen", "expected HOST:PORT");
        cfg->gnmi_delimiter = cfg_get_str(c, po, "gnmi_delimiter", "$.poller", 0, NULL);
        cfg->metrics_listen = cfg_get_str(c, po, "metrics_listen", "$.poller", 0, NULL);
        if (cfg->metrics_listen && !cfg_valid_hostport(cfg->metrics_listen))
            cfg_err(c, "$.poller.metrics_listen", "expected HOST:PORT");
    }
    if (!cfg->spool_dir)
        cfg->spool_dir = strdup("/var/lib/wanledger/spool");
}

static void parse_delivery_sec(struct cfg_pctx *c, const cJSON *root)
{
    cfg_parse_delivery(c, cfg_get_obj(c, root, "delivery", "$", 0));
}

/* The top-level keys parse_general reads. */
static const char *const scalar_keys[] = {
    "window_seconds",         "grace_seconds", "tick_seconds", "max_future_seconds", "database",
    "database_password_file", "listen",        "tokens_file",  "reconciler_url",     "public_url",
    "open_on_loopback"};

/* Every top-level section, parsed in this order (later sections look up names from earlier ones:
 * devices name sites, links name devices, routes need links). Each function reads its own member
 * of root (which may be absent: it then sets the defaults). To add a section: write
 * cfg_<name>.c, declare its function in cfg_internal.h and add one line here. */
static const struct {
    const char *key;
    void (*parse)(struct cfg_pctx *c, const cJSON *root);
} sections[] = {
    {"sites", parse_sites_sec},         {"devices", parse_devices_sec},
    {"links", parse_links_sec},         {"routes", parse_routes_sec},
    {"dedup", parse_dedup_sec},         {"overhead", parse_overhead},
    {"thresholds", parse_thresholds},   {"alerts", parse_alerts},
    {"limits", parse_limits},           {"poller", parse_poller},
    {"retention", cfg_parse_retention}, {"endpoints", parse_endpoints_sec},
    {"throttle", cfg_parse_throttle},   {"server", cfg_parse_server},
    {"delivery", parse_delivery_sec},   {"analytics", cfg_parse_analytics},
};

#define N_SCALARS  (sizeof(scalar_keys) / sizeof(scalar_keys[0]))
#define N_SECTIONS (sizeof(sections) / sizeof(sections[0]))

static void parse_root(struct cfg_pctx *c, const cJSON *root)
{
    const char *top_keys[N_SCALARS + N_SECTIONS + 1];
    size_t n = 0;
    for (size_t i = 0; i < N_SCALARS; i++)
        top_keys[n++] = scalar_keys[i];
    for (size_t i = 0; i < N_SECTIONS; i++)
        top_keys[n++] = sections[i].key;
    top_keys[n] = NULL;
    cfg_check_keys(c, root, "$", top_keys);
    parse_general(c, root);
    for (size_t i = 0; i < N_SECTIONS; i++)
        sections[i].parse(c, root);
    /* times older than the raw data's retention are refused unless a bound is configured */
    if (c->cfg->max_past_days <= 0)
        c->cfg->max_past_days = c->cfg->retention_raw_days > 0 ? c->cfg->retention_raw_days : 30;
}

struct cfg *cfg_parse(const char *path, const char *json, struct cfg_errors *errs)
{
    memset(errs, 0, sizeof(*errs));
    struct cfg *cfg = calloc(1, sizeof(*cfg));
    struct cfg_pctx c = {.file = path, .errs = errs, .cfg = cfg};
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
        cfg_err(&c, "$", "not valid JSON (syntax error at line %d, column %d)", line, col);
    } else if (!cJSON_IsObject(root)) {
        cfg_err(&c, "$", "expected a JSON object, got %s", cfg_type_name(root));
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
                    cfg_err(&c, jp, "prefix listed twice");
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
    char why[300];
    char *text = cfg_read_file(path, 1u << 30, 0, why, sizeof(why));
    if (!text) {
        errs->items = calloc(1, sizeof(*errs->items));
        errs->items[0].jpath = strdup("$");
        char msg[512];
        snprintf(msg, sizeof(msg), "cannot read the configuration file: %s", why);
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
    cfg_free_server(cfg);
    cfg_names_free(cfg->site_names);
    cfg_names_free(cfg->device_names);
    free_list(cfg->tokens.agent_host, cfg->tokens.agent_host ? cfg->tokens.n_agent : 0);
    free_list(cfg->tokens.agent, cfg->tokens.n_agent);
    free_list(cfg->tokens.poller, cfg->tokens.n_poller);
    free_list(cfg->tokens.service, cfg->tokens.n_service);
    free_list(cfg->tokens.reader, cfg->tokens.n_reader);
    free_list(cfg->tokens.operator, cfg->tokens.n_operator);
    free_list(cfg->throttle.auto_enforce, cfg->throttle.n_auto_enforce);
    free(cfg->reconciler_url);
    free(cfg->public_url);
    cfg_free_delivery(&cfg->delivery);
    cfg_free_analytics(cfg);
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
    cfg_free_endpoints(cfg);
    free_list(cfg->webhooks, cfg->n_webhooks);
    free(cfg->spool_dir);
    free(cfg->gnmi_tcp_listen);
    free(cfg->gnmi_udp_listen);
    free(cfg->gnmi_delimiter);
    free(cfg->metrics_listen);
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
