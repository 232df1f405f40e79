/* Serialises one window's flows as the /v1/attributions JSON body. */
#include "report.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

/* Length of the well-formed UTF-8 sequence at s (1-4), or 0 when s does not start one
 * (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        return (s[1] & 0xc0) == 0x80 ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 && (s[3] & 0xc0) == 0x80 ? 4 : 0;
    }
    return 0;
}

char *report_clean_text(const char *s, char *out, size_t outlen)
{
    static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */
    const unsigned char *p = (const unsigned char *)s;
    size_t n = 0;
    if (outlen == 0)
        return out;
    while (*p) {
        size_t len = utf8_seq_len(p);
        /* C0 controls, DEL, and C1 controls (U+0080-U+009F = C2 80 - C2 9F) */
        bool control =
            (len == 1 && (*p < 0x20 || *p == 0x7f)) || (len == 2 && p[0] == 0xc2 && p[1] < 0xa0);
        const char *emit = len && !control ? (const char *)p : replacement;
        size_t emit_len = len && !control ? len : 3;
        if (n + emit_len >= outlen)
            break;
        memcpy(out + n, emit, emit_len);
        n += emit_len;
        p += len ? len : 1;
    }
    out[n] = '\0';
    return out;
}

/* Adds s as a string member, cleaned (report_clean_text). False when out of memory. */
static bool add_clean_str(cJSON *o, const char *name, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p >= 0x20 && *p < 0x7f) /* printable ASCII, the usual case: nothing to clean */
        p++;
    if (!*p)
        return cJSON_AddStringToObject(o, name, s) != NULL;
    size_t cap = REPORT_CLEAN_LEN(strlen(s));
    char *buf = malloc(cap);
    if (!buf)
        return false;
    bool ok = cJSON_AddStringToObject(o, name, report_clean_text(s, buf, cap)) != NULL;
    free(buf);
    return ok;
}

static void add_str_if(cJSON *o, const char *name, const char *v)
{
    if (v && v[0])
        add_clean_str(o, name, v);
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
        add_clean_str(o, "server", r->server);
        if (r->family == AF_INET || r->family == AF_INET6) { /* client address (nfslocal.h) */
            char a[INET6_ADDRSTRLEN];
            inet_ntop(r->family, r->laddr, a, sizeof(a));
            cJSON_AddStringToObject(o, "local", a);
        }
        add_clean_str(o, "export", r->export_path);
        add_clean_str(o, "op", r->op);
        cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
        cJSON_AddNumberToObject(o, "ops", (double)r->ops);
    }
    cJSON_AddNumberToObject(o, "pid", r->owner.pid);
    cJSON_AddNumberToObject(o, "ppid", r->owner.ppid);
    cJSON_AddNumberToObject(o, "uid", r->owner.uid);
    add_clean_str(o, "program", r->owner.comm);
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
    add_clean_str(root, "host", h->host);
    add_clean_str(root, "agent_id", h->agent_id);
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
    if (h->lost_to_us > 0) {
        cJSON *lost = cJSON_AddObjectToObject(root, "lost");
        if (!lost)
            goto oom;
        cJSON_AddStringToObject(lost, "from", tm_format_rfc3339(h->lost_from_us, ts));
        cJSON_AddStringToObject(lost, "to", tm_format_rfc3339(h->lost_to_us, ts));
        cJSON_AddStringToObject(lost, "reason", h->lost_reason ? h->lost_reason : "unknown");
    }
    cJSON *spool = cJSON_AddObjectToObject(root, "spool");
    if (!spool)
        goto oom;
    cJSON_AddNumberToObject(spool, "dropped_reports", (double)h->spool_dropped_reports);
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
