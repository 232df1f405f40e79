/* The configuration written back out: `check-config`'s summary and the canonical JSON. */
#include "cfg_internal.h"
#include "config.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

void cfg_print_summary(const struct cfg *cfg, void *fp)
{
    FILE *f = fp;
    fprintf(f, "%s: valid\n", cfg->path);
    fprintf(f, "windows: %d s, grace %d s, tick %d s; listen %s; reconciler %s\n",
            cfg->window_seconds, cfg->grace_seconds, cfg->tick_seconds, cfg->listen,
            cfg->reconciler_url);
    fprintf(
        f,
        "thresholds: green >= %.2f, red < %.2f, over > %.2f, idle below %llu bytes, "
        "alert after %d windows, resolve after %d, saturation %.0f%%, counters up to %g s old\n",
        cfg->green, cfg->red, cfg->over, (unsigned long long)cfg->min_gap_bytes, cfg->alert_windows,
        cfg->resolve_windows, cfg->saturation * 100, cfg->counter_staleness_seconds);
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
            fprintf(f, " flows %s on %s", cfg_flow_protocol_name(d->flows.protocol),
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

/* sites, devices, links and routes */
static void dump_topology(cJSON *r, const struct cfg *cfg)
{
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
            cJSON *fo = cJSON_AddObjectToObject(o, "flows");
            add_str(fo, "listen", d->flows.listen);
            add_str(fo, "protocol", cfg_flow_protocol_name(d->flows.protocol));
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
}

/* dedup and the dependency map's endpoint names */
static void dump_dedup(cJSON *r, const struct cfg *cfg)
{
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
    if (cfg->n_endpoints) {
        cJSON *eps = cJSON_AddArrayToObject(r, "endpoints");
        for (size_t i = 0; i < cfg->n_endpoints; i++) {
            const struct cfg_endpoint *e = &cfg->endpoints[i];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "name", e->name);
            if (e->address)
                cJSON_AddStringToObject(o, "address", e->address);
            if (e->n_ports)
                cJSON_AddItemToObject(o, "ports", port_array(e->ports, e->n_ports));
            cJSON_AddItemToArray(eps, o);
        }
    }
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
    dump_topology(r, cfg);
    dump_dedup(r, cfg);
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
    cJSON_AddNumberToObject(th, "counter_staleness_seconds", cfg->counter_staleness_seconds);
    cJSON *al = cJSON_AddObjectToObject(r, "alerts");
    cJSON_AddItemToObject(al, "webhooks", str_array(cfg->webhooks, cfg->n_webhooks));
    cJSON_AddNumberToObject(al, "resend_seconds", cfg->resend_seconds);
    cJSON *li = cJSON_AddObjectToObject(r, "limits");
    cJSON_AddNumberToObject(li, "max_body_bytes", (double)cfg->max_body_bytes);
    cJSON_AddNumberToObject(li, "max_flow_bps", (double)cfg->max_flow_bps);
    cfg_dump_server(cfg, r, li);
    cJSON *po = cJSON_AddObjectToObject(r, "poller");
    add_str(po, "spool_dir", cfg->spool_dir);
    cJSON_AddNumberToObject(po, "spool_max_bytes", (double)cfg->spool_max_bytes);
    add_str(po, "gnmi_tcp_listen", cfg->gnmi_tcp_listen);
    add_str(po, "gnmi_udp_listen", cfg->gnmi_udp_listen);
    add_str(po, "gnmi_delimiter", cfg->gnmi_delimiter);
    add_str(po, "metrics_listen", cfg->metrics_listen);
    cJSON *dv = cJSON_AddObjectToObject(r, "delivery");
    const char *comp = wl_compress_name(cfg->delivery.compress);
    add_str(dv, "compress", comp ? comp : "none");
    add_str(dv, "ca_file", cfg->delivery.ca_file);
    add_str(dv, "client_cert", cfg->delivery.client_cert);
    add_str(dv, "client_key", cfg->delivery.client_key);
    cJSON_AddBoolToObject(dv, "allow_plain_http", cfg->delivery.allow_plain_http);
    cfg_dump_analytics(cfg, r);
    char *out = cJSON_Print(r);
    cJSON_Delete(r);
    return out;
}
