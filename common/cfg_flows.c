/* A device's "flows" section (see config.h struct cfg_flows): the UDP address `wanledger poll`
 * receives the device's flow export on and its protocol. */
#include <stdlib.h>
#include <string.h>

#include "cfg_internal.h"

static const char *const PROTOCOLS[] = {"ipfix", "netflow9", "sflow"};

const char *cfg_flow_protocol_name(enum cfg_flow_protocol p)
{
    return (unsigned)p < 3 ? PROTOCOLS[p] : "?";
}

void cfg_parse_device_flows(struct cfg_pctx *c, const cJSON *o, const char *p, struct cfg_flows *fl)
{
    static const char *const keys[] = {"listen", "protocol", NULL};
    char pp[256];
    cfg_check_keys(c, o, p, keys);
    fl->listen = cfg_get_str(c, o, "listen", p, 1, NULL);
    if (fl->listen && !cfg_valid_hostport(fl->listen))
        cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "listen"), "expected HOST:PORT, got \"%s\"",
                fl->listen);
    char *proto = cfg_get_str(c, o, "protocol", p, 1, NULL);
    if (proto) {
        int found = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(proto, PROTOCOLS[i]) == 0)
                found = i;
        if (found < 0)
            cfg_err(c, cfg_jp_key(pp, sizeof(pp), p, "protocol"),
                    "expected \"ipfix\", \"netflow9\" or \"sflow\", got \"%s\"", proto);
        else
            fl->protocol = (enum cfg_flow_protocol)found;
    }
    free(proto);
}
