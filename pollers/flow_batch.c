/* JSON encoding of a flow-sample batch (see flow_batch.h). */
#include "flow_batch.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "jsonw.h"
#include "timeutil.h"

static void addr_text(uint8_t family, const uint8_t *a, char out[INET6_ADDRSTRLEN])
{
    if (!inet_ntop(family == 4 ? AF_INET : AF_INET6, a, out, INET6_ADDRSTRLEN))
        strcpy(out, "::");
}

char *flow_batch_json(const char *poller, const char *batch_id, int window_seconds,
                      const struct flow_batch_device *devs, size_t n_devs,
                      const struct flow_cell *cells, size_t n_cells,
                      const struct flow_batch_ifc *ifc, size_t n_ifc, const char *const *site_names,
                      size_t n_sites, size_t *len)
{
    struct evbuffer *b = evbuffer_new();
    if (!b)
        return NULL;
    evbuffer_add_printf(b, "{\"version\":1,\"poller\":");
    jw_str(b, poller);
    evbuffer_add_printf(b, ",\"batch\":");
    jw_str(b, batch_id);
    evbuffer_add_printf(b, ",\"window_seconds\":%d,\"devices\":[", window_seconds);
    for (size_t i = 0; i < n_devs; i++) {
        const struct flow_batch_device *d = &devs[i];
        evbuffer_add_printf(b, "%s{\"device\":", i ? "," : "");
        jw_str(b, d->name);
        evbuffer_add_printf(b, ",\"protocol\":");
        jw_str(b, d->protocol);
        evbuffer_add_printf(
            b,
            ",\"datagrams\":%llu,\"malformed\":%llu,\"records\":%llu,"
            "\"unknown_template_sets\":%llu,\"undecodable_samples\":%llu,"
            "\"agg_dropped\":%llu}",
            (unsigned long long)d->st.datagrams, (unsigned long long)d->st.malformed,
            (unsigned long long)d->st.records, (unsigned long long)d->st.sets_unknown_template,
            (unsigned long long)d->st.samples_undecodable, (unsigned long long)d->agg_dropped);
    }
    evbuffer_add_printf(b, "],\"cells\":[");
    for (size_t i = 0; i < n_cells; i++) {
        const struct flow_cell *c = &cells[i];
        char ws[TM_RFC3339_LEN], src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
        tm_format_rfc3339(c->window_start_us, ws);
        addr_text(c->family, c->src, src);
        addr_text(c->family, c->dst, dst);
        evbuffer_add_printf(b, "%s{\"window_start\":\"%s\",\"device\":", i ? "," : "", ws);
        jw_str(b, c->device < n_devs ? devs[c->device].name : "");
        evbuffer_add_printf(
            b,
            ",\"src_addr\":\"%s\",\"dst_addr\":\"%s\",\"proto\":%u,"
            "\"dst_port\":%u,\"samples\":%llu,\"sampled_bytes\":%llu,"
            "\"estimated_bytes\":%llu,\"variance\":%.17g,\"rate_min\":%u,"
            "\"rate_max\":%u",
            src, dst, c->proto, c->dport, (unsigned long long)c->samples,
            (unsigned long long)c->sampled_bytes, (unsigned long long)c->estimated_bytes,
            isfinite(c->variance) ? c->variance : DBL_MAX, c->rate_min, c->rate_max);
        if (c->src_site >= 0 && c->dst_site >= 0 && (size_t)c->src_site < n_sites &&
            (size_t)c->dst_site < n_sites) {
            evbuffer_add_printf(b, ",\"src_site\":");
            jw_str(b, site_names[c->src_site]);
            evbuffer_add_printf(b, ",\"dst_site\":");
            jw_str(b, site_names[c->dst_site]);
        }
        evbuffer_add_printf(b, "}");
    }
    evbuffer_add_printf(b, "]");
    for (size_t i = 0; i < n_ifc; i++) {
        const struct flow_batch_ifc *k = &ifc[i];
        char at[TM_RFC3339_LEN];
        evbuffer_add_printf(b, "%s{\"device\":", i ? "," : ",\"if_counters\":[");
        jw_str(b, k->device < n_devs ? devs[k->device].name : "");
        evbuffer_add_printf(b,
                            ",\"if_index\":%u,\"at\":\"%s\",\"in_octets\":%llu,\"out_octets\":%llu,"
                            "\"in_pkts\":%u,\"out_pkts\":%u}%s",
                            k->c.if_index, tm_format_rfc3339(k->at_us, at),
                            (unsigned long long)k->c.in_octets, (unsigned long long)k->c.out_octets,
                            k->c.in_pkts, k->c.out_pkts, i + 1 == n_ifc ? "]" : "");
    }
    evbuffer_add_printf(b, "}");
    char *out = jw_take(b, len);
    evbuffer_free(b);
    return out;
}
