/* libFuzzer target: the configuration parser (common/cfg_*.c) and its JSON round trip: a
 * configuration that loads must load again from cfg_to_json. Secret files are named relative to
 * /nonexistent, so none is read. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    struct cfg_errors errs;
    struct cfg *cfg = cfg_parse("/nonexistent/config.json", text, &errs);
    if (cfg) {
        char *json = cfg_to_json(cfg);
        struct cfg_errors e2;
        struct cfg *again = json ? cfg_parse("/nonexistent/config.json", json, &e2) : NULL;
        if (!again)
            abort();
        cfg_free(again);
        cfg_errors_free(&e2);
        free(json);
        cfg_free(cfg);
    }
    cfg_errors_free(&errs);
    free(text);
    return 0;
}
