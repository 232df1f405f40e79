/* $.delivery: how our clients (poller, `ship`; the agent has the same keys in its own settings)
 * send to reconciler_url: body compression and TLS (common/deliver.h, common/httpc.h).
 *   "delivery": {"compress": "zstd" | "gzip" | "none",     default zstd
 *                "ca_file": "ca.pem",                       CA an https:// reconciler chains to
 *                "client_cert": "c.pem", "client_key": "k.pem",   mutual TLS
 *                "allow_plain_http": false}                 http:// to a non-loopback host */
#include "cfg_internal.h"

#include <stdlib.h>
#include <string.h>

void cfg_parse_delivery(struct cfg_pctx *c, const cJSON *obj)
{
    struct cfg_delivery *d = &c->cfg->delivery;
    d->compress = WL_COMPRESS_ZSTD;
    if (!obj)
        return;
    static const char *const k[] = {"compress",   "ca_file",          "client_cert",
                                    "client_key", "allow_plain_http", NULL};
    cfg_check_keys(c, obj, "$.delivery", k);
    char *comp = cfg_get_str(c, obj, "compress", "$.delivery", 0, NULL);
    if (comp && wl_compress_parse(comp, &d->compress) != 0)
        cfg_err(c, "$.delivery.compress", "expected \"zstd\", \"gzip\" or \"none\", got \"%s\"",
                comp);
    free(comp);
    const char *keys[] = {"ca_file", "client_cert", "client_key"};
    char **dst[] = {&d->ca_file, &d->client_cert, &d->client_key};
    for (int i = 0; i < 3; i++) {
        char *p = cfg_get_str(c, obj, keys[i], "$.delivery", 0, NULL);
        *dst[i] = cfg_resolve_path(c, p);
        free(p);
    }
    if (d->client_key && !d->client_cert)
        cfg_err(c, "$.delivery.client_key", "given without client_cert");
    d->allow_plain_http = cfg_get_bool(c, obj, "allow_plain_http", "$.delivery", 0);
}

void cfg_free_delivery(struct cfg_delivery *d)
{
    free(d->ca_file);
    free(d->client_cert);
    free(d->client_key);
    memset(d, 0, sizeof(*d));
}
