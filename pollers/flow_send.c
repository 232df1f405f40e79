/* Flow-sample batches through the one delivery path (common/deliver.h; see flow_send.h). */
#include "flow_send.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deliver.h"

struct flow_send {
    struct deliver *d;
};

struct flow_send *flow_send_new(const char *spool_dir, uint64_t max_bytes, const char *url,
                                const char *token, const struct cfg_delivery *dv, char *err,
                                size_t errlen)
{
    struct flow_send *fs = calloc(1, sizeof(*fs));
    if (!fs) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    struct deliver_opts o = {
        .target = {.name = "flows",
                   .url = url,
                   .token = token,
                   /* compressed like every other batch ($.delivery.compress, zstd by
                    * default): /v1/flowsamples decodes Content-Encoding like every POST */
                   .compress = dv ? dv->compress : WL_COMPRESS_ZSTD},
        .spool_dir = spool_dir,
        .spool_max_bytes = max_bytes,
        .report_drops = true,
    };
    if (dv) /* TLS from $.delivery */
        o.target.tls = (struct httpc_tls){.ca_file = dv->ca_file,
                                          .cert_file = dv->client_cert,
                                          .key_file = dv->client_key,
                                          .allow_plain_remote = dv->allow_plain_http};
    fs->d = deliver_new(&o, err, errlen);
    if (!fs->d) {
        free(fs);
        return NULL;
    }
    return fs;
}

int flow_send_push(struct flow_send *fs, const char *body, size_t len, char *err, size_t errlen)
{
    if (deliver_submit(fs->d, body, len) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void flow_send_stats(struct flow_send *fs, struct flow_send_stats *out)
{
    struct deliver_stats st;
    deliver_get_stats(fs->d, &st);
    memset(out, 0, sizeof(*out));
    out->posted = st.c.sends[DELIVER_OK];
    out->refused = st.rejected;
    out->spool_dropped = st.dropped_entries;
    out->spooled = (size_t)(st.spool_entries + st.mem_entries);
}

void flow_send_metrics(struct flow_send *fs, FILE *f)
{
    deliver_metrics_render(fs->d, f);
}

size_t flow_send_close(struct flow_send *fs, int drain_ms)
{
    if (!fs)
        return 0;
    size_t left = deliver_close(fs->d, drain_ms);
    free(fs);
    return left;
}
