/* Serialises one window's flows as the /v1/attributions JSON body. */
#include "report.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cjson/cJSON.h>

#include "socket.h"
#include "timeutil.h"

void report_format_endpoint(uint8_t family, const uint8_t addr[16], uint16_t port, char *out,
                            size_t outlen)
{
    char a[INET6_ADDRSTRLEN];
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (family == AF_INET6 && memcmp(addr, mapped, 12) == 0) {
        inet_ntop(AF_INET, addr + 12, a, sizeof(a));
        snprintf(out, outlen, "%s:%u", a, port);
    } else if (family == AF_INET6) {
        inet_ntop(AF_INET6, addr, a, sizeof(a));
        snprintf(out, outlen, "[%s]:%u", a, port);
    } else {
        inet_ntop(AF_INET, addr, a, sizeof(a));
        snprintf(out, outlen, "%s:%u", a, port);
    }
}

const char *report_role_name(int role)
{
    return role == WL_ROLE_CLIENT ? "client" : role == WL_ROLE_SERVER ? "server" : "unknown";
}

static void add_str_if(cJSON *o, const char *name, const char *v)
{
    if (v && v[0])
        cJSON_AddStringToObject(o, name, v);
}

static cJSON *flow_json(const struct flow_rec *r)
{
    cJSON *o = cJSON_CreateObject();
    char ep[64];
    if (!o)
        return NULL;
    if (r->source == FLOW_SRC_SOCKET) {
        cJSON_AddStringToObject(o, "source", "socket");
        cJSON_AddStringToObject(o, "proto", r->proto == IPPROTO_TCP ? "tcp" : "udp");
        report_format_endpoint(r->family, r->laddr, r->lport, ep, sizeof(ep));
        cJSON_AddStringToObject(o, "local", ep);
        report_format_endpoint(r->family, r->raddr, r->rport, ep, sizeof(ep));
        cJSON_AddStringToObject(o, "remote", ep);
        cJSON_AddStringToObject(o, "role", report_role_name(r->role));
        cJSON_AddNumberToObject(o, "tx_bytes", (double)r->tx_bytes);
        cJSON_AddNumberToObject(o, "rx_bytes", (double)r->rx_bytes);
        cJSON_AddNumberToObject(o, "tx_calls", (double)r->tx_calls);
        cJSON_AddNumberToObject(o, "rx_calls", (double)r->rx_calls);
    } else {
        cJSON_AddStringToObject(o, "source", "nfs");
        cJSON_AddStringToObject(o, "server", r->server);
        cJSON_AddStringToObject(o, "export", r->export_path);
        cJSON_AddStringToObject(o, "op", r->op);
        cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
        cJSON_AddNumberToObject(o, "ops", (double)r->ops);
    }
    cJSON_AddNumberToObject(o, "pid", r->owner.pid);
    cJSON_AddNumberToObject(o, "ppid", r->owner.ppid);
    cJSON_AddNumberToObject(o, "uid", r->owner.uid);
    cJSON_AddStringToObject(o, "program", r->owner.comm);
    if (r->meta) {
        add_str_if(o, "user", r->meta->user);
        add_str_if(o, "exe", r->meta->exe);
        add_str_if(o, "workflow", r->meta->workflow);
        add_str_if(o, "cgroup", r->meta->cgroup);
        add_str_if(o, "container", r->meta->container);
        add_str_if(o, "pod_uid", r->meta->pod_uid);
        add_str_if(o, "unit", r->meta->unit);
        add_str_if(o, "slurm_job", r->meta->slurm_job);
    }
    return o;
}

char *report_json(const struct report_header *h, const struct flowset *fs, char *err, size_t errlen)
{
    char ts[TM_RFC3339_LEN];
    char *out = NULL;
    cJSON *root = cJSON_CreateObject();
    cJSON *flows = NULL, *sampling = NULL;
    if (!root)
        goto oom;
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "host", h->host);
    cJSON_AddStringToObject(root, "agent_id", h->agent_id);
    cJSON_AddNumberToObject(root, "seq", (double)h->seq);
    cJSON_AddStringToObject(root, "window_start", tm_format_rfc3339(h->window_start_us, ts));
    cJSON_AddNumberToObject(root, "window_seconds", h->window_seconds);
    cJSON_AddNumberToObject(root, "dropped_events", (double)h->dropped_events);
    sampling = cJSON_AddObjectToObject(root, "sampling");
    if (!sampling)
        goto oom;
    cJSON_AddNumberToObject(sampling, "k", (double)h->k);
    cJSON_AddNumberToObject(sampling, "threshold", h->threshold);
    cJSON_AddNumberToObject(sampling, "flows_seen", (double)h->flows_seen);
    flows = cJSON_AddArrayToObject(root, "flows");
    if (!flows)
        goto oom;
    for (size_t i = 0; i < fs->n; i++) {
        cJSON *f = flow_json(&fs->v[i]);
        if (!f)
            goto oom;
        cJSON_AddItemToArray(flows, f);
    }
    out = cJSON_PrintUnformatted(root);
    if (!out)
        goto oom;
    cJSON_Delete(root);
    return out;
oom:
    snprintf(err, errlen, "out of memory formatting the report");
    cJSON_Delete(root);
    return NULL;
}
