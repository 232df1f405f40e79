/* Shared by the libFuzzer targets: the configuration they run against (three sites, one link,
 * one gNMI device), parsed once. */
#ifndef WL_FUZZ_COMMON_H
#define WL_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>

#include "config.h"

static const char FUZZ_CONFIG[] =
    "{\"sites\": [{\"name\": \"nyc\", \"prefixes\": [\"10.1.0.0/16\"]},"
    " {\"name\": \"chi\", \"prefixes\": [\"10.2.0.0/16\", \"fd00:2::/32\"]},"
    " {\"name\": \"osl\", \"prefixes\": [\"10.3.0.0/16\"]}],"
    " \"devices\": [{\"name\": \"leaf1\", \"site\": \"nyc\", \"gnmi\": {}}],"
    " \"links\": [{\"device\": \"leaf1\", \"interface\": \"Ethernet1\", \"site\": \"nyc\","
    " \"peer_site\": \"chi\", \"circuit\": \"nyc-chi-1\", \"capacity_bps\": 10000000000}],"
    " \"dedup\": {\"services\": [{\"name\": \"dupedog\", \"ports\": [7100]}]}}";

static const struct cfg *fuzz_cfg(void)
{
    static struct cfg *cfg;
    if (!cfg) {
        struct cfg_errors errs;
        cfg = cfg_parse("/fuzz/config.json", FUZZ_CONFIG, &errs);
        if (!cfg) {
            cfg_errors_print(NULL, "fuzz config", &errs, stderr);
            abort();
        }
    }
    return cfg;
}

#endif
